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

The costs (CPU seconds a module took in the default suite at b13eeebf, its child
processes' included, two runs at a load of 6 to 8 averaged; test_parallel's after its
kept pool) only order the list: a module missing from it runs in file order after it."""

FIRST = (
    # the session's shared solves: chat-3region (conftest.default_solved), then
    # diurnal-chat-batch at a 5% gap and growth-horizon over 2 months (tests.solved_once)
    "tests/cli/test_deploy_cli.py",  # 13.1 s, default_solved
    "tests/solver/verify/test_verify_hour_scenarios.py",  # 13.0
    "tests/solver/verify/test_verify_hours_hostile.py",  # 5.3
    "tests/solver/time/test_hourly_status.py",  # 3.9 before it read the 5%-gap plan
    "tests/test_readme.py",  # 7.5, default_solved
    "tests/solver/test_solve.py",  # 5.1, default_plan
    "tests/cli/test_solve_cli.py",  # default_solved
)
"""Modules whose shared solves the rest read: one worker takes them first."""

SLOW = (
    # the golden instances (was `make test`'s `batch --check` step): 60 s in all at
    # 455b948b, one process, procurement-3region 19.9 s, growth-horizon 12.0, zipf 8.7
    "tests/test_goldens.py",
    "tests/models/serving/test_pool_slo.py",  # 13.8
    "tests/models/profiles/test_profile_fit.py",  # 10.5
    "tests/solver/analysis/test_levers.py",  # 9.5
    "tests/solver/candidates/test_size_check.py",  # 8.8
    "tests/solver/decompose/test_parallel.py",  # 8.0
    "tests/models/colocation/test_colocation.py",  # 7.9
    "tests/cli/test_hostile_scale.py",  # 7.1
    "tests/test_probe_reductions.py",  # 6.9
    "tests/solver/decompose/test_scenario_cuts.py",  # 6.7
    "tests/solver/time/test_month_fallback.py",  # 6.5
    "tests/models/profiles/test_engine_calibration.py",  # 6.4
    "tests/solver/decompose/test_early_parts.py",  # 5.9
    "tests/solver/time/test_hourly_explain.py",  # 5.8
    "tests/models/serving/test_capacity_search.py",  # 5.7
    "tests/solver/test_monotone_properties.py",  # 5.6
    "tests/cli/test_calibrate_cli.py",  # 5.2
    "tests/solver/program/test_row_names.py",  # 5.1
    "tests/cli/test_report_html.py",  # 5.0
    "tests/solver/colocation/test_colocation_program.py",  # 4.7
    "tests/cli/test_hostile_profiles.py",  # 4.6
    "tests/cli/test_hostile_round12.py",  # 4.4
    "tests/cli/test_hostile_round16.py",  # 4.2
    "tests/cli/test_time_wording.py",  # 4.2
    "tests/cli/test_hostile_plans.py",  # 4.2
    "tests/cli/test_replay_size.py",  # 4.2
    "tests/solver/decompose/test_region_join.py",  # 4.0
    "tests/test_imports.py",  # 4.0
    "tests/solver/time/test_time_levers.py",  # 3.9
    "tests/models/serving/test_kv_metamorphic.py",  # 3.8
    "tests/cli/test_hostile_report.py",  # 3.7
    "tests/cli/test_hostile_workers.py",  # 3.7
    "tests/cli/test_hostile_properties.py",  # 3.7
    "tests/solver/decompose/test_part_join.py",  # 3.5
    "tests/cli/test_startup.py",  # 3.5
    "tests/cli/test_sweep.py",  # 3.2
    "tests/solver/time/test_stopped_months.py",  # 3.2
    "tests/cli/test_batch.py",  # 3.1
    "tests/cli/test_hostile_instances.py",  # 3.0
    "tests/solver/simulate/test_simulate.py",  # 2.9
    "tests/solver/simulate/test_pool_dispatch.py",  # 2.9
    "tests/solver/decompose/test_warm_start.py",  # 2.9
    "tests/solver/time/test_agree_spot_survive.py",  # 2.9
    "tests/solver/candidates/test_swap_dominance.py",  # 2.9
    "tests/cli/test_hostile_round17.py",  # 2.7
    "tests/solver/backends/test_highs_text.py",  # 2.6
    "tests/solver/decompose/test_server_master.py",  # 2.6
    "tests/solver/decompose/test_region_lns.py",  # 2.5
    "tests/solver/decompose/test_tight_limits.py",  # 2.5
)
"""Modules of 2.4 s and more, slowest first (not counting the modules of many fast tests:
they even out the end as well as any)."""

ORDER = FIRST + SLOW


def slow_first(items: list) -> None:
    """Sort the collected `items` in place: the modules of ORDER in its order, then the
    rest in file order (a stable sort keeps each module's tests in the file's order)."""
    rank = {path: index for index, path in enumerate(ORDER)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))
