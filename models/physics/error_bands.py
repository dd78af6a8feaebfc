"""Measured error bands of the performance model, where decisions are made.

`models/physics/catalog/error_bands.yaml` (written by `python -m calibration.bands --write`
from the calibration's held-out rows, never by hand) holds, per engine profile, model
family and regime, the signed errors of the model on the rows it was not fitted on:

    e_i = predicted_i / measured_i - 1

summarised as the 10th percentile, the median and the 90th percentile of e (numpy's
linear interpolation between order statistics) with the row count. For a throughput
figure e > 0 is optimistic (the model promises more than the engine gave); for a latency
figure e < 0 is optimistic (the model promises less time).

Families (`family_of`): `dense`; `moe-tp` (experts split by tensor parallelism, ep = dp
= 1); `moe-ep` (expert parallelism inside tensor-parallel attention, ep > 1, dp = 1);
`moe-dep` (attention data parallelism with expert parallelism, dp > 1). Regimes:
`max_throughput` (offline, every request queued); `latency_under_load` (mean time per
output token, or inter-token latency, at a request rate or a concurrency);
`ttft_under_load` (mean time to first token at a concurrency); `borrowed` (max throughput
on a GPU whose efficiency factors under the profile were fitted on other rows:
`borrowed_for`, measured where the calibration has held-out rows of such GPUs).

A lookup with no measured band of its own (`band`) is never given a made-up number: it
gets the widest measured band of the profile in that quantity (largest p90 - p10) among
the bands of its own family where the family has one, else among all, and a
flag that says so (`Band.flag`: `borrowed` or `unmeasured`). A profile with no measured
band at all (a profile file, an engine without held-out rows) gets None.

`capacity_derate` turns a band into the factor `policy.capacity_margin: auto` multiplies
a replica's capacity by: 1 / (1 + p90) when the 90th percentile is optimistic (> 0),
else 1 (a pessimistic model is not made more generous).
"""

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from models.physics.efficiency import efficiency_source, profile_of
from models.physics.hardware import GpuSpec
from models.physics.llm import LlmSpec
from models.physics.yaml_files import read_yaml

_FILE = Path(__file__).parent / "catalog" / "error_bands.yaml"
FAMILIES = ("dense", "moe-tp", "moe-ep", "moe-dep")
MEASURED_REGIMES = ("max_throughput", "latency_under_load", "ttft_under_load", "borrowed")
REGIMES = (*MEASURED_REGIMES, "unmeasured")
QUANTITY = {
    "max_throughput": "throughput",
    "latency_under_load": "latency",
    "ttft_under_load": "latency",
    "borrowed": "throughput",
    "unmeasured": "throughput",
}
"""The figure a regime's errors are of: throughput (> 0 optimistic) or latency (< 0
optimistic)."""
REGIME_WORDS = {
    "max_throughput": "max throughput",
    "latency_under_load": "TPOT under load",
    "ttft_under_load": "TTFT under load",
    "borrowed": "borrowed GPU generation",
    "unmeasured": "unmeasured",
}


@dataclass(frozen=True)
class Band:
    """Signed errors predicted / measured - 1 of a set of held-out rows, as fractions."""

    engine: str
    family: str
    regime: str
    p10: float
    median: float
    p90: float
    rows: int
    flag: str = ""
    """'' for a band measured on its own rows; `borrowed` or `unmeasured` when the
    lookup had none and got the profile's widest (`measured_as` says which)."""
    measured_as: str = ""
    """With a flag: the family and regime whose rows measured the band shown."""

    @property
    def quantity(self) -> str:
        """`throughput` or `latency`."""
        return QUANTITY[self.regime]

    @property
    def optimistic_error(self) -> float:
        """The error on the optimistic side, >= 0: p90 for throughput, -p10 for latency."""
        worst = self.p90 if self.quantity == "throughput" else -self.p10
        return max(worst, 0.0)

    @property
    def spread(self) -> float:
        """p90 - p10."""
        return self.p90 - self.p10

    @property
    def uncertain(self) -> bool:
        """Whether the band is not the replica's own measured regime: a borrowed GPU
        generation (measured or not) or a flagged stand-in."""
        return bool(self.flag) or self.regime == "borrowed"

    def describe(self) -> str:
        """`-8% / +12% (dense, max throughput, 33 rows)`; a flagged band says whose it
        is: `(UNMEASURED: no held-out rows of moe-dep max throughput; the widest of
        trtllm-0.17: moe-tp max throughput, 45 rows)`; a latency band adds that a
        negative error is the optimistic side."""
        span = f"{self.p10:+.0%} / {self.p90:+.0%}"
        words = REGIME_WORDS[self.regime]
        sign = "; negative = optimistic" if self.quantity == "latency" else ""
        if not self.flag:
            return f"{span} ({self.family}, {words}, {self.rows} rows{sign})"
        what = "on a borrowed GPU" if self.flag == "borrowed" else words
        return (
            f"{span} ({self.flag.upper()}: no held-out rows of {self.family} {what}; the "
            f"widest of {self.engine}: {self.measured_as}, {self.rows} rows{sign})"
        )


@cache
def _table() -> dict[str, Any]:
    """The parsed `error_bands.yaml` (empty when the file is absent)."""
    if not _FILE.exists():
        return {}
    return read_yaml(_FILE) or {}


def bands_of(engine: str) -> dict[tuple[str, str], Band]:
    """The measured bands of a profile by (family, regime); empty for an unknown one."""
    entries = _table().get("engines", {}).get(engine, {}) or {}
    found = {}
    for family, regimes in entries.items():
        for regime, row in (regimes or {}).items():
            found[(family, regime)] = Band(
                engine, family, regime, row["p10"], row["median"], row["p90"], row["rows"]
            )
    return found


