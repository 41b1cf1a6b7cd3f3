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


@pytest.fixture
def torch_untouched(request):
    """For the guard's attack tests (``pytestmark = pytest.mark.usefixtures("torch_untouched")``):
    each test starts from a reset Dynamo with its module's ``RAN`` record (what attacking code
    did) empty, and leaves no guard hook installed."""
    import torch

    from lite_compiler import guard_active, hooks

    ran = request.module.RAN
    ran.clear()
    torch._dynamo.reset()
    yield
    ran.clear()
    assert not hooks.installed() and not guard_active()
