"""Levers: each one an instance transformation whose re-solve is the changed instance's
own plan, ranked by dollars."""

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import pytest

from cli.levers import lever_table
from models.io.loading import load_instance
from models.physics import catalog
from models.schema.errors import InputError, Issue
from models.schema.policy import Survive
from solver.analysis import lever_edits, levers
from solver.analysis.lever_edits import (
    HIT_RATE_STEP,
    SLO_LOOSENING,
    drop_failure_requirement,
    lever_work,
    levers_for,
    looser_slo,
    lower_kv,
    more_prefix_hits,
)
from solver.analysis.lever_shares import MIN_SHARE_S, MIN_START_S, NONE_LEFT, Shares
from solver.analysis.lever_solve import NOT_STARTED, LeverResult, base_is_better, solve_lever
from solver.analysis.levers import LeverRun, rank_levers, rounding_note
from solver.analysis.paid import servers_bought
from solver.candidates import pools
from solver.decompose.by_workload import _given_start
from solver.program.lp import LinearProgram
from solver.settings import Deadline, SolveSettings
from solver.solve import solve, solve_program
from tests import synthetic
from tests.guards import failing_after
from tests.paths import INSTANCES


@pytest.fixture(scope="module")
def base():
    return synthetic.us_eu_chat()


def test_levers_change_only_what_they_name(base):
    hits = more_prefix_hits(base)
    assert hits.workloads[0].prefix_cache_hit_rate == pytest.approx(HIT_RATE_STEP)
    looser = looser_slo("ttft_p99_ms")(base)
    assert looser.workloads[0].slo.ttft_p99_ms == pytest.approx(
        synthetic.TTFT_P99_MS * SLO_LOOSENING
    )
    assert looser.workloads[0].slo.tpot_p99_ms == base.workloads[0].slo.tpot_p99_ms
    assert drop_failure_requirement(base).policy.survive is Survive.NONE
    assert base.policy.survive is Survive.REGION  # the base is untouched
    names = [lever.name for lever in levers_for(base)]
    assert "allow co-location" not in names  # one workload: nobody to share with
    assert "allow disaggregation" in names
    assert "credit TPOT pooling" not in names  # on by default (issue 35)
    flat = synthetic.with_policy(base, credit_tpot_pooling=False)
    credited = {lever.name: lever for lever in levers_for(flat)}["credit TPOT pooling"]
    assert credited.apply(flat).policy.credit_tpot_pooling
    assert not flat.policy.credit_tpot_pooling


def test_a_lever_the_instance_refuses_is_not_a_lever_there():
    # voice-agent derives its TTFT target from the voice budget (110 ms): a 20% looser
    # target (132 ms) is an input error of the lever's instance, not of the user's file
    # target (132 ms) would contradict the budget, so the lever leaves voice targets alone
    # and, with nothing else to loosen, is no lever there
    instance = load_instance(INSTANCES / "voice-agent.yaml")
    assert looser_slo("ttft_p99_ms")(instance) is None
    names = [lever.name for lever in levers_for(instance)]
    assert "TTFT +20%" not in names and "prefix-cache hit +10 points" in names
    assert {item.name for item in lever_work(instance)} == set(names)


def test_a_change_the_instance_refuses_is_not_a_lever():
    # any edit the instance's own rules reject (InputError) is left out, not raised
    def refused(instance):
        raise InputError([Issue("voice (lever)", None, "slo.ttft_p99_ms", "too loose")])

    instance = load_instance(INSTANCES / "voice-agent.yaml")
    assert not lever_edits._applies(lever_edits.Lever("refused", refused), instance)
    assert lever_edits._applies(lever_edits.Lever("hits", more_prefix_hits), instance)


def test_each_lever_re_solve_equals_solving_the_changed_instance(base):
    base_plan = solve(base, SolveSettings.of(base, threads=1))
    base_cost = base_plan.cost_per_month
    chosen = {"prefix-cache hit +10 points", "TPOT +20%", "drop survive: region"}
    levers = {lever.name: lever for lever in levers_for(base) if lever.name in chosen}
    results = rank_levers(base, base_plan)
    by_name = {r.lever: r for r in results}
    for name, lever in levers.items():
        direct = solve(lever.apply(base), SolveSettings.of(base, threads=1))
        assert by_name[name].cost_per_month == pytest.approx(direct.cost_per_month, rel=1e-9)
        assert by_name[name].saving_per_month == pytest.approx(base_cost - direct.cost_per_month)
    savings = [r.saving_per_month for r in results if r.saving_per_month is not None]
    assert savings == sorted(savings, reverse=True)
    # dropping the region-loss requirement can only make the fleet cheaper
    assert by_name["drop survive: region"].saving_per_month >= 0


