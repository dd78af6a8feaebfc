"""Error-band benchmark: the measured error bands of the performance model per engine
profile, model family and regime (`calibration/bands.py`), recomputed from the held-out
rows and printed; the shipped `models/physics/catalog/error_bands.yaml` must hold the
same numbers (re-run `python -m calibration.bands --write` after a calibration)."""

import pytest

from calibration.bands import bands, signed_errors, table_lines
from models.physics.error_bands import bands_of


def test_error_bands_are_current() -> None:
    errors, left = signed_errors()
    table = bands(errors)
    print("\n\nmodel error on held-out rows (predicted / measured - 1)\n")
    print("\n".join(table_lines(table)))
    print(f"held-out rows in no band: {sum(left.values())} {dict(left)}")
    for engine, families in table.items():
        shipped = bands_of(engine)
        for family, regimes in families.items():
            for regime, stats in regimes.items():
                band = shipped.get((family, regime))
                assert band is not None, f"{engine} {family} {regime} not in error_bands.yaml"
                assert (band.p10, band.median, band.p90) == pytest.approx(
                    (stats.p10, stats.median, stats.p90), abs=1e-4
                ), f"{engine} {family} {regime}: error_bands.yaml is stale"
                assert band.rows == stats.rows
    for engine in table:
        for family, regime in bands_of(engine):
            assert regime in table[engine].get(family, {}), (
                f"error_bands.yaml holds {engine} {family} {regime}, which no held-out row "
                "measures now"
            )
