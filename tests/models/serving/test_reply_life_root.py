"""The p99 gap's root (`ReplyLife.tail_s`): a pool's evened limit solved only where it
may be the larger of the two."""

import pytest

from models.serving.tail.reply_life import ReplyLife
from tests.models.serving.test_reply_life import _life


@pytest.mark.parametrize(
    ("fields", "roots"),
    [
        ({"pool": 4.0}, 1),  # the whole prompts' limit the larger: 31.6 ms against 30.3
        ({"pool": 16.0, "work_square_s2": 20 * 0.05**2}, 1),  # 62.5 ms against 38.7
        ({"pool": 4.0, "decode_slope_s": 5e-4}, 2),  # the evened limit's: 43.9 ms, 32.5
        ({"pool": 4.0, "decode_slope_s": 2e-4}, 2),  # the evened limit's: 33.3 ms, 31.9
    ],
)
def test_a_pool_solves_its_evened_limit_only_where_it_may_be_the_larger(fields, roots, monkeypatch):
    """`tail_s` is the larger of the two limits' roots; where the evened limit's
    exceedance is at or below the tail just below the first limit's root (NOISE below)
    already, its own root is earlier, and it is not solved (one root, not two: 18,430 of
    the 35,226 pools of chat-3region and 10 x 20 x 6 region loss at the defaults)."""
    life = _life(**fields)
    backlog = life.backlog()
    limits = [life._tail_s(backlog, pooled) for pooled in (False, True)]
    calls = [0]
    real = ReplyLife._tail_s

    def counted(self, *args, **kwargs):
        calls[0] += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ReplyLife, "_tail_s", counted)
    assert life.tail_s() == max(limits)
    assert calls[0] == roots
