"""The operating points kept across every model (`BatchModel.point`, `POINTS_KEPT`): a
point read back is, to the bit, the one computed afresh with every table empty, and a
model never answers with another pool size's, transfer's or mix's point at the same
batch. Properties on random layouts, pools and batches."""

from hypothesis import given, settings
from hypothesis import strategies as st

from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.physics.step_time import step_model
from models.serving import batch_model, iteration_mixture
from models.serving.batch_model import BatchModel
from models.serving.replica import MixTokens, Role, TrafficMix

FP8 = Precision.FP8
H200 = gpu_catalog()["h200"]
CHAT = TrafficMix(800, 2400, 0.6, 200, 600, 0.6)
FIXED = TrafficMix.fixed(1500, 300)


def _model(name: str, tp: int, ep: int, traffic: TrafficMix, role: Role, pool: float, xfer: float):
    steps = step_model(H200, llm_catalog()[name], FP8, FP8, tp, 1, efficiency_for(H200, FP8), ep=ep)
    return BatchModel(steps, MixTokens.of(traffic), role, xfer, 2 * xfer, pool, 0.01)


def _clear() -> None:
    batch_model._POINTS.clear()
    iteration_mixture._MIXTURES.clear()


@settings(max_examples=20, deadline=None)
@given(
    layout=st.sampled_from([("llama-3.1-8b", 1, 1), ("qwen3-30b-a3b", 2, 2)]),
    traffic=st.sampled_from([CHAT, FIXED]),
    role=st.sampled_from([Role.UNIFIED, Role.DECODE]),
    pools=st.lists(st.sampled_from([1.0, 4.0, 16.0]), min_size=2, max_size=2),
    transfer_s=st.sampled_from([0.0, 0.05]),
    share=st.floats(min_value=0.01, max_value=0.95),
)
def test_a_kept_point_is_the_one_computed_afresh(layout, traffic, role, pools, transfer_s, share):
    name, tp, ep = layout
    one = _model(name, tp, ep, traffic, role, pools[0], transfer_s)
    other = _model(name, tp, ep, traffic, role, pools[1], 0.05 - transfer_s)
    batch = min(one.lane_batch_limit(), 200.0) * share
    _clear()
    first = (one.point(batch), other.point(batch))
    again = (one.point(batch), other.point(batch))  # read back
    _clear()
    fresh_other = other.point(batch)  # the other first this time: no order matters
    fresh_one = one.point(batch)
    assert first == again == (fresh_one, fresh_other)
    assert (one._side, pools[0], transfer_s) in {
        (k[0], k[1], k[2]) for k in batch_model._POINTS
    }  # the point was kept, under its own pool and transfer


def test_the_batch_is_returned_as_asked():
    model = _model("llama-3.1-8b", 1, 1, CHAT, Role.UNIFIED, 1.0, 0.0)
    _clear()
    as_float = model.point(3.0)
    as_int = model.point(3)  # one key: 3 == 3.0
    assert type(as_int.batch) is int and type(as_float.batch) is float
    assert as_int.tpot_p99_s == as_float.tpot_p99_s
