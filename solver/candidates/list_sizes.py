"""Which list of the instance sets the program's size (issue 32: progress on long work).

The program holds one replica column per (workload, candidate, region), so its size is
the candidate table's size times the regions. Each candidate comes from one entry of each
list the user wrote: a tensor-parallel size, a pipeline-parallel size, a GPU type, a weight
precision, an expert layout. For one list L with entries e, the candidates it adds are

    adds(L) = candidates - max over e of candidates(e)

what the table would lose if L held only its most productive entry. The list with the
largest `adds` dominates when it adds at least `DOMINANT_SHARE` of the table: a long run
then says so, with the count per entry, so the user knows which list to shorten first.
Co-location templates are counted by the program build (solver.colocation.groups), not
here: they are not candidates.
"""

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from solver.candidates.table import Candidate, CandidateTable

DOMINANT_SHARE = 0.5
"""A list dominates when dropping all but its best entry would halve the table or more."""

_LISTS: tuple[tuple[str, str, Callable[[Candidate], object]], ...] = (
    ("policy.tensor_parallel", "TP", lambda c: c.config.tp),
    ("policy.pipeline_parallel", "PP", lambda c: c.config.pp),
    ("gpus", "", lambda c: c.config.gpu.name),
    ("weight_precisions", "", lambda c: str(c.config.weight_precision)),
    ("expert layouts", "EP", lambda c: c.config.ep),
)


@dataclass(frozen=True)
class ListShare:
    """One list's share of the candidate table."""

    name: str
    """The list as the instance names it (`policy.tensor_parallel`)."""
    by_entry: tuple[tuple[str, int], ...]
    """(entry as shown, candidates from it), largest first."""
    candidates: int
    """Candidates in the whole table."""

    @property
    def adds(self) -> int:
        """Candidates beyond those of the list's most productive entry."""
        return self.candidates - max(count for _, count in self.by_entry)

    def text(self) -> str:
        """`policy.tensor_parallel adds 31 of 44 candidates (TP 1: 13, ...)`."""
        entries = ", ".join(f"{entry}: {count}" for entry, count in self.by_entry)
        return (
            f"{self.name} adds {self.adds:,} of {self.candidates:,} candidates ({entries}); "
            "offering fewer of them shrinks the program most"
        )


def list_shares(table: CandidateTable) -> tuple[ListShare, ...]:
    """Every list with two entries or more among the kept candidates, the one adding the
    most first."""
    kept = [c for candidates in table.by_workload.values() for c in candidates]
    shares = []
    for name, prefix, entry in _LISTS:
        counts = Counter(entry(c) for c in kept)
        if len(counts) < 2:
            continue
        shown = tuple(
            (f"{prefix} {value}".strip(), count)
            for value, count in sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))
        )
        shares.append(ListShare(name, shown, len(kept)))
    return tuple(sorted(shares, key=lambda share: -share.adds))


def dominant_list(table: CandidateTable) -> ListShare | None:
    """The list that adds `DOMINANT_SHARE` of the candidates or more, or None."""
    shares = list_shares(table)
    if shares and shares[0].adds >= DOMINANT_SHARE * shares[0].candidates:
        return shares[0]
    return None
