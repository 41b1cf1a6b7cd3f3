"""`lite_guard trace`, dynamic and unbacked shapes, GPU-only regions."""

import argparse
import functools
import json

import pytest
import torch

import lite_compiler
from compiler_models import compile_lite

SCRIPT = """
import torch, lite_compiler
def fn(x):
    with lite_compiler.region(id="r"):
        y = x.cos() * 2
    return y.sin()
torch.compile(fn)(torch.randn(8))
"""


def _trace(argv):
    from lite_compiler.commands import trace

    parser = argparse.ArgumentParser()
    trace.register(parser.add_subparsers())
    args = parser.parse_args(["trace", *argv])
    return trace.run(args)


def test_trace_prints_json_ledger_and_html_side_by_side(tmp_path, capsys):
    script, page = tmp_path / "train.py", tmp_path / "trace.html"
    script.write_text(SCRIPT)
    assert _trace(["--json", "--html", str(page), str(script)]) == 0
    report = json.loads(capsys.readouterr().out)
    lite_names = {p["name"] for ledger in report["lite"] for p in ledger["passes"]}
    default_names = {p["name"] for ledger in report["default"] for p in ledger["passes"]}
    assert {"regional_inductor", "fuse_nodes"} <= lite_names
    assert "post_grad_passes" in default_names and "post_grad_passes" not in lite_names
    text = page.read_text()
    assert "default mode (observed)" in text and "lite mode (enforced)" in text and "<script" not in text


@pytest.fixture
def functorch_config_restored():
    """The traced script runs in this process: its config setting must not outlive the test.
    (Not monkeypatch: its undo deletes the attribute, which hides a torch config key.)"""
    import torch._functorch.config as functorch_config

    saved = functorch_config.joint_custom_pass
    yield
    functorch_config.joint_custom_pass = saved


def test_trace_exits_1_and_names_the_refused_pass(tmp_path, capsys, functorch_config_restored):
    script = tmp_path / "bad.py"
    # functorch's joint_custom_pass is a custom hook too (registry): an unregistered pass there
    # is refused by its qualified name.
    script.write_text("def my_joint_pass(gm, inputs):\n    return gm\n"
                      "import torch._functorch.config\n"
                      "torch._functorch.config.joint_custom_pass = my_joint_pass\n" + SCRIPT)
    assert _trace([str(script)]) == 1
    assert ":my_joint_pass" in capsys.readouterr().out


def test_dynamic_shapes_with_a_region_match_eager():
    def fn(x):
        y = x.sin()
        with lite_compiler.region(id="r"):
            y = (y * 2).relu()
        return y.sum(0)

    compiled = compile_lite(fn, dynamic=True, fullgraph=True)
    for n in (5, 9):
        x = torch.randn(n, 4)
        torch.testing.assert_close(compiled(x), fn(x))
    assert lite_compiler.last_ledger().region_code


def _assertion_lines(code):
    return [line.strip() for line in code.splitlines() if "_assert_scalar" in line]


def test_unbacked_shapes_keep_their_assertions():
    """The runtime assertions AOTAutograd emits for the graph survive the region scoop unchanged.

    What AOTAutograd emits depends on the torch release (2.13 keeps torch._check as an
    aten._assert_scalar node; 2.11 drops it already in aot_eager), so the reference is aot_eager's
    own forward graph, captured with aot_eager's exact settings.
    """
    from torch._dynamo.backends.debugging import aot_eager, boxed_nop

    from lite_compiler.config import torch_release

    def fn(x, n):
        k = n.item()
        torch._check(k <= x.shape[0])
        with lite_compiler.region(id="r"):
            y = x.cos() * 2
        return y[:k].sum()

    reference_code = []

    def capture(gm, example_inputs):
        reference_code.append(gm.code)
        return boxed_nop(gm, example_inputs)

    reference = functools.partial(aot_eager, fw_compiler=capture)  # aot_eager, graph captured
    x, n = torch.randn(8), torch.tensor(5)
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        out = compile_lite(fn, fullgraph=True)(x, n)
        ledger = lite_compiler.last_ledger()
        torch._dynamo.reset()
        ref = torch.compile(fn, backend=reference, fullgraph=True)(x, n)
    assert torch.allclose(out, ref)
    (code,) = ledger.graph_code.values()
    (ref_code,) = reference_code
    assert "lite_region" in code
    assert _assertion_lines(code) == _assertion_lines(ref_code), (code, ref_code)
    if torch_release() >= (2, 13):  # where AOTAutograd keeps it, it must be there
        assert any("Runtime assertion failed" in line for line in _assertion_lines(code)), code


@pytest.mark.skipif(not torch.cuda.is_available(), reason="Triton regions need a GPU")
def test_user_triton_kernel_keeps_eager_semantics_on_gpu():
    import triton
    import triton.language as tl

    @triton.jit
    def add_one(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + i, tl.load(x_ptr + i, mask=i < n) + 1, mask=i < n)

    def fn(x):
        out = torch.empty_like(x)
        add_one[(1,)](x, out, x.numel(), BLOCK=128)
        with lite_compiler.region(id="r"):
            return out.cos() * 2

    x = torch.randn(100, device="cuda")
    assert torch.equal(compile_lite(fn, fullgraph=True)(x), fn(x))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="flex_attention regions need a GPU")
def test_flex_attention_region_compiles_on_gpu():
    from torch.nn.attention.flex_attention import flex_attention

    def fn(x):
        x = torch.sin(x)
        with lite_compiler.region(id="attn"):
            x = flex_attention(x, x, x, score_mod=lambda s, b, h, m, n: s * s)
        return torch.cos(x)

    x = torch.randn(1, 1, 128, 64, device="cuda", requires_grad=True)
    compile_lite(fn, fullgraph=True)(x).sum().backward()
    assert any("triton" in code for code in lite_compiler.last_ledger().region_code.values())


def test_trace_command_line_prints_the_ledger_table(tmp_path):
    """The real `lite_guard trace` entry point, as a user types it."""
    import subprocess
    import sys

    script = tmp_path / "script.py"
    script.write_text("import torch, lite_compiler\n"
                      "def f(x):\n"
                      "    with lite_compiler.region(id='r'):\n"
                      "        return x.cos() * 2\n"
                      "torch.compile(f, mode='lite')(torch.randn(4))\n")
    page = tmp_path / "trace.html"
    result = subprocess.run([sys.executable, "-m", "lite_guard", "trace", "--html", str(page), str(script)],
                            capture_output=True, text=True, timeout=600, cwd=tmp_path,
                            env={**__import__("os").environ, "COLUMNS": "200"})
    assert result.returncode == 0, result.stderr[-2000:]
    assert "regional_inductor" in result.stdout and "allowed" in result.stdout
    # The default-mode side really is default mode, although the script asks for mode="lite".
    assert "post_grad_passes" in page.read_text()


@pytest.mark.parametrize("body, message", [
    (None, "no such script"),
    ("raise ValueError('boom')\n", "raised ValueError: boom (in lite mode)"),
    ("import sys\nsys.exit(3)\n", "exited with 3 in lite mode"),
])
def test_trace_of_a_missing_or_failing_script_is_one_line_exit_2(tmp_path, body, message):
    import subprocess
    import sys

    script = tmp_path / "script.py"
    if body is not None:
        script.write_text(body)
    result = subprocess.run([sys.executable, "-m", "lite_guard", "trace", str(script)],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
