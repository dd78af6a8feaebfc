"""Paths the tests share."""

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
INSTANCES = REPO / "instances"
DEFAULT_INSTANCE = INSTANCES / "chat-3region.yaml"
ONE_MODEL_ONE_REGION = REPO / "tests" / "fixtures" / "one-model-one-region.yaml"
