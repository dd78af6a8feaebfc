"""The pooling ladder's last step (`solver.candidates.pools.pool_ladder`): one more doubling when
the top step's pool less one replica falls back, so a pool that lost a replica is credited
its survivors' capacity, not q(1)."""

from solver.candidates.pools import PoolStep, pool_ladder


def _lone_then_flat(lone: float, pooled: float):
    """q(1) = lone, q(n) = pooled for every n >= 2 (the wait binds one replica only)."""
    return lambda replicas: lone if replicas <= 1 else pooled


def test_a_ladder_stopping_at_two_gets_the_next_doubling():
    """q(1) = 2.70, q(n >= 2) = 3.65 = the ceiling: the step at 2 gains 35% and reaches
    the ceiling, so the loop stops; its pool less one (1 replica) is back at 2.70 <
    3.65 / 1.02, so 4 is kept too, whose survivors (3) hold 3.65."""
    ladder = pool_ladder(_lone_then_flat(2.70, 3.65), 2.70, 3.65, 4096)
    assert ladder == (PoolStep(2, 3.65), PoolStep(4, 3.65))


def test_no_extra_step_when_the_top_steps_survivors_hold():
    """q(1) = 1, q(2) = 1.5, q(n >= 3) = 2 = the ceiling: steps 2 and 4; q(4 - 1) = 2 is
    within the gain of q(4), so nothing is added."""

    def q(replicas: int) -> float:
        return {1: 1.0, 2: 1.5}.get(replicas, 2.0)

    assert pool_ladder(q, 1.0, 2.0, 4096) == (PoolStep(2, 1.5), PoolStep(4, 2.0))


def test_the_extra_step_respects_the_largest_pool():
    """With at most 3 replicas worth having, 4 is never credited."""
    assert pool_ladder(_lone_then_flat(2.70, 3.65), 2.70, 3.65, 3) == (PoolStep(2, 3.65),)