def test_a_saving_whole_servers_round_away_says_so():
    # region-loss-3: 60 requests/s of chat in each of 3 regions on H100s at $3.00 bought in
    # 8-GPU servers. Surviving a region loss needs more GPUs per region than serving
    # without failure, but at most 8 either way: one server per region, both plans
    # 3 x 8 x $3.00 x 730 h = $52,560, and the lever's "+0" hides the GPUs it saves.
    instance = load_instance(INSTANCES / "region-loss-3.yaml")
    base = solve(instance, SolveSettings.of(instance, threads=1))
    result = solve_lever(
        "drop survive: region", drop_failure_requirement(instance), base.cost_per_month, None
    )
    assert base.cost_per_month == result.cost_per_month == pytest.approx(3 * 8 * 3.00 * 730)
    assert servers_bought(base) == result.servers == 3
    saved = base.total_gpus - result.total_gpus
    assert saved > 0
    note = rounding_note(result, base)
    assert note == f"rounded to whole servers: {saved} GPUs saved, 0 servers"
    (row,) = lever_table((result.model_copy(update={"note": note}),)).rows
    assert row[2] == "+0" and row[-1] == note
    # a lever that saves a server's worth has nothing hidden
    assert rounding_note(result.model_copy(update={"saving_per_month": 17_520.0}), base) == ""


def test_an_infeasible_lever_gives_its_reason():
    # region-loss-3-baseline serves bf16 weights; its KV one step down is fp8, and the
    # "fp4 KV" lever from there asks an H100 (no fp4 arithmetic) for an fp4 KV cache
    instance = lower_kv(load_instance(INSTANCES / "region-loss-3-baseline.yaml"))
    assert "fp4 KV" in [lever.name for lever in levers_for(instance)]
    result = solve_lever("fp4 KV", lower_kv(instance), 0.0, None)
    assert result.status == "infeasible"
    assert "keeps its KV cache in fp4, which h100-sxm cannot hold" in result.reason
    (row,) = lever_table((result,)).rows
    assert row[-1] == result.reason


def test_the_levers_share_one_deadline_over_rounds_of_jobs():
    # 60 s for 5 levers, 2 at a time: the first two start together, each with
    # 60 / ceil(5 / 2) = 20 s; once one ends (nothing spent here), the third starts beside
    # the other with 60 / ceil((3 + 1) / 2) = 30 s, the fourth 60 / ceil((2 + 1) / 2) = 30
    # s, the last 60 / ceil((1 + 1) / 2) = 60 s
    shares = Shares(Deadline.starting_now(60.0), jobs=2, not_started=5)
    given = [shares.next_s(0), shares.next_s(1), shares.next_s(1), shares.next_s(1)]
    given.append(shares.next_s(1))
    assert given == pytest.approx([20.0, 20.0, 30.0, 30.0, 60.0], abs=0.1)
    # one at a time, what is left over the levers not started: 60 / 3 = 20 s
    assert Shares(Deadline.starting_now(60.0), 1, 3).next_s(0) == pytest.approx(20.0, abs=0.1)
    # no limit: none for a lever either; a spent deadline, or less than MIN_START_S left:
    # the lever is not started (no share reaches past the deadline)
    assert Shares(Deadline.starting_now(None), 2, 4).next_s(0) is None
    spent = Deadline(time.monotonic() - 100.0, 60.0)
    assert Shares(spent, 2, 4).next_s(1) == NONE_LEFT
    almost = Deadline(time.monotonic() - 60.0 + MIN_START_S / 2, 60.0)
    assert Shares(almost, 2, 4).next_s(1) == NONE_LEFT
    # 8 levers, 2 at a time: 60 / 4 = 15 s, raised to the floor of twice a 12.5 s base solve
    assert Shares(Deadline.starting_now(60.0), 2, 8, floor_s=25.0).next_s(0) == 25.0
    # ... but never past what is left: a 10 s deadline, floor 25 s: 10 s; 0.8 s left, the
    # least share 1 s: 0.8 s
    assert Shares(Deadline.starting_now(10.0), 2, 8, floor_s=25.0).next_s(0) == pytest.approx(
        10.0, abs=0.1
    )
    nearly = Deadline(time.monotonic() - 59.2, 60.0)
    assert Shares(nearly, 2, 8, floor_s=MIN_SHARE_S).next_s(0) == pytest.approx(0.8, abs=0.1)


