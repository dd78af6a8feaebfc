"""What the repository ships is what its own commands write today. Run by `make bench`
only (not `make test`): the fit takes minutes of CPU, the README's slow figures solve
the hourly and month instances.

- `models/physics/catalog/efficiency.yaml` holds what `python -m calibration.calibrate
  --write` fits and `error_bands.yaml` what `python -m calibration.bands --write` writes
  (`make calibrate`), every number within `REL` of the fit's (the fit starts from the
  shipped constants, so a second fit moves them a little: the step overhead 1.889 ->
  1.892 ms), but for `LOOSE` (a per-sequence overhead of microseconds the rows hardly
  constrain). A physics change that moves the fit leaves the shipped constants behind
  until they are refitted; both were found so at stop 21 (trtllm-0.17's decode fraction
  0.5633 against a fit of 0.5438, 3.5%; its Hopper rows held out 7.8% with the shipped
  constants, 6.5% refitted), since nothing ran the fit.
- Every README figure under a slow marker (`tests.readme`'s `slow=True` checks: the
  hourly, month and simulated ones) reads what its command prints; `make test` checks
  the fast ones (tests/test_readme.py). The slow ones had drifted unchecked
  (simulate-default read '8 of 8 pools' for a plan of 7).

Fix either by running the command (`make calibrate`, then refreeze the goldens with
`fleetplan batch instances --update` and look at what moved; `make readme`).
"""

import math

import yaml

from calibration import bands
from calibration.calibrate import EFFICIENCY_YAML, fit_all, render_engine_profiles, render_yaml
from calibration.engines import fit_engine_profiles, load_engine_data
from calibration.rows import load_rows
from tests.readme.checks import CHECKS
from tests.readme.markers import find_markers
from tests.readme.runner import Runner
from tests.readme.verdicts import README, problems

TEXT = README.read_text()
MARKERS = find_markers(TEXT)


REL = 0.02
"""Relative difference allowed between a shipped number and the fit's."""
LOOSE = {"sequence_overhead_s"}
"""Fitted numbers not compared (see the module text)."""


def _differences(shipped, fitted, path: str = "") -> list[str]:
    """Where two YAML trees differ: keys, values, numbers beyond `REL` (comments are not
    read: the fit's errors written beside each set move with every refit)."""
    if isinstance(shipped, dict) and isinstance(fitted, dict):
        found = [f"{path}.{key}: only in one" for key in set(shipped) ^ set(fitted)]
        for key in shipped.keys() & fitted.keys():
            if key not in LOOSE:
                found += _differences(shipped[key], fitted[key], f"{path}.{key}")
        return found
    if isinstance(shipped, list) and isinstance(fitted, list) and len(shipped) == len(fitted):
        return [
            d
            for i, pair in enumerate(zip(shipped, fitted, strict=True))
            for d in _differences(*pair, f"{path}[{i}]")
        ]
    numbers = (int, float)
    if (
        isinstance(shipped, numbers)
        and isinstance(fitted, numbers)
        and not isinstance(shipped, bool)
    ):
        if math.isclose(shipped, fitted, rel_tol=REL, abs_tol=1e-12):
            return []
    elif shipped == fitted:
        return []
    return [f"{path}: shipped {shipped!r}, fitted {fitted!r}"]


def test_efficiency_yaml_is_the_fit():
    data, _ = load_engine_data()
    engine_text = render_engine_profiles(data, fit_engine_profiles(data))
    rows, _ = load_rows()
    profiles, overhead_s = fit_all(rows)
    fitted = render_yaml(profiles, overhead_s, rows) + engine_text
    shipped = yaml.safe_load(EFFICIENCY_YAML.read_text(encoding="utf-8"))
    found = _differences(shipped, yaml.safe_load(fitted))
    assert found == [], "efficiency.yaml is not the fit (make calibrate):\n" + "\n".join(found)


def test_error_bands_yaml_is_the_fit():
    errors, left = bands.signed_errors()
    fitted = bands.render_yaml(bands.bands(errors), left)
    shipped = yaml.safe_load(bands.BANDS_YAML.read_text(encoding="utf-8"))
    found = _differences(shipped, yaml.safe_load(fitted))
    assert found == [], "error_bands.yaml is not the fit (make calibrate):\n" + "\n".join(found)


def test_the_readmes_slow_figures_are_the_tools():
    run = Runner()
    found = [
        problem
        for marker in MARKERS
        if marker.name in CHECKS and CHECKS[marker.name].slow
        for problem in problems(TEXT, marker, run)
    ]
    assert found == [], "README figures out of date; run `make readme`:\n" + "\n".join(found)
