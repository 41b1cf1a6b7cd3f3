"""Every test starts from the same random state, so a test's tensors do not depend on which tests
ran before it (an unseeded randn made a region-output check flaky in CI)."""

import sys

import pytest


@pytest.fixture(autouse=True)
def _seeded_torch():
    torch = sys.modules.get("torch")  # never import torch here: the lint tests run without it
    if torch is not None:
        torch.manual_seed(0)
    yield