def test_a_share_is_what_the_others_would_leave_where_that_is_more_than_even():
    # 60 s, 2 at a time, 16 levers, each expected to take 4.7 s (the base run): the first
    # gets max(60 / ceil(16 / 2) = 7.5, 60 - 15 x 4.7 / 2 = 24.75) = 24.75 s; the second,
    # beside it, 60 - (14 + 1) x 4.7 / 2 = 24.75 s too
    shares = Shares(Deadline.starting_now(60.0), 2, 16, floor_s=4.7, expect_s=4.7)
    assert shares.next_s(0) == pytest.approx(24.75, abs=0.1)
    assert shares.next_s(1) == pytest.approx(24.75, abs=0.1)
    # expected at 10 s each, the others would leave nothing: the even share, 60 / 8
    slow = Shares(Deadline.starting_now(60.0), 2, 16, floor_s=4.7, expect_s=10.0)
    assert slow.next_s(0) == pytest.approx(7.5, abs=0.1)
    # no expectation (the default): even shares only, as before
    assert Shares(Deadline.starting_now(60.0), 2, 16).next_s(0) == pytest.approx(7.5, abs=0.1)


def test_a_group_gets_its_members_shares_and_a_lever_tried_again_one_more_round():
    # 60 s, 2 at a time, 4 levers not started and 1 running: rounds ceil(5 / 2) = 3; a
    # group of 3 members (their turns counted when probed) gets 3 x 60 / 3 = 60 s, all
    # that is left, and counts no turn; a lever then gets 60 / 3 = 20 s
    shares = Shares(Deadline.starting_now(60.0), jobs=2, not_started=4)
    assert shares.next_s(1, members=3) == pytest.approx(60.0, abs=0.1)
    assert shares.not_started == 4
    assert shares.next_s(1) == pytest.approx(20.0, abs=0.1)
    # 2 at a time, 1 not started, none running: 60 / 1; tried again, one more lever to
    # start: 60 / ceil(2 / 2) = 60, two more: 60 / ceil(3 / 2) = 30
    shares = Shares(Deadline.starting_now(60.0), jobs=2, not_started=1)
    shares.again()
    shares.again()
    assert shares.next_s(0) == pytest.approx(30.0, abs=0.1)


def test_a_lever_its_share_stopped_is_tried_once_more_and_keeps_its_better_end(base, monkeypatch):
    plan = solve(base, SolveSettings.of(base, threads=1))
    tries: dict[str, int] = {}

    def stub(name, instance, base_cost, backend, share_s=None, *args, **kwargs):
        tries[name] = tries.get(name, 0) + 1
        if name == "TPOT +20%" and tries[name] == 1:  # its share stops the first try
            return LeverResult(
                lever=name,
                cost_per_month=base_cost,
                saving_per_month=0.0,
                status="feasible",
                gap=0.05,
            )
        cost = base_cost - 1.0 if name == "TPOT +20%" else base_cost
        return LeverResult(lever=name, cost_per_month=cost, saving_per_month=base_cost - cost)

    monkeypatch.setattr(levers, "solve_lever", stub)
    seen: list[LeverResult] = []
    run = LeverRun(base, plan, jobs=1, on_done=seen.append, time_limit_s=600.0)
    results = {r.lever: r for r in run.results()}
    assert tries["TPOT +20%"] == 2 and set(tries.values()) == {1, 2}
    assert results["TPOT +20%"].status == "solved" and results["TPOT +20%"].gap is None
    assert results["TPOT +20%"].saving_per_month == pytest.approx(1.0)
    assert len(seen) == len(results) == len(run.work)  # told once per lever
    # without a shared deadline a lever has the instance's whole limit: not tried again
    tries.clear()
    results = {r.lever: r for r in LeverRun(base, plan, jobs=1).results()}
    assert tries["TPOT +20%"] == 1 and results["TPOT +20%"].status == "feasible"


