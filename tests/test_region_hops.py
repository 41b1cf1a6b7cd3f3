"""Regions and higher-order ops (``torch.cond``, ``torch.compiler.nested_compile_region``).

A region put AROUND the op compiles it with its bodies (Inductor lowers the bodies, decomposed
as the region's own ops are). A region opened INSIDE the body of an op that calls its body as a
plain graph (cond, while_loop, map, nested_compile_region) is compiled in that body; inside any
other op's body (scan, ...) it is reported as a ledger row and a ``LiteRegionNotCompiled``
warning, never silently left uncompiled."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import lite_compiler  # noqa: E402
from lite_compiler import regions  # noqa: E402
from lite_compiler.ledger import all_ledgers, clear_ledgers  # noqa: E402


def _body(a, w):
    return torch.nn.functional.gelu(a @ w).sin() * 2


def _in_region(a, w):
    with lite_compiler.region(id="inner"):
        return _body(a, w)


def _other(a, w):
    return (a @ w).cos()


@torch.compiler.nested_compile_region
def _block(a, w):
    return _body(a, w)


@torch.compiler.nested_compile_region
def _block_with_region(a, w):
    return _in_region(a, w)


def cond_around(x, w):
    with lite_compiler.region(id="outer"):
        return torch.cond(x.sum() > 0, _body, _other, (x, w))


def cond_inside(x, w):
    return torch.cond(x.sum() > 0, _in_region, _other, (x, w))


def nested_around(x, w):
    with lite_compiler.region(id="outer"):
        return _block(_block(x, w), w)


def nested_inside(x, w):
    return _block_with_region(_block_with_region(x, w), w)


def _inputs(device="cpu"):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(8, 16, generator=g)
    x = (x - x.min() + 0.1).to(device).requires_grad_()  # sum > 0: the branch holding the region runs
    return x, torch.randn(16, 16, generator=g).to(device).requires_grad_()


def _run(fn, device="cpu"):
    torch._dynamo.reset()
    clear_ledgers()
    regions._WARNED_NESTED.clear()
    x, w = _inputs(device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = torch.compile(fn, backend="lite")(x, w)
        out.sum().backward()
    ledgers = all_ledgers("lite")
    return out, (x.grad, w.grad), ledgers, [str(c.message) for c in caught
                                            if issubclass(c.category, lite_compiler.LiteRegionNotCompiled)]


def _eager(fn, device="cpu"):
    x, w = _inputs(device)
    out = fn(x, w)
    out.sum().backward()
    return out, (x.grad, w.grad)


def _assert_close_to_eager(fn, out, grads):
    """Region code is Inductor's: close to eager, not bitwise."""
    expected, expected_grads = _eager(fn)
    torch.testing.assert_close(out, expected)
    for got, want in zip(grads, expected_grads):
        torch.testing.assert_close(got, want)


def test_a_region_around_torch_cond_compiles_the_cond_with_its_branches():
    # Failed before in Inductor's lowering ("both a fallback and a decomp for same op:
    # aten.gelu.default"): AOTAutograd traced the branches again without the region's annotation.
    out, grads, ledgers, warned = _run(cond_around)
    region_code = {name: code for ledger in ledgers for name, code in ledger.region_code.items()}
    assert len(region_code) == 2 and not warned  # the forward's region and the backward's
    assert all("/region[outer]/" in name for name in region_code)
    _assert_close_to_eager(cond_around, out, grads)


def test_a_region_around_nested_compile_region_calls_compiles_them_and_warns_nothing():
    out, grads, ledgers, warned = _run(nested_around)
    assert sum(len(ledger.region_code) for ledger in ledgers) == 2 and not warned
    assert not [e for ledger in ledgers for e in ledger if e.kind == "region" and not e.allowed]
    expected, _ = _eager(nested_around)
    torch.testing.assert_close(out, expected)


def test_a_region_inside_a_cond_branch_compiles_in_the_branch():
    # Not scooped before (only a graph's own nodes were): nothing compiled, nothing said.
    out, grads, ledgers, warned = _run(cond_inside)
    names = [name for ledger in ledgers for name in ledger.region_code]
    assert names == [f"{ledgers[0].graph_name}/fw/true_graph_0/region[inner]/0"] and not warned
    _assert_close_to_eager(cond_inside, out, grads)


