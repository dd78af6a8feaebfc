"""Hostile input, round eight: plain scalars YAML 1.1 reads as base-60 numbers. A
deadline of `1:30` hours planned 90 hours, `12:00` 720, and `8:32` GPUs were 512, each
with exit 0; they are refused naming the line (or the --set) and saying to quote or
write the number."""

import pytest

from tests.cli.test_hostile_input import run_checked
from tests.paths import ONE_MODEL_ONE_REGION

TEXT = ONE_MODEL_ONE_REGION.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("old", "new", "seen", "value"),
    [
        ("max_gpus: 64", "max_gpus: 1:04", "1:04", 64),  # 1 x 60 + 4
        ("ttft_p99_ms: 800", "ttft_p99_ms: 13:20", "13:20", 800),  # 13 x 60 + 20
        ("price_per_gpu_hour: 2.4", "price_per_gpu_hour: 0:2.4", "0:2.4", 2.4),
    ],
)
def test_a_base_sixty_number_in_a_file_is_refused_naming_the_line(
    run_cli, tmp_path, old, new, seen, value
):
    assert old in TEXT
    path = tmp_path / "inst.yaml"
    path.write_text(TEXT.replace(old, new), encoding="utf-8")
    line = next(n for n, text in enumerate(TEXT.splitlines(), start=1) if old in text)
    needles = (f"{path}:{line}: {seen!r} reads in YAML 1.1 as the base-60 number {value:g}",)
    run_checked(run_cli, "validate", path, needles=needles)


def test_a_base_sixty_number_in_a_set_is_refused_naming_it(run_cli):
    needles = ("--set: workloads[chat].slo.ttft_p99_ms: value '13:20' reads in YAML 1.1",)
    run_checked(
        run_cli, "validate", ONE_MODEL_ONE_REGION, "--set", "workloads[chat].slo.ttft_p99_ms=13:20",
        needles=needles,
    )  # fmt: skip


@pytest.mark.parametrize("override", ['name="1:30"', "name=a:b", "name=1:99"])
def test_text_with_a_colon_is_still_text(run_cli, override):
    # quoted, or not a base-60 number to YAML (1:99: a minute of 99 seconds is no number)
    run_checked(run_cli, "validate", ONE_MODEL_ONE_REGION, "--set", override, code=0)