def test_every_levers_table_starts_from_the_physics_the_caller_shares(base, monkeypatch):
    # explain --levers runs its levers within the block its base was solved in: one job
    # solves them in it; two hand what it holds to each worker (`new_pool`'s initializer)
    plan = solve(base, SolveSettings.of(base, threads=1))
    marker = {("the base's inputs", 1): "its physics at a pool of 1"}
    seen: list[dict] = []
    started: list = []

    def stub(name, instance, base_cost, *args, **kwargs):
        seen.append(dict(pools._SHARED or {}))
        return LeverResult(lever=name, cost_per_month=base_cost, saving_per_month=0.0)

    def threads(processes, then):  # the workers as threads (of this process)
        started.append(then)
        return ThreadPoolExecutor(processes)

    monkeypatch.setattr(levers, "solve_lever", stub)
    monkeypatch.setattr(levers, "new_pool", threads)
    with pools.shared_physics():
        pools._SHARED.update(marker)
        LeverRun(base, plan, jobs=1).results()
        assert seen and all(marker.items() <= shared.items() for shared in seen)
        LeverRun(base, plan, jobs=2).results()
    (then,) = started
    monkeypatch.setattr(pools, "_SHARED", None)  # put back after the test
    then()  # a fresh worker's start: nothing shared in its process yet
    assert marker == pools._SHARED


def test_under_the_runs_deadline_a_share_is_at_least_what_the_base_run_took(base):
    # the run began 5 s before the levers were made, its limit 60 s: 55 s left over
    # ceil(n / 2) rounds would be below 5 s for n > 22; each share is at least 5 s
    plan = solve(base, SolveSettings.of(base, threads=1))
    run_deadline = Deadline(time.monotonic() - 5.0, 60.0)
    run = LeverRun(base, plan, jobs=2, time_limit_s=55.0, deadline=run_deadline)
    shares = run._new_shares()
    assert shares.deadline is run_deadline and shares.floor_s >= 5.0
    shares.not_started = 40  # 55 / 20 = 2.75 s: raised to the floor
    assert shares.next_s(0) >= 5.0
    assert LeverRun(base, plan, jobs=2, time_limit_s=55.0)._new_shares().floor_s == MIN_SHARE_S


def test_of_two_ends_of_a_lever_the_proven_then_the_cheaper_is_kept():
    def end(status, cost, gap=None):
        return LeverResult(
            lever="x", cost_per_month=cost, saving_per_month=None, status=status, gap=gap
        )

    proven, dear, cheap = end("solved", 10.0), end("feasible", 9.0, 0.2), end("feasible", 8.0, 0.3)
    none = end("no_solution", None)
    assert min(dear, proven, key=levers._better) is proven
    assert min(dear, cheap, key=levers._better) is cheap
    assert min(none, dear, key=levers._better) is dear


@pytest.mark.parametrize("jobs", [1, 2])
def test_levers_whose_turn_comes_past_the_deadline_say_so_and_none_is_dropped(base, jobs):
    # a deadline under MIN_START_S: no lever starts, each says why, at once
    solved = solve_program(base, SolveSettings.of(base, threads=1))
    names = {lever.name for lever in levers_for(base)}
    with failing_after(30, "levers past the deadline"):  # a hang, not a timed assertion
        results = rank_levers(
            base, solved.plan, jobs=jobs, start=solved.result.values, time_limit_s=MIN_START_S / 5
        )
    assert {r.lever for r in results} == names and len(results) == len(names)
    assert all(r.status == "no_solution" and r.reason == NOT_STARTED for r in results)
    assert all(r.cost_per_month is None and r.saving_per_month is None for r in results)


def test_a_lever_share_counts_from_when_it_was_handed_out(base):
    # handed out 100 s ago with a 1 s share: past its deadline at its first check, no plan
    levers = {lever.name: lever for lever in levers_for(base)}
    changed = levers["TPOT +20%"].apply(base)
    result = solve_lever(
        "TPOT +20%", changed, 1.0, None, time_limit_s=1.0, handed_out=time.monotonic() - 100.0
    )
    assert result.status == "no_solution" and result.cost_per_month is None
    assert result.reason.startswith("stopped by its time limit (1 s) in ")


