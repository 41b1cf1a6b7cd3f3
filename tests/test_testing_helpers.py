"""lite_compiler.testing.assert_bitwise_equal and the pytest plugin users put in their suites."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

from lite_compiler.testing import BitwiseMismatch, assert_bitwise_equal


def test_assert_bitwise_equal_passes_for_a_module_with_backward():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU(), torch.nn.LayerNorm(8))
    assert_bitwise_equal(model, torch.randn(4, 8, requires_grad=True), backward=True)


def test_assert_bitwise_equal_reports_a_real_mismatch():
    # Default Inductor fuses sin+cos into its own kernel: not bitwise equal to ATen.
    def fn(x):
        return torch.sin(x).cos() * 3

    with pytest.raises(BitwiseMismatch, match=r"output\[0\] differs between inductor and aot_eager"):
        assert_bitwise_equal(fn, torch.randn(64, 64), backward=False, backend="inductor")


def test_backward_without_differentiable_output_is_a_clear_error():
    with pytest.raises(ValueError, match="no output requires grad"):
        assert_bitwise_equal(lambda x: x * 2, torch.randn(3), backward=True)


def test_pytest_marker_and_fixture_in_a_user_suite(tmp_path):
    (tmp_path / "test_user.py").write_text(textwrap.dedent("""
        import pytest, torch

        @pytest.mark.lite_bitwise(backward=True)
        def test_block(assert_lite_bitwise):
            block = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.SiLU())
            assert_lite_bitwise(block, torch.randn(2, 4))

        def test_fixture_without_marker(assert_lite_bitwise):
            assert_lite_bitwise(lambda x: torch.tanh(x) + 1, torch.randn(3), backward=False)
    """))
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             str(tmp_path / "test_user.py")], capture_output=True, text=True,
                            timeout=600, cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "2 passed" in result.stdout