def test_a_region_inside_a_nested_compile_region_body_compiles_once_for_both_calls():
    out, _, ledgers, warned = _run(nested_inside)
    names = sorted(name.split("/", 1)[1] for ledger in ledgers for name in ledger.region_code)
    assert names == ["bw/partitioned_bw_subgraph_0_0/region[inner]/0",
                     "fw/partitioned_fw_subgraph_0_0/region[inner]/0"] and not warned
    expected, _ = _eager(nested_inside)
    torch.testing.assert_close(out, expected)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="Triton regions need a CUDA device")
@pytest.mark.parametrize("fn, expected_regions", [(cond_around, 2), (nested_around, 2),
                                                  (cond_inside, 1), (nested_inside, 2)],
                         ids=["cond_around", "nested_around", "cond_inside", "nested_inside"])
def test_regions_around_and_inside_higher_order_ops_compile_to_triton_on_gpu(fn, expected_regions):
    out, grads, ledgers, warned = _run(fn, "cuda")
    region_code = [code for ledger in ledgers for code in ledger.region_code.values()]
    assert len(region_code) == expected_regions and not warned
    assert all("@triton.jit" in code for code in region_code)
    expected, expected_grads = _eager(fn, "cuda")
    torch.testing.assert_close(out, expected)
    for got, want in zip(grads, expected_grads):  # fp32 sums in another order than eager's
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def _scan_body(carry, x):
    with lite_compiler.region(id="inner"):
        new = torch.nn.functional.gelu(carry + x)
    return new, new.clone()


def scan_inside(x, w):
    from torch._higher_order_ops.scan import scan

    return scan(_scan_body, torch.zeros_like(x), (x @ w).unsqueeze(0).expand(3, -1, -1))[1].sin()


def test_a_region_inside_a_scan_body_is_reported_not_skipped():
    torch._dynamo.reset()
    clear_ledgers()
    regions._WARNED_NESTED.clear()
    x, w = _inputs()
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = torch.compile(scan_inside, backend="lite")(x, w)
    warned = [str(c.message) for c in caught if issubclass(c.category, lite_compiler.LiteRegionNotCompiled)]
    ledgers = all_ledgers("lite")
    rows = [(e.name, e.reason) for ledger in ledgers for e in ledger if e.kind == "region" and not e.allowed]
    reason = ("region 'inner' is annotated inside the body 'scan_combine_graph_0' of scan; lite mode"
              " compiles regions inside the bodies of cond, while_loop, invoke_subgraph, map_impl"
              " only, so its ops run as ATen ops (the ones the trace decomposed for the region,"
              " decomposed)")
    assert rows == [("region 'inner' in scan_combine_graph_0", reason)]
    assert warned == [f"lite_compiler: {reason}: nothing of it was compiled; put the region around"
                      " the higher-order op instead"]
    assert sum(len(ledger.region_code) for ledger in ledgers) == 0
    torch.testing.assert_close(out, scan_inside(x, w))


def _squared_in_region(score, b, h, q, k):
    with lite_compiler.region(id="score"):
        return score * score


def flex_inside(x):
    from torch.nn.attention.flex_attention import flex_attention

    return flex_attention(x, x, x, score_mod=_squared_in_region).sin()


def test_a_region_whose_annotation_aotautograd_drops_is_reported_as_lost():
    # flex_attention's score_mod is traced again on scalars: the region reaches Dynamo's graph
    # and no graph after it. Nothing was compiled and nothing said so before.
    from lite_compiler import backend

    torch._dynamo.reset()
    clear_ledgers()
    backend._WARNED_LOST.clear()
    x = torch.randn(1, 2, 128, 16, generator=torch.Generator().manual_seed(0))
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = torch.compile(flex_inside, backend="lite")(x)
    warned = [str(c.message) for c in caught if issubclass(c.category, lite_compiler.LiteRegionNotCompiled)]
    (ledger,) = all_ledgers("lite")
    reason = (f"region 'score' is in Dynamo's graph, but none of its ops reached {ledger.graph_name}'s"
              " forward graph with the region's annotation, so nothing of it was compiled:"
              " AOTAutograd's trace dropped the annotation (a region inside a body traced again,"
              " such as flex_attention's score_mod) or the ops (results nothing uses); put the"
              " region around the op instead")
    assert [(e.name, e.reason) for e in ledger if e.kind == "region"] == [("region 'score'", reason)]
    assert warned == [f"lite_compiler: {reason}"] and not ledger.region_code
    with torch.no_grad():
        assert torch.equal(out, torch.compile(flex_inside, backend="aot_eager")(x))