def test_a_lever_started_from_the_base_plan_ends_at_the_same_cost(base):
    # the start changes the search, never the optimum: each relaxing lever from the base
    # plan costs what it costs on its own, and never more than the base (its plan is one)
    settings = SolveSettings.of(base, threads=1)
    solved = solve_program(base, settings)
    base_cost = solved.plan.cost_per_month
    levers = {lever.name: lever for lever in levers_for(base)}
    for name in ("TPOT +20%", "drop survive: region", "allow h200"):
        changed = levers[name].apply(base)
        alone = solve_lever(name, changed, base_cost, None)
        started = solve_lever(name, changed, base_cost, None, start=solved.result.values)
        assert started.status == alone.status == "solved"
        assert started.cost_per_month == pytest.approx(
            alone.cost_per_month, rel=base.solver.mip_gap
        )
        assert started.saving_per_month >= 0


def test_a_lever_from_the_base_plan_asks_for_no_region_rows(base, monkeypatch):
    # lever_solve.REGION_ROWS off: a lever's search from the base plan works out no region
    # programs (chat-3region's ten levers alone 26.4 -> 17.8 CPU s); with no start, as a
    # base solve, its search has them
    from solver.decompose import by_workload

    asked: list[bool] = []
    real = by_workload._rows_wanted
    monkeypatch.setattr(
        by_workload, "_rows_wanted", lambda p, s: asked.append(real(p, s)) or asked[-1]
    )
    solved = solve_program(base, SolveSettings.of(base, threads=1))
    changed = {lever.name: lever for lever in levers_for(base)}["TPOT +20%"].apply(base)
    asked.clear()
    solve_lever("TPOT +20%", changed, solved.plan.cost_per_month, None, start=solved.start)
    assert asked == [False]
    asked.clear()
    solve_lever("TPOT +20%", changed, solved.plan.cost_per_month, None)
    assert asked == [True]


def test_rank_levers_from_the_base_plan_gives_every_lever_as_alone(base):
    solved = solve_program(base, SolveSettings.of(base, threads=1))
    alone = {r.lever: r for r in rank_levers(base, solved.plan)}
    started = rank_levers(base, solved.plan, start=solved.result.values, time_limit_s=600.0)
    assert [r.lever for r in started] and {r.lever for r in started} == set(alone)
    for result in started:
        assert result.status == alone[result.lever].status
        if result.cost_per_month is not None:
            gap = base.solver.mip_gap
            assert result.cost_per_month == pytest.approx(
                alone[result.lever].cost_per_month, rel=gap
            )


def test_a_lever_run_begun_runs_beside_other_work_and_gives_what_rank_levers_gives(base):
    # begun, the levers run in 2 worker processes while this thread goes on (explain's
    # own re-solves meanwhile); waited for, each ends as in one process, same order
    solved = solve_program(base, SolveSettings.of(base, threads=1))
    serial = rank_levers(base, solved.plan, start=solved.result.values)
    seen = []
    with LeverRun(
        base, solved.plan, jobs=2, on_done=seen.append, start=solved.result.values
    ) as run:
        assert run.work and len(seen) < len(run.work)  # begun, not ended
        results = run.results()
    assert len(seen) == len(results) == len(serial)
    assert [r.lever for r in results] == [r.lever for r in serial]
    for parallel, alone in zip(results, serial, strict=True):
        assert parallel.status == alone.status
        if alone.cost_per_month is not None:
            rel = base.solver.mip_gap
            assert parallel.cost_per_month == pytest.approx(alone.cost_per_month, rel=rel)


def test_an_error_beside_a_lever_run_drops_the_levers_not_started(base):
    solved = solve_program(base, SolveSettings.of(base, threads=1))
    seen = []
    run = LeverRun(base, solved.plan, jobs=2, on_done=seen.append)
    with pytest.raises(KeyError), run:
        raise KeyError("explain failed")
    # 2 levers ran at most when the error came: the rest were never started
    assert len(seen) <= 2 < len(run.work)


def _counted(monkeypatch, hold: bool = False) -> dict[str, int]:
    """Levers solved by a stub in threads (no solver), counting how many run at once;
    with `hold`, each waits until two have run at once (10 s at most)."""
    lock, seen = threading.Lock(), {"now": 0, "most": 0}
    both = threading.Event()

    def stub(name, instance, base_cost, backend, share_s=None, start=None, program=None, at=None):
        with lock:
            seen["now"] += 1
            seen["most"] = max(seen["most"], seen["now"])
            if seen["most"] >= 2:
                both.set()
        if hold:
            both.wait(timeout=10.0)
        with lock:
            seen["now"] -= 1
        return LeverResult(lever=name, cost_per_month=base_cost, saving_per_month=0.0)

    monkeypatch.setattr(levers, "new_pool", lambda jobs, then=None: ThreadPoolExecutor(jobs))
    monkeypatch.setattr(levers, "idle_cores", lambda: 2.0)  # an idle 2-core machine
    monkeypatch.setattr(levers, "solve_lever", stub)
    return seen


