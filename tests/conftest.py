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


def pytest_collection_modifyitems(config, items):
    """A test skipped without a GPU is a GPU test: it gets the ``gpu`` marker, so that
    ``pytest -m gpu tests/`` on the GPU machine runs every one of them (and nothing else)."""
    for item in items:
        if any("gpu" in str(mark.kwargs.get("reason", "")).lower()
               or "cuda" in str(mark.kwargs.get("reason", "")).lower()
               for mark in item.iter_markers("skipif")):
            item.add_marker(pytest.mark.gpu)
