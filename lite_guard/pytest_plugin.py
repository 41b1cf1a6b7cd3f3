"""pytest plugin (auto-loaded through the ``pytest11`` entry point).

    @pytest.mark.lite_bitwise(backward=True)
    def test_block(assert_lite_bitwise):
        assert_lite_bitwise(MyBlock(), torch.randn(4, 8))

The fixture compiles under ``backend="lite"`` and ``aot_eager`` and asserts bit-equality; the
marker's keyword arguments become its defaults. pytest loads this module in every project where
lite-guard is installed, so it stays torch-free: the comparison itself is contributed by
lite_compiler through the ``lite_guard.testing`` entry point and loaded only when a test asks
for the fixture (the way the CLI finds its subcommands).
"""

from __future__ import annotations

import functools
from importlib.metadata import entry_points

import pytest

ENTRY_POINT_GROUP = "lite_guard.testing"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "lite_bitwise(**options): defaults for the assert_lite_bitwise fixture"
        " (backward, dynamic, reference)")


def _assert_bitwise_equal():
    found = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == "assert_bitwise_equal"]
    if not found:
        pytest.fail("assert_lite_bitwise needs lite_compiler (install lite-guard with its torch extra)",
                    pytrace=False)
    return found[0].load()


@pytest.fixture
def assert_lite_bitwise(request: pytest.FixtureRequest):
    marker = request.node.get_closest_marker("lite_bitwise")
    return functools.partial(_assert_bitwise_equal(), **(marker.kwargs if marker else {}))
