"""Higher-order ops inside annotated regions: their subgraphs reach the region as get_attr inputs.

flex_attention (score_mod / mask_mod graphs, block-mask tensors), torch.cond branches and
invoke_subgraph bodies are get_attr nodes with no fake "val" in the AOT graph; region extraction
must move them into the region submodule instead of passing them in as runtime inputs.
"""

import pytest
import torch

import lite_compiler
from compiler_models import compile_lite


def _region_code(kind):
    return [code for name, code in lite_compiler.last_ledger().region_code.items() if f"/{kind}/" in name]


def _outer_code(kind):
    ledger = lite_compiler.last_ledger()
    return next(code for name, code in ledger.graph_code.items() if name.endswith(f"/{kind}"))


def test_flex_attention_with_block_mask_and_score_mod_in_a_region():
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    def squared(score, b, h, m, n):
        return score * score

    def mask_mod(b, h, q, k):
        return q >= k

    block_mask = create_block_mask(mask_mod, None, None, 256, 256, device="cpu")

    def fn(x):
        # Distinct q, k, v: torch 2.11's CPU flex lowering refuses one buffer for all three.
        q, k, v = torch.sin(x), torch.cos(x), x * 2
        with torch.fx.traceback.annotate({"compile_with_inductor": 0}):
            x = flex_attention(q, k, v, block_mask=block_mask, score_mod=squared)
        return torch.cos(x)

    x = torch.randn(1, 1, 256, 16, generator=torch.Generator().manual_seed(0))
    out = compile_lite(fn, fullgraph=True)(x)
    (region,) = _region_code("inference")
    outer = _outer_code("inference")
    assert "flex_attention" in region
    assert "get_attr" not in outer and "sdpa_score" not in outer and "sdpa_mask" not in outer
    assert "torch.ops.aten.sin.default" in outer and "torch.ops.aten.cos.default" in outer
    torch.testing.assert_close(out, fn(x), rtol=1e-4, atol=1e-4)


def test_torch_cond_in_a_region_trains_with_both_regions_compiled():
    def fn(x):
        y = x.exp()
        with lite_compiler.region(id="r"):
            y = torch.cond(y.sum() > 0, lambda t: t.cos() + 1, lambda t: t.sin() - 1, (y,))
        return y.relu()

    x = torch.randn(8, requires_grad=True)
    out = compile_lite(fn, fullgraph=True)(x)
    out.sum().backward()
    grad, x.grad = x.grad, None
    fn(x).sum().backward()
    torch.testing.assert_close(out, fn(x))
    torch.testing.assert_close(grad, x.grad)
    assert _region_code("fw") and _region_code("bw")
    for kind in ("fw", "bw"):
        assert "lite_region" in _outer_code(kind) and "true_graph" not in _outer_code(kind)


def test_nested_compile_region_inside_a_region():
    @torch.compiler.nested_compile_region
    def block(t):
        return torch.sin(t) * 2

    def fn(x):
        y = x.exp()
        with lite_compiler.region(id="r"):
            y = block(y) + block(y * 3)
        return y.relu()

    x = torch.randn(8)
    torch.testing.assert_close(compile_lite(fn, fullgraph=True)(x), fn(x))
    assert _region_code("inference")
    assert "subgraph" not in _outer_code("inference")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="flex_attention training needs a GPU")
def test_flex_attention_with_block_mask_trains_in_bf16_on_gpu():
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    def squared(score, b, h, m, n):
        return score * score

    def mask_mod(b, h, q, k):
        return q >= 0

    block_mask = create_block_mask(mask_mod, None, None, 256, 256, device="cuda")

    def fn(x):
        x = torch.sin(x)
        with torch.fx.traceback.annotate({"compile_with_inductor": 0}):
            x = flex_attention(x, x, x, block_mask=block_mask, score_mod=squared)
        return torch.cos(x)

    x = torch.randn(1, 1, 256, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    compile_lite(fn, fullgraph=True)(x).sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()
    assert _region_code("fw") and _region_code("bw")
