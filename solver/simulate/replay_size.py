"""How large a replay is before it runs: the scenario's surviving pools as the plan states
them (`surviving`), and the open-arrival replay's router steps and requests, refused past
`flag_limits.REPLAY_ROUTER_STEPS` and `flag_limits.REPLAY_REQUESTS` (`check_replay_size`) so that a
replay of minutes to hours is said at once, not run."""

import re

from models.schema import flag_limits
from models.schema.quantities import counted
from solver.plan.schema import Plan


def surviving(plan: Plan, scenario: str) -> list[tuple[str, str, str, float, dict[str, int]]]:
    """(workload, region, phase, load, {label: surviving count}) of the scenario; the
    replicas an hourly plan starts after a loss (`count x label (started)`) are counted
    in their configuration's pool, whose load they share once started."""
    names = [s.name for s in plan.scenarios]
    if scenario not in names:
        raise ValueError(
            f"scenario {scenario!r} is not in the plan; it has "
            + (", ".join(map(repr, names)) or "no scenario table")
        )
    result = []
    for load in next(s for s in plan.scenarios if s.name == scenario).pools:
        counts = {}
        for text in load.pools:
            match = re.fullmatch(r"(\d+) x (.+?)(?: \(started\))?", text)
            if match:
                label = match.group(2)
                counts[label] = counts.get(label, 0) + int(match.group(1))
        result.append(
            (load.workload, load.region, str(load.phase), load.load_requests_per_s, counts)
        )
    return result


class ReplayTooLarge(ValueError):
    """An open-arrival replay beyond `flag_limits.REPLAY_ROUTER_STEPS`: refused before it runs."""


def replay_router_steps(plan: Plan, scenario: str, duration_s: float) -> float:
    """Router steps of one open-arrival run of `scenario`: each pool's requests (load x
    duration) times the replicas the router chooses among (an upper bound: a
    prefill/decode pair counts both sides)."""
    return sum(
        load * duration_s * (sum(counts.values()) + 1)
        for _, _, _, load, counts in surviving(plan, scenario)
    )


def check_replay_size(plan: Plan, scenario: str, duration_s: float, runs: int = 1) -> None:
    """Refuse an open-arrival replay of more than `flag_limits.REPLAY_ROUTER_STEPS`, or a run of
    more than `flag_limits.REPLAY_REQUESTS` (one replica's pool passed the steps' bound with
    hours of requests), naming the longest duration that fits.

    Raises:
        ReplayTooLarge: the replay would take minutes to hours.
    """
    most = flag_limits.REPLAY_ROUTER_STEPS
    steps = replay_router_steps(plan, scenario, duration_s) * runs
    if steps > most.count:
        longest_s = duration_s * most.count / steps
        raise ReplayTooLarge(
            f"{counted(runs, 'run')} of {duration_s:g} s of arrivals at the plan's load take "
            f"{steps:,.3g} router steps; at most {most.count:,} {most.what} ({most.why}); "
            f"the longest that fits is {longest_s:.3g} s"
        )
    requests = sum(load * duration_s for _, _, _, load, _ in surviving(plan, scenario))
    if requests > flag_limits.REPLAY_REQUESTS.count:
        most = flag_limits.REPLAY_REQUESTS
        raise ReplayTooLarge(
            f"a run of {duration_s:g} s of arrivals at the plan's load sends {requests:,.3g} "
            f"requests; at most {most.count:,} {most.what} ({most.why}); the longest that fits is "
            f"{duration_s * most.count / requests:.3g} s"
        )
