"""Every shared group template of an instance, and a memo that builds them once per
demand they read.

With policy.colocation the program chooses among three kinds of template: co-resident
groups (`solver.colocation.groups`), one-engine groups (`engine_templates`) and swapped
groups (`swap_templates`). They read the instance's demand only through peaks:

    co-resident, swapped:  the tail and its peaks D_w (`groups.tail_peaks`): the load
                           pre-filter, column generation's check at the peaks, and
                           a[w,t] = s* D_w along them
    one engine:            the peaks of the workloads of each family of two or more
                           (a[w,t] = C D_w / sum D)

Everything else they read (models, GPUs, token mixes, SLOs, prices, the candidate table)
is the same in every period of a day and every month of a horizon: those instances differ
in demand alone (models.operations.time_demand.hour_instance,
models.operations.procurement.month_instance). So the periods program asks `TemplateMemo`,
which builds each kind once per distinct value of the peaks it reads: a day where a large
workload follows a profile and the tail is flat builds the co-resident groups once, not
once per period. Where the tail's peaks differ between periods, so do its templates
(another direction s* D_w, another tail), and each is built for its own, from what the
builds before it learnt of the same groups (`edges`, `models.colocation.load_edge`): a
group's feasible loads are down-closed, so an evaluation at the peak hour's loads
answers every point of another period's search that lies below or above it, and the
physics run only between them (the same templates as a build of its own).
"""

from dataclasses import dataclass, field

from models.schema.instance import Instance
from solver.candidates.table import CandidateTable
from solver.colocation.groups import Edges, GroupTable, Template, build_groups, tail_peaks
from solver.settings import SolveSettings

PeaksKey = tuple[tuple[str, float], ...]


def all_templates(
    instance: Instance, table: CandidateTable, settings: SolveSettings | None = None
) -> GroupTable:
    """The templates of one instance, built afresh (none without policy.colocation)."""
    return TemplateMemo(table).templates(instance, settings)


@dataclass
class TemplateMemo:
    """The templates of instances that differ from one another in demand alone, over one
    candidate table (`table`), each kind built once per value of the peaks it reads."""

    table: CandidateTable
    edges: Edges = field(default_factory=dict)
    """What the builds learnt of each co-resident group's feasible loads
    (`solver.colocation.groups.Edges`): physics of the group alone, so memos over other
    candidate tables of the same instances may share it (`over`)."""
    _shared: dict[PeaksKey, tuple[GroupTable, tuple[Template, ...]]] = field(default_factory=dict)
    _engines: dict[tuple[tuple[str, PeaksKey], ...], tuple[Template, ...]] = field(
        default_factory=dict
    )

    def templates(self, instance: Instance, settings: SolveSettings | None = None) -> GroupTable:
        """The instance's co-resident groups with its one-engine and swapped templates
        after them; `settings`' deadline stops a build (TimeLimitReached)."""
        if not instance.policy.colocation:
            return GroupTable()
        # the one-engine and swapped templates load here (the static path without them)
        from solver.colocation.engine_templates import engine_templates, families
        from solver.colocation.swap_templates import swapped_templates

        tail = tail_peaks(instance, self.table)
        if tail not in self._shared:
            groups = build_groups(instance, self.table, settings=settings, edges=self.edges)
            swapped = tuple(swapped_templates(instance, self.table, settings))
            self._shared[tail] = (groups, swapped)
        peaks = _peaks(instance)
        engines = tuple(
            (root, tuple((w, peaks[w]) for w in names if peaks[w] > 0))
            for root, names in families(instance)
        )
        if engines not in self._engines:
            self._engines[engines] = tuple(engine_templates(instance, self.table, settings))
        groups, swapped = self._shared[tail]
        return groups.extended([*self._engines[engines], *swapped])

    def over(self, table: CandidateTable) -> "TemplateMemo":
        """A memo over another candidate table of the same instances, sharing what this
        one learnt of the groups' loads (a horizon's months after month 0, whose table is
        built for the horizon's demand; the static plan of a day's peak, over the whole
        table): its templates are those a build of its own gives."""
        return TemplateMemo(table, self.edges)


def _peaks(instance: Instance) -> dict[str, float]:
    """Each workload's peak requests/s over its regions."""
    return {
        w.name: max((level.peak_rps for level in w.demand.values()), default=0.0)
        for w in instance.workloads
    }