def test_levers_begun_beside_other_work_take_one_worker_fewer_until_waited_for(base, monkeypatch):
    seen = _counted(monkeypatch)
    plan = solve(base, SolveSettings.of(base, threads=1))
    done, ended = [], threading.Event()

    def finished(result: LeverResult) -> None:
        done.append(result)
        if len(done) == len(run.work):
            ended.set()

    run = LeverRun(base, plan, jobs=2, on_done=finished)
    assert run.beside == 0  # nothing begun: no core taken
    run.begin(beside=True)
    assert run.beside == 1  # the cores the caller's own work leaves it: one fewer
    assert ended.wait(timeout=10.0)  # every lever ended before the caller waits
    results = run.results()
    assert run.beside == 0
    run.close()
    assert len(results) == len(run.work) > 2
    assert seen["most"] == 1  # 2 jobs, one fewer beside the caller's work

    # begun alone, both jobs run at once (the first waits for the second)
    seen = _counted(monkeypatch, hold=True)
    with LeverRun(base, plan, jobs=2) as run:
        assert len(run.results()) == len(run.work)
    assert seen["most"] == 2

    # beside other work on a machine others keep busy: nothing begins until waited for
    seen = _counted(monkeypatch, hold=True)
    monkeypatch.setattr(levers, "idle_cores", lambda: 0.5)
    run = LeverRun(base, plan, jobs=2).begin(beside=True)
    assert seen["most"] == 0
    with run:
        assert len(run.results()) == len(run.work)
    assert seen["most"] == 2  # then both jobs at once


def test_levers_offering_a_finer_server_start_first(base):
    # more GPU types first (the larger program); among the GPU types offered, the one of
    # the smallest server first: gh200 (1 GPU a node) before the 8-GPU servers, the
    # 72-GPU racks (gb200, gb300) last; a lever offering no new type after them all
    specs = catalog.gpu_catalog()
    order = [item.name for item in lever_work(base)]
    offered = [name for name in order if name.startswith("allow ") and name[6:] in specs]
    assert offered[0] == "allow gh200" and specs["gh200"].gpus_per_node == 1
    assert {name[6:] for name in offered[-2:]} == {"gb200", "gb300"}
    nodes = [specs[name[6:]].gpus_per_node for name in offered]
    assert nodes == sorted(nodes) == [1] + [8] * (len(offered) - 3) + [72, 72]
    assert order[: len(offered)] == offered  # every other lever after them


def test_a_lever_not_proven_in_its_share_shows_its_gap():
    # a plan of $100,000 stopped at a 2% gap: the lever's optimum is within
    # $98,000 .. $100,000, its saving on a $105,000 base at least $5,000
    unproven = LeverResult(
        lever="allow gh200",
        cost_per_month=100_000.0,
        saving_per_month=5_000.0,
        status="feasible",
        gap=0.02,
    )
    (row,) = lever_table((unproven,)).rows
    assert row[2] == "+5,000" and row[5] == "feasible (gap 2.00%)"


def test_a_relaxing_lever_stopped_dearer_than_the_base_reports_the_base(base):
    plan = solve(base, SolveSettings.of(base, threads=1))
    cost = plan.cost_per_month
    # stopped at $1,000 above the base with a 50% gap: its bound is
    # (cost + 1,000) x 0.5, and the base plan (a plan of the looser question) is
    # (cost - bound) / cost from it
    found = cost + 1_000.0
    dearer = LeverResult(
        lever="TPOT +20%", cost_per_month=found, saving_per_month=-1_000.0,
        status="feasible", gap=0.50, total_gpus=999,
    )  # fmt: skip
    better = base_is_better(dearer, plan)
    assert better.cost_per_month == cost and better.saving_per_month == 0.0
    assert found * 0.5 < cost  # a bound below the base, as a relaxation's must be
    assert better.gap == pytest.approx((cost - found * 0.5) / cost)
    assert better.total_gpus == plan.total_gpus and better.servers == servers_bought(plan)
    assert f"${found:,.0f}/month" in better.note
    # proven, cheaper, or without a plan: as it is
    for kept in (
        dearer.model_copy(update={"status": "solved", "gap": None}),
        dearer.model_copy(update={"cost_per_month": cost - 1.0, "saving_per_month": 1.0}),
        LeverResult(lever="x", cost_per_month=None, saving_per_month=None, status="no_solution"),
    ):
        assert base_is_better(kept, plan) == kept
    # which levers relax: a looser target or an added GPU, not a price or a KV change
    relaxing = {item.name for item in lever_work(base) if item.relaxes}
    assert {"TPOT +20%", "allow h200", "drop survive: region"} <= relaxing
    assert not relaxing & {"fp8 KV", "prefix-cache hit +10 points"}


