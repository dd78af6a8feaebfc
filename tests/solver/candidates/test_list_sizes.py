"""Which list sets the program's size (solver.candidates.list_sizes): counted by hand on a
table of stand-in candidates (only their layouts are read)."""

from types import SimpleNamespace

from solver.candidates.list_sizes import DOMINANT_SHARE, dominant_list, list_shares
from solver.candidates.table import CandidateTable


def _candidate(gpu: str, tp: int, pp: int = 1, precision: str = "fp8", ep: int = 1):
    config = SimpleNamespace(
        gpu=SimpleNamespace(name=gpu), tp=tp, pp=pp, weight_precision=precision, ep=ep
    )
    return SimpleNamespace(config=config)


def test_each_list_adds_what_its_best_entry_leaves_out():
    # chat: h100 TP 1, 2, 4, 8 and h200 TP 2; batch: h100 TP 8 (one precision, PP 1, EP 1)
    table = CandidateTable(
        by_workload={
            "chat": (*(_candidate("h100", tp) for tp in (1, 2, 4, 8)), _candidate("h200", 2)),
            "batch": (_candidate("h100", 8),),
        }
    )
    shares = {share.name: share for share in list_shares(table)}
    # one precision, one PP size, one EP: lists of one entry are not shown
    assert set(shares) == {"policy.tensor_parallel", "gpus"}
    tp = shares["policy.tensor_parallel"]
    # TP 2: 2 (h100, h200), TP 8: 2 (chat, batch), TP 1: 1, TP 4: 1 -> adds 6 - 2 = 4
    assert tp.by_entry == (("TP 2", 2), ("TP 8", 2), ("TP 1", 1), ("TP 4", 1))
    assert tp.adds == 4
    # h100: 5, h200: 1 -> adds 6 - 5 = 1
    assert shares["gpus"].adds == 1
    # 4 >= 0.5 x 6: the TP list dominates, and is told first
    assert dominant_list(table) == tp and list_shares(table)[0] == tp
    assert tp.text().startswith("policy.tensor_parallel adds 4 of 6 candidates (TP 2: 2, ")


def test_no_list_dominates_when_its_best_entry_holds_most_of_the_table():
    # TP 4 x 3 and TP 8 x 1: dropping TP 8 loses 1 of 4, under DOMINANT_SHARE
    table = CandidateTable(
        by_workload={"chat": tuple(_candidate("h100", tp) for tp in (4, 4, 4, 8))}
    )
    (share,) = list_shares(table)
    assert share.adds == 1 < DOMINANT_SHARE * 4
    assert dominant_list(table) is None
    assert dominant_list(CandidateTable(by_workload={})) is None
