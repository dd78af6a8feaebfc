"""The order the default suite runs its modules in: the slow ones first.

pytest-xdist (`make test`: `pytest -n 2`, pyproject's `--dist worksteal`) hands each
worker an equal run of the collection, in order, and a worker that runs out takes half
of what the other has left, from its end. In file order the slowest module
(tests/test_readme.py, 13 s at idle) came last, and one worker ran it alone while the
other had nothing left; and the two workers reached the two modules that share the
5%-gap solve of diurnal-chat-batch (tests.solved_once) at the same moment, so that one
waited out the other's solve (5.8 s). Here the modules that solve a plan the session
shares (tests/conftest.py's `default_solved`, tests.solved_once) come first, in one
worker's first chunk, where the solve is made once before any other module asks for
it; then the slow modules, slowest first; the ~3,000 tests of a few milliseconds come
last and even out the end. Within a module the order is the file's (its module
fixtures are built once).

The costs (CPU seconds a module took in the default suite at 13617158, its child
processes' included, one run at a load of about 2; a shared solve counts in the module
that makes it) only order the list: a module missing from it runs in file order after it."""

FIRST = (
    # the session's shared solves: chat-3region (conftest.default_solved), then
    # diurnal-chat-batch at a 5% gap and growth-horizon over 2 months (tests.solved_once)
    "tests/cli/test_deploy_cli.py",  # 15.0 s, default_solved
    "tests/solver/verify/test_verify_hour_scenarios.py",  # 14.1
    "tests/solver/verify/test_verify_hours_hostile.py",  # 4.0
    "tests/solver/time/test_hourly_status.py",  # 3.9 before it read the 5%-gap plan
    "tests/test_readme.py",  # 14.9, default_solved
    "tests/solver/test_solve.py",  # 6.3, default_plan
    "tests/cli/test_solve_cli.py",  # default_solved
)
"""Modules whose shared solves the rest read: one worker takes them first."""

SLOW = (
    # the golden instances (was `make test`'s `batch --check` step): 58.8 s in all at
    # 13617158, procurement-3region ~20 s, growth-horizon ~17, zipf ~8, diurnal ~7
    "tests/test_goldens.py",
    "tests/solver/backends/test_backends.py",  # 9.9
    "tests/solver/analysis/test_levers.py",  # 9.9
    "tests/models/serving/test_pool_slo.py",  # 9.8
    "tests/models/profiles/test_profile_fit.py",  # 8.9
    "tests/solver/time/test_month_fallback.py",  # 7.2
    "tests/models/colocation/test_colocation.py",  # 6.7
    "tests/solver/decompose/test_early_parts.py",  # 6.6
    "tests/test_imports.py",  # 6.6
    "tests/solver/decompose/test_scenario_cuts.py",  # 5.8
    "tests/solver/time/test_hourly_explain.py",  # 5.6
    "tests/cli/test_report_html.py",  # 5.5
    "tests/solver/program/test_row_names.py",  # 5.5
    "tests/cli/test_hostile_round12.py",  # 5.4
    "tests/solver/decompose/test_tight_limits.py",  # 5.3
    "tests/solver/decompose/test_parallel.py",  # 5.0
    "tests/test_probe_reductions.py",  # 4.7
    "tests/solver/decompose/test_region_join.py",  # 4.7
    "tests/cli/test_hostile_plans.py",  # 4.6
    "tests/cli/test_replay_size.py",  # 4.4
    "tests/models/serving/test_capacity.py",  # 4.4
    "tests/cli/test_hostile_round16.py",  # 4.2
    "tests/solver/time/test_agree_spot_survive.py",  # 4.2
    "tests/cli/test_calibrate_cli.py",  # 3.9
    "tests/cli/test_batch.py",  # 3.7
    "tests/cli/test_hostile_report.py",  # 3.6
    "tests/solver/time/test_time_levers.py",  # 3.6
    "tests/cli/test_perf_cli.py",  # 3.6
    "tests/solver/test_monotone_properties.py",  # 3.5
    "tests/solver/decompose/test_warm_start.py",  # 3.4
    "tests/solver/colocation/test_colocation_program.py",  # 3.3
    "tests/cli/test_hostile_round17.py",  # 3.1
    "tests/cli/test_hostile_instances.py",  # 3.1
    "tests/models/profiles/test_engine_calibration.py",  # 3.1
    "tests/cli/test_hostile_workers.py",  # 3.0
    "tests/cli/test_hostile_commands.py",  # 3.0
    "tests/cli/test_sweep.py",  # 3.0
    "tests/solver/simulate/test_pool_dispatch.py",  # 3.0
    "tests/solver/time/test_stopped_months.py",  # 2.9
    "tests/solver/simulate/test_simulate.py",  # 2.8
    "tests/cli/test_time_wording.py",  # 2.7
    "tests/solver/simulate/test_agree_simulate_soak.py",  # 2.7
    "tests/solver/decompose/test_part_join.py",  # 2.7
    "tests/solver/candidates/test_size_check.py",  # 2.6
    "tests/models/serving/test_kv_metamorphic.py",  # 2.5
)
"""Modules of 2.4 s and more, slowest first (not counting the modules of many fast tests:
they even out the end as well as any)."""

ORDER = FIRST + SLOW


def slow_first(items: list) -> None:
    """Sort the collected `items` in place: the modules of ORDER in its order, then the
    rest in file order (a stable sort keeps each module's tests in the file's order)."""
    rank = {path: index for index, path in enumerate(ORDER)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))