def family_of(llm: LlmSpec, ep: int = 1, dp: int = 1) -> str:
    """`dense`, `moe-tp` (ep = dp = 1), `moe-ep` (ep > 1, dp = 1) or `moe-dep` (dp > 1)."""
    if not llm.is_moe:
        return "dense"
    if dp > 1:
        return "moe-dep"
    return "moe-ep" if ep > 1 else "moe-tp"


def band(engine: str, family: str, regime: str) -> Band | None:
    """The measured band of (engine, family, regime); without one, the widest measured
    band of the profile in the regime's quantity, flagged `borrowed` (regime borrowed)
    or `unmeasured`; None when the profile has no measured band of that quantity."""
    measured = bands_of(engine)
    if (family, regime) in measured:
        return measured[(family, regime)]
    return _widest(engine, family, regime, "borrowed" if regime == "borrowed" else "unmeasured")


def _widest(engine: str, family: str, regime: str, flag: str) -> Band | None:
    """The profile's widest measured band of the regime's quantity (largest p90 - p10),
    of the family's own bands where it has some (a dense model on a borrowed GPU reads
    the dense rows' spread, not an MoE layout's), shown as (family, regime) with `flag`;
    None when the profile has none."""
    quantity = QUANTITY[regime]
    same = [b for b in bands_of(engine).values() if b.quantity == quantity]
    own = [b for b in same if b.family == family]
    same = own or same
    if not same:
        return None
    widest = max(same, key=lambda b: (b.spread, b.optimistic_error, b.rows))
    return Band(
        engine,
        family,
        regime,
        widest.p10,
        widest.median,
        widest.p90,
        widest.rows,
        flag,
        f"{widest.family} {REGIME_WORDS[widest.regime]}",
    )


def borrowed_for(gpu: str | GpuSpec, engine: str | None = None) -> bool:
    """Whether a GPU's efficiency factors under a profile were fitted on other rows: the
    GPU borrows another's (`efficiency_source`), or the profile holds no factors of the
    GPU's generation, which then come from a fallback profile (a vLLM profile with MI300X
    rows only, on an H100: TensorRT-LLM's Hopper fit)."""
    source = efficiency_source(gpu, engine)
    if source.borrowed:
        return True
    names = (source.generation or "", source.like or source.gpu)
    own = profile_of(source.engine).get("by_key", {}) or {}
    return not any(key.split("/")[0] in names for key in own)


def band_for(
    engine: str | None,
    gpu: str | GpuSpec,
    llm: LlmSpec,
    ep: int = 1,
    dp: int = 1,
    regime: str = "max_throughput",
) -> Band | None:
    """The band of a replica: its family under `regime`; on a borrowed GPU generation
    (`borrowed_for`), the `borrowed` regime for throughput and the profile's widest band
    of the regime's quantity, flagged, for latency (no latency row is borrowed)."""
    name = efficiency_source(gpu, engine).engine
    family = family_of(llm, ep, dp)
    if not borrowed_for(gpu, engine):
        return band(name, family, regime)
    if QUANTITY[regime] == "throughput":
        return band(name, family, "borrowed")
    return _widest(name, family, regime, "borrowed")


def capacity_derate(found: Band | None) -> float:
    """The factor `policy.capacity_margin: auto` multiplies capacity by:
    1 / (1 + e_opt), e_opt the band's optimistic error (>= 0); 1 without a band."""
    if found is None:
        return 1.0
    return 1.0 / (1.0 + found.optimistic_error)


def margin_factor(
    margin: str, engine: str | None, gpu: str | GpuSpec, llm: LlmSpec, ep: int = 1, dp: int = 1
) -> float:
    """What `policy.capacity_margin` multiplies a replica's capacity by: with `auto`,
    `capacity_derate` of the replica's band (`band_for`, max throughput or borrowed);
    1 otherwise. Planner, verifier and simulator each ask it from the instance."""
    if margin != "auto":
        return 1.0
    return capacity_derate(band_for(engine, gpu, llm, ep, dp))


def band_records(
    engine: str | None,
    gpu: str | GpuSpec,
    llm: LlmSpec,
    ep: int = 1,
    dp: int = 1,
    under_load: bool = False,
) -> list[dict[str, Any]]:
    """What `band_line` prints, as JSON records: one per regime (max throughput, or TPOT
    and TTFT under load), each with its band's figures and text, or `band: null` and the
    text where the profile has none."""
    regimes = ("latency_under_load", "ttft_under_load") if under_load else ("max_throughput",)
    records = []
    for regime in regimes:
        found = band_for(engine, gpu, llm, ep, dp, regime)
        record: dict[str, Any] = {"regime": regime}
        if found is None:
            name = efficiency_source(gpu, engine).engine
            record.update(band=None, text=f"none measured for {name} ({REGIME_WORDS[regime]})")
        else:
            record.update(
                band={
                    "family": found.family,
                    "p10": found.p10,
                    "median": found.median,
                    "p90": found.p90,
                    "rows": found.rows,
                    "flag": found.flag,
                    "measured_as": found.measured_as,
                },
                text=found.describe(),
            )
        records.append(record)
    return records


def band_line(
    engine: str | None,
    gpu: str | GpuSpec,
    llm: LlmSpec,
    ep: int = 1,
    dp: int = 1,
    under_load: bool = False,
) -> str:
    """The line a report prints under a replica's figures: `model error on held-out rows:
    -8% / +12% (dense, max throughput, 33 rows)`; `under_load`: one line for TPOT and one
    for TTFT."""
    records = band_records(engine, gpu, llm, ep, dp, under_load)
    return "\n".join(f"model error on held-out rows: {r['text']}" for r in records)
