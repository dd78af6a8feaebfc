"""CPU seconds of the candidate table's physics (issues 18 and 19).

Run by `make bench` only. The candidate table of the 10-region x 20-workload x 6-GPU
region-loss class (`tests.synthetic.generated`) and of the one-model, one-region question,
built in this process (single process, `build_candidates`), with CPU time
(`time.process_time`, which moves far less than the wall time on a shared machine):

- `edge search`: as fleetplan runs it (`models.serving.edge_search.find_edge`), first with no
  mixtures kept (`models.serving.iteration_mixture.kept_mixture`), then again with them
  kept, as a second solve in the same process (explain's re-solves, a sweep, `batch`) finds them;
- `48-step bisection`: the same table with the search the edge search replaced, as the
  reference, side by side in the same run.

Beside the time: the batch points and edge-test evaluations each build asked for, and how
many lone capacities differ from the bisection's by more than 1e-9 (relative): those are
where the bisection stopped in a spike of the p99 TPOT
(tests/models/serving/test_capacity_search.py).
"""

import time

import models.serving.batch_model as batch_model
import models.serving.capacity as capacity
import models.serving.iteration_mixture as iteration_mixture
from models.io.loading import load_instance
from solver.candidates.table import build_candidates
from tests.paths import ONE_MODEL_ONE_REGION
from tests.synthetic import generated

BISECTION_STEPS = 48


def _bisection(margin, low, high, *_, **__):
    for _ in range(BISECTION_STEPS):
        mid = (low + high) / 2
        if margin(mid) <= 0:
            low = mid
        else:
            high = mid
    return low, high


def _build(instance, search, monkeypatch, fresh: bool):
    """(CPU s, batch points, edge evaluations, table) of one build with `search`."""
    counts = {"points": 0, "evaluations": 0}
    point = batch_model.BatchModel.point

    def counted_point(self, batch):
        counts["points"] += 1
        return point(self, batch)

    def counted_search(margin, *args, **kwargs):
        def counted(x):
            counts["evaluations"] += 1
            return margin(x)

        return search(counted, *args, **kwargs)

    monkeypatch.setattr(batch_model.BatchModel, "point", counted_point)
    monkeypatch.setattr(capacity, "find_edge", counted_search)
    if fresh:
        iteration_mixture._MIXTURES.clear()
    start = time.process_time()
    table = build_candidates(instance)
    seconds = time.process_time() - start
    monkeypatch.undo()
    return seconds, counts["points"], counts["evaluations"], table


def _lone(table) -> dict[tuple, float]:
    return {
        (w, c.capacity.config.label, c.capacity.config.speculation is not None): c.requests_per_s
        for w, candidates in table.by_workload.items()
        for c in candidates
    }


def test_candidate_table_physics(capsys, monkeypatch):
    large = generated(10, 20, 6, survive="region")
    one = load_instance(ONE_MODEL_ONE_REGION)
    rows = []
    tables = {}
    for name, instance in (("10x20x6 region loss", large), ("one model, one region", one)):
        edge = _build(instance, capacity.find_edge, monkeypatch, fresh=True)
        again = _build(instance, capacity.find_edge, monkeypatch, fresh=False)
        slow = _build(instance, _bisection, monkeypatch, fresh=True)
        rows += [
            (name, "edge search", *edge[:3]),
            (name, "edge search, tables full", *again[:3]),
            (name, "48-step bisection", *slow[:3]),
        ]
        tables[name] = (edge[3], slow[3])
    assert tables["10x20x6 region loss"][0].by_workload
    with capsys.disabled():
        print("\ncandidate table physics, one process")
        print(f"{'instance':24} {'search':26} {'CPU s':>8} {'points':>8} {'edge evals':>10}")
        for name, search, seconds, points, evaluations in rows:
            print(f"{name:24} {search:26} {seconds:8.3f} {points:8d} {evaluations:10d}")
        for name, (edge_table, slow_table) in tables.items():
            ours, theirs = _lone(edge_table), _lone(slow_table)
            shared = ours.keys() & theirs.keys()
            differ = [k for k in shared if abs(ours[k] - theirs[k]) > 1e-9 * theirs[k]]
            print(
                f"{name}: {len(shared)} kept candidates in both, {len(differ)} lone capacities"
                f" differ from the bisection's by more than 1e-9"
            )