def test_a_given_start_is_used_only_within_the_solve_bounds():
    lp = LinearProgram("p")
    for name in ("x", "y"):
        lp.add_variable(name, upper=4.0, integer=True)
    start = {"x": 2.0, "y": 0.0, "gone": 1.0}
    settings = replace(SolveSettings(), start=start)
    # names the program lacks are dropped; x = 2 within x <= 3 is kept
    assert _given_start(lp, settings, {"x": (0.0, 3.0)}) == {"x": 2.0, "y": 0.0}
    # a pool the solve fixes at 0 where the start holds 2 replicas: not a start here
    assert _given_start(lp, settings, {"x": (0.0, 0.0)}) is None
    assert _given_start(lp, SolveSettings(), None) is None


def test_explain_levers_time_limit_is_checked_and_shared(run_cli, base, tmp_path):
    path = INSTANCES / "region-loss-3.yaml"
    bad = run_cli("explain", path, "--levers", "--levers-time-limit", "0")
    assert bad.exit_code == 2 and "--levers-time-limit" in bad.stderr
    # the tiny two-region instance: with 120 s shared, every lever is proven in its share
    # (no gap shown) and the levers are ranked by dollars
    mine = tmp_path / "base.json"
    mine.write_text(json.dumps(base.model_dump(mode="json", exclude_unset=True)))
    out = tmp_path / "levers.json"
    ran = run_cli(
        "explain", mine, "--levers", "--jobs", "1", "--levers-time-limit", "120", "--json", out
    )
    assert ran.exit_code == 0, ran.stderr
    levers = json.loads(out.read_text())["levers"]
    assert levers and all(r["gap"] is None and r["status"] != "feasible" for r in levers)
    savings = [r["saving_per_month"] for r in levers if r["saving_per_month"] is not None]
    assert savings == sorted(savings, reverse=True)


def test_by_default_only_a_static_plans_levers_share_the_runs_deadline(base):
    """The hourly plan: diurnal-chat-batch at TP8 alone (an hourly plan as any other, in
    0.4 s of CPU where its TP 2, 4 and 8 take 2.7 s)."""
    from cli.levers import runs_deadline
    from models.io.overrides import load_instance_with, parse_overrides

    assert runs_deadline(solve_program(base, SolveSettings.of(base, threads=1)))
    tp8 = parse_overrides(["policy.tensor_parallel=[8]"])
    hourly = load_instance_with(INSTANCES / "diurnal-chat-batch.yaml", tp8)
    assert not runs_deadline(solve_program(hourly, SolveSettings.of(hourly, threads=1)))


def test_a_lever_stopped_before_any_bound_says_its_gap_is_unknown():
    """A lever re-solve stopped on the base plan with no bound (a search its share cut
    before any bound) must not read as a proven "+0": the table says the gap is unknown."""
    unknown = LeverResult(lever="allow x", cost_per_month=100.0, saving_per_month=0.0,
                          status="feasible", gap=None)  # fmt: skip
    (row,) = lever_table((unknown,)).rows
    assert row[5] == "feasible (gap unknown)"
    proven = unknown.model_copy(update={"status": "solved"})
    assert lever_table((proven,)).rows[0][5] == "solved"


def test_a_horizon_plan_is_ranked_by_its_mean_month():
    """Over a 3-month horizon costing $300 in all, month 0 $50: a lever is ranked by
    $300 / 3 = $100 a month, so a change that only moves later months shows; a plan
    without months by its cost per month."""
    from types import SimpleNamespace

    from solver.analysis.lever_solve import lever_cost

    horizon = SimpleNamespace(months=("m0", "m1", "m2"), horizon_cost=300.0, cost_per_month=50.0)
    assert lever_cost(horizon) == 100.0
    static = SimpleNamespace(months=(), horizon_cost=None, cost_per_month=50.0)
    assert lever_cost(static) == 50.0
