"""Two findings of issue 36's adversarial pass: a pair of regions linked twice (which round
trip would win?) and a region whose only GPU type has `max_gpus: 0` (the diagnosis said it
"offers h100-sxm" and that no configuration runs on it)."""

from tests.paths import INSTANCES

REGION_LOSS_3 = (INSTANCES / "region-loss-3.yaml").read_text()


def test_a_pair_of_regions_linked_twice_is_bad_input(run_cli, tmp_path):
    path = tmp_path / "dup.yaml"
    path.write_text(
        REGION_LOSS_3.replace(
            "  - [us-east, us-west, 62]", "  - [us-east, us-west, 62]\n  - [us-west, us-east, 30]"
        )
    )
    result = run_cli("validate", path)
    assert result.exit_code == 2
    assert "links[1]: links[0] already joins us-west and us-east" in result.stderr


def test_a_region_with_no_gpu_to_buy_is_named_with_its_field(run_cli, tmp_path):
    path = tmp_path / "zero.yaml"
    text = REGION_LOSS_3
    assert "max_gpus: 256" in text  # the supply rewritten below
    path.write_text(text.replace("max_gpus: 256", "max_gpus: 0"))
    result = run_cli("solve", path)
    assert result.exit_code == 3
    assert "us-east has no GPU to place a replica on: h100-sxm max_gpus 0 and none owned" in (
        result.stdout + result.stderr
    )
    assert (
        "raise regions[us-east].supply.h100-sxm.max_gpus above 0" in result.stdout + result.stderr
    )
    assert "offers h100-sxm, and no configuration" not in result.stdout + result.stderr


def test_a_set_value_is_held_to_the_file_size_limit(run_cli, monkeypatch):
    """`--set` values get the size limit of a file (issue 36: every reader bounded); the
    limit is lowered here so the test needs no 8 MiB argument."""
    from models.schema import reading_limits

    monkeypatch.setattr(reading_limits, "MAX_DOCUMENT_BYTES", 1_000)
    result = run_cli("validate", INSTANCES / "region-loss-3.yaml", "--set", "name=" + "x" * 2_000)
    assert result.exit_code == 2
    assert "files are limited to 1,000 bytes" in result.stderr
