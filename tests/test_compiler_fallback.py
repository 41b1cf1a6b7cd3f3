"""Outside annotated regions, lite mode is bitwise identical to aot_eager (inference and training)."""

import pytest
import torch

import lite_compiler
from compiler_models import ZOO, assert_bitwise, build, run_step

DTYPES = [torch.float32, torch.bfloat16]


def _step(name, dtype, train, backend):
    torch._dynamo.reset()
    model, inputs = build(name, dtype)
    return run_step(model, inputs, torch.compile(model, backend=backend), train)


@pytest.mark.parametrize("train", [True, False], ids=["train", "infer"])
@pytest.mark.parametrize("dtype", DTYPES, ids=["fp32", "bf16"])
@pytest.mark.parametrize("name", list(ZOO))
def test_unannotated_model_is_bitwise_equal_to_aot_eager(name, dtype, train):
    assert_bitwise(_step(name, dtype, train, "lite"), _step(name, dtype, train, "aot_eager"))


def test_mode_lite_uses_the_lite_compiler():
    # A program on which the two lite modes differ: torch's own mode="lite" leaves layout
    # optimization on, so a training step of the zoo's conv net goes channels-last and fails in
    # batch-norm backward (or, without mkldnn, may differ); ours is bitwise aot_eager. And the
    # ledger of THIS compile (cleared first, so no stale one counts) shows our backend ran.
    torch._dynamo.reset()
    lite_compiler.clear_ledgers()
    model, inputs = build("convnet")
    lite = run_step(model, inputs, torch.compile(model, mode="lite"), train=True)
    assert lite_compiler.all_ledgers("lite"), "mode='lite' compiled without our lite backend"
    assert_bitwise(lite, _step("convnet", torch.float32, True, "aot_eager"))


def test_entry_point_target_is_the_backend_function():
    from lite_compiler.backend import lite_backend

    assert callable(lite_backend)
    assert torch._dynamo.lookup_backend("lite") is lite_backend


def test_unannotated_ops_stay_aten_calls_without_inductor():
    torch._dynamo.reset()
    model, inputs = build("llama")
    torch.compile(model, backend="lite")(*inputs)
    ledger = lite_compiler.last_ledger()
    assert "regional_inductor" not in ledger.names()
    (code,) = ledger.graph_code.values()
    # Not decomposed: the composite ops aot_eager keeps are still there.
    assert "torch.ops.aten.mm" in code or "torch.ops.aten.addmm" in code
    assert "_scaled_dot_product" in code
    assert not ledger.region_code


def test_higher_order_ops_fall_back_unless_annotated():
    @torch.compiler.nested_compile_region
    def block(x):
        return torch.sin(x) * 2

    def fn(x, pred):
        y = torch.cond(pred, lambda t: t.cos(), lambda t: t.sin(), (x,))
        return block(y) + block(y * 3)

    x, pred = torch.randn(8, 8), torch.tensor(True)
    torch._dynamo.reset()
    lite = torch.compile(fn, backend="lite", fullgraph=True)(x, pred)
    ledger = lite_compiler.last_ledger()
    torch._dynamo.reset()
    ref = torch.compile(fn, backend="aot_eager", fullgraph=True)(x, pred)
    assert torch.equal(lite, ref)
    (code,) = ledger.graph_code.values()
    assert "torch.ops.higher_order.cond" in code
    assert "torch.ops.higher_order.invoke_subgraph" in code
    assert not ledger.region_code


def test_in_place_mutation_keeps_eager_semantics():
    def fn(x, buf):
        buf.add_(1)
        with lite_compiler.region(id="r"):
            y = (x * buf).relu_()
        x.mul_(2)
        return y

    x, buf = torch.randn(16), torch.randn(16)
    x_ref, buf_ref = x.clone(), buf.clone()
    torch._dynamo.reset()
    out = torch.compile(fn, backend="lite", fullgraph=True)(x, buf)
    expected = fn(x_ref, buf_ref)
    assert torch.equal(out, expected)
    assert torch.equal(x, x_ref) and torch.equal(buf, buf_ref)
    assert lite_compiler.last_ledger().region_code
