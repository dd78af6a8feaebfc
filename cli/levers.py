"""`explain --levers`: every lever re-solved (with progress on stderr), ranked by dollars,
added to the explanation's tables and JSON (an hourly plan's explanation as well: its
levers re-solve the hourly program, its alternatives the periods program)."""

from cli.render.console import job_progress
from cli.render.summary_tables import MONTH_ZERO
from cli.render.tables import TableSpec
from models.schema.instance import Instance
from solver.analysis.explain import Explanation
from solver.analysis.lever_edits import levers_for
from solver.analysis.lever_solve import LeverResult, lever_cost
from solver.analysis.levers import LeverRun
from solver.plan.schema import Plan, gap_percent
from solver.solve import Solved

LEVER_NOTE = (
    "each lever re-solved alone on the same instance (same backend and gap), from the base "
    "plan; saving = base $/month - lever $/month (status feasible: not proven in its time, "
    "the saving is at least this, the lever's optimum within its gap below its $/month; "
    "no_solution 'not re-solved': its turn came after the levers' time limit, by default "
    "what the run's time limit left); "
    "over a procurement horizon $/month is the horizon's mean month; "
    "a new GPU type is offered at its catalog price; "
    "rests on: the lever plan's pools whose capacity comes from a borrowed GPU generation "
    "or an unmeasured regime, with the model's error band on held-out rows (10th / 90th "
    "percentile of predicted / measured - 1)"
)


class RunningLevers:
    """The levers of the solved instance, re-solved `jobs` at a time from the base plan in
    worker processes, within `time_limit_s` together (None: for a static plan what is
    left of the run's time limit, so that the command ends within it; an hourly or month
    plan's levers each within the run's limit, `runs_deadline`), with a progress
    bar on stderr: begun at once, so that they run beside what the caller does meanwhile
    (explain's own re-solves); `results` waits for them."""

    def __init__(
        self, solved: Solved, backend: str | None, jobs: int, time_limit_s: float | None = None
    ):
        instance = run_instance(solved)
        shared = time_limit_s is None and runs_deadline(solved)
        self.progress = job_progress("levers")
        task = self.progress.add_task("", total=len(levers_for(instance)))
        self.progress.start()
        self.run = LeverRun(
            instance,
            solved.plan,
            backend,
            jobs,
            on_done=lambda r: self.progress.update(task, advance=1, description=r.lever),
            start=solved.start,
            time_limit_s=solved.settings.remaining_s() if shared else time_limit_s,
            program=solved.program.lp,
            deadline=solved.settings.deadline if shared else None,
            table=solved.program.sets.table,
        ).begin(beside=True)

    @property
    def beside(self) -> int:
        """Worker processes solving levers beside the caller now (LeverRun.beside)."""
        return self.run.beside

    def results(self) -> tuple[LeverResult, ...]:
        """Every lever's result, ranked (solver.analysis.levers.LeverRun.results)."""
        try:
            return self.run.results()
        finally:
            self.close()

    def close(self, cancel: bool = False) -> None:
        """The workers shut down (`cancel`: the levers not started dropped), the bar gone."""
        try:
            self.run.close(cancel)
        finally:
            self.progress.stop()


def run_instance(solved: Solved) -> Instance:
    """The solved instance with the run's time limit and gap in its `solver` section, so
    that `--time-limit` and `--mip-gap` bound the levers as the base: a lever not sharing
    the run's deadline (an hourly or month plan's, `runs_deadline`) gets the run's limit,
    not the file's (a 300 s file under `--time-limit 5` gave each of 24 levers 300 s)."""
    instance = solved.instance
    run = {"time_limit_s": solved.settings.time_limit_s, "mip_gap": solved.settings.mip_gap}
    return instance.model_copy(update={"solver": instance.solver.model_copy(update=run)})


def runs_deadline(solved: Solved) -> bool:
    """Whether the levers share the run's deadline by default: a static plan's, each a
    re-solve from the base plan of about the base's own time. An hourly or month plan's
    levers re-solve the periods or months from no plan, each about as long as the whole
    base run, so the run's limit leaves them nothing (measured at load 4 on 2 cores:
    diurnal-chat-batch 20 of 24 levers unproven at 60 s against all but one proven in
    150 s, procurement-3region none of 20 answered at 120 s against 18 in 638 s): each
    gets the run's limit (`--time-limit`, else the file's: `run_instance`)."""
    return solved.time_step is None


def lever_table(results: tuple[LeverResult, ...], base: Plan | None = None) -> TableSpec:
    """Levers, largest saving first; over a procurement horizon the title names the base
    the savings are taken from (the horizon's mean month, `lever_cost`), which is not the
    month-0 $/month the explanation's header states."""
    title = "Levers ranked by dollars"
    gpus = "GPUs"
    if base is not None and base.months:
        title += f" (saving against the horizon's mean month, ${lever_cost(base):,.0f}/month)"
        gpus += MONTH_ZERO  # the lever's plan's peak fleet: its month 0's
    return TableSpec(
        title,
        ("lever", "$/month", "saving $/month", "rests on", gpus, "status", "why"),
        tuple(
            (
                r.lever,
                "-" if r.cost_per_month is None else f"{r.cost_per_month:,.0f}",
                "-" if r.saving_per_month is None else f"{r.saving_per_month:+z,.0f}",
                rests_on(r),
                "-" if r.total_gpus is None else str(r.total_gpus),
                _status(r),
                r.reason or r.note,
            )
            for r in results
        ),
        LEVER_NOTE,
    )


def _status(result: LeverResult) -> str:
    """The lever's status, with its gap where it is not proven ("gap unknown" where its
    search stopped before any bound: its saving may be larger than shown)."""
    if result.gap is not None:
        return f"{result.status} (gap {gap_percent(result.gap)})"
    return f"{result.status} (gap unknown)" if result.status == "feasible" else result.status


def rests_on(result: LeverResult) -> str:
    """`gb200 dense BORROWED -18%/+133%` for each pool of the lever's plan on a borrowed
    GPU generation or an unmeasured regime; `measured` when none; `-` without a plan."""
    if result.cost_per_month is None:
        return "-"
    return "; ".join(result.uncertain) or "measured"


def with_levers(
    running: RunningLevers, explanation: Explanation, tables: list[TableSpec]
) -> tuple[Explanation, list[TableSpec]]:
    """The explanation with its `levers` filled (waited for) and the lever table first."""
    results = running.results()
    table = lever_table(results, explanation.plan)
    return explanation.model_copy(update={"levers": results}), [table, *tables]
