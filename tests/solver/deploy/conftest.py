"""The default instance, its plan (conftest's one solve a run) and its deployment records:
what the deploy and fleet-import tests start from."""

import pytest

from models.io.loading import load_instance
from solver.deploy.pools import deploy_pools
from tests.paths import DEFAULT_INSTANCE


@pytest.fixture(scope="module")
def instance():
    return load_instance(DEFAULT_INSTANCE)


@pytest.fixture(scope="module")
def plan(default_plan):
    return default_plan


@pytest.fixture(scope="module")
def pools(instance, plan):
    return deploy_pools(instance, plan)
