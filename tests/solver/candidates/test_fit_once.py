"""A candidate's layout fit (`models.serving.replica_layout.fit_replica`: the memory budget,
the step model, the mix in tokens) is worked out once per configuration and read at every
pool size and failover target (`solver.candidates.pools.PoolPhysics.fit`), and the
capacities read with it are those `replica_capacity` computes on its own, to the bit."""

import pickle
from dataclasses import replace

import pytest

from models.io.loading import load_instance
from models.operations.scenarios import failover_targets
from models.serving.capacity import UNLIMITED_POOL, replica_capacity
from solver.candidates import pools
from solver.candidates.table import build_candidates
from tests.paths import INSTANCES


@pytest.fixture(scope="module")
def laddered():
    """chat-3region's kept candidates with a pool ladder, one per role."""
    table = build_candidates(load_instance(INSTANCES / "chat-3region.yaml"))
    found = {}
    for candidates in table.by_workload.values():
        for c in candidates:
            if c.ladder:
                found.setdefault((c.role, c.gpu, str(c.precision)), c)
    assert len({role for role, _, _ in found}) >= 2  # its prefill and decode pools
    return load_instance(INSTANCES / "chat-3region.yaml"), list(found.values())


def test_one_fit_serves_every_pool_size_and_failover_target(laddered, monkeypatch):
    instance, candidates = laddered
    for c in candidates:
        fits = []
        real = pools.fit_replica

        def counting(*args, real=real, fits=fits):
            fits.append(args)
            return real(*args)

        monkeypatch.setattr(pools, "fit_replica", counting)
        physics = pools.physics_of(instance, c.workload, c.config)
        sizes = [1, 2, 3, 4, 8, 16, UNLIMITED_POOL]
        tighter = replace(physics, targets=failover_targets(physics.targets, 40.0))
        read = [physics.at(n) for n in sizes] + [tighter.at(n) for n in sizes]
        assert len(fits) == 1  # 14 capacities, one fit
        alone = [
            replica_capacity(p.config, p.mix, p.targets, p.efficiency, n)
            for p in (physics, tighter)
            for n in sizes
        ]
        assert physics.derate == 1.0  # chat-3region's capacity margin: none
        assert read == alone  # every float equal: the same bits


def test_a_fit_that_does_not_fit_is_the_capacity_at_every_pool_size(laddered):
    # Llama 3.3 70B in BF16 on one H100: 70.6e9 x 2 bytes = 141 GB of weights > 80 GB of
    # HBM; no pool size changes that
    instance, candidates = laddered
    c = next(c for c in candidates if c.gpu == "h100-sxm" and str(c.precision) == "bf16")
    lone = replace(c.config, tp=1)
    physics = pools.physics_of(instance, c.workload, lone)
    fit = physics.fit()
    assert fit.not_fitting is not None and not fit.not_fitting.fits
    assert physics.at(1) == physics.at(8) == fit.not_fitting


def test_a_pickled_physics_leaves_its_fit_behind_and_reads_the_same(laddered):
    # a worker's table comes back without the fits (they are worked out again where asked)
    instance, candidates = laddered
    c = candidates[0]
    physics = pools.physics_of(instance, c.workload, c.config)
    held = physics.at(2)
    assert len(physics.fitted) == 1
    copy = pickle.loads(pickle.dumps(physics))
    assert copy.fitted == {}
    assert copy == physics and copy.at(2) == held
