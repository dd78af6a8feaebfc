"""Numeric precisions for weights and the KV cache, and their storage sizes."""

from enum import StrEnum


class Precision(StrEnum):
    """A numeric format for weights or KV cache."""

    BF16 = "bf16"
    FP8 = "fp8"
    FP4 = "fp4"

    @property
    def bytes_per_element(self) -> float:
        """Storage bytes per element: bf16 2, fp8 1, fp4 0.5 (scale factors ignored)."""
        return _BYTES[self]


_BYTES = {Precision.BF16: 2.0, Precision.FP8: 1.0, Precision.FP4: 0.5}
