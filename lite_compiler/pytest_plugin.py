"""pytest plugin (auto-loaded through the ``pytest11`` entry point).

    @pytest.mark.lite_bitwise(backward=True)
    def test_block(assert_lite_bitwise):
        assert_lite_bitwise(MyBlock(), torch.randn(4, 8))

The fixture compiles under ``backend="lite"`` and ``aot_eager`` and asserts bit-equality; the
marker's keyword arguments become its defaults. It lives in lite_compiler (the layer it tests),
so loading it imports lite_compiler, and torch with it, when pytest starts.
"""

from __future__ import annotations

import functools

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "lite_bitwise(**options): defaults for the assert_lite_bitwise fixture"
        " (backward, dynamic, reference)")


@pytest.fixture
def assert_lite_bitwise(request: pytest.FixtureRequest):
    from lite_compiler.testing import assert_bitwise_equal

    marker = request.node.get_closest_marker("lite_bitwise")
    return functools.partial(assert_bitwise_equal, **(marker.kwargs if marker else {}))
