"""Regions and higher-order ops (``torch.cond``, ``torch.compiler.nested_compile_region``).

A region put AROUND the op compiles it with its bodies (Inductor lowers the bodies, decomposed
as the region's own ops are). A region opened INSIDE a body is not compiled (only a graph's own
nodes are scooped): reported as a ledger row and a ``LiteRegionNotCompiled`` warning, never
silent."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

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


def _inputs():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(8, 16, generator=g)
    x = (x - x.min() + 0.1).requires_grad_()  # sum > 0: the branch holding the region runs
    return x, torch.randn(16, 16, generator=g, requires_grad=True)


def _run(fn):
    torch._dynamo.reset()
    clear_ledgers()
    regions._WARNED_NESTED.clear()
    x, w = _inputs()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = torch.compile(fn, backend="lite")(x, w)
        out.sum().backward()
    ledgers = all_ledgers("lite")
    return out, (x.grad, w.grad), ledgers, [str(c.message) for c in caught
                                            if issubclass(c.category, lite_compiler.LiteRegionNotCompiled)]


def _eager(fn):
    x, w = _inputs()
    out = fn(x, w)
    out.sum().backward()
    return out, (x.grad, w.grad)


def test_a_region_around_torch_cond_compiles_the_cond_with_its_branches():
    # Failed before in Inductor's lowering ("both a fallback and a decomp for same op:
    # aten.gelu.default"): AOTAutograd traced the branches again without the region's annotation.
    out, grads, ledgers, warned = _run(cond_around)
    region_code = {name: code for ledger in ledgers for name, code in ledger.region_code.items()}
    assert len(region_code) == 2 and not warned  # the forward's region and the backward's
    assert all("/region[outer]/" in name for name in region_code)
    expected, expected_grads = _eager(cond_around)
    torch.testing.assert_close(out, expected)
    for got, want in zip(grads, expected_grads):
        torch.testing.assert_close(got, want)


def test_a_region_around_nested_compile_region_calls_compiles_them_and_warns_nothing():
    out, grads, ledgers, warned = _run(nested_around)
    assert sum(len(ledger.region_code) for ledger in ledgers) == 2 and not warned
    assert not [e for ledger in ledgers for e in ledger if e.kind == "region" and not e.allowed]
    expected, _ = _eager(nested_around)
    torch.testing.assert_close(out, expected)


def test_a_region_inside_a_cond_branch_is_reported_not_skipped():
    _, _, ledgers, warned = _run(cond_inside)
    rows = [(e.name, e.graph, e.reason) for ledger in ledgers for e in ledger
            if e.kind == "region" and not e.allowed]
    reason = ("region 'inner' is annotated inside the body 'true_graph_0' of cond; regions are"
              " compiled in the graph's own nodes only, so its ops run as ATen ops (the ones the"
              " trace decomposed for the region, decomposed)")
    assert [(name, reason_) for name, _, reason_ in rows] == [("region 'inner' in true_graph_0", reason)]
    assert rows[0][1].endswith("/fw")
    assert warned == [f"lite_compiler: {reason}: nothing of it was compiled; put the region around"
                      " the higher-order op (the whole torch.cond or nested region call) instead"]
    assert sum(len(ledger.region_code) for ledger in ledgers) == 0


def test_a_region_inside_a_nested_compile_region_body_is_reported_for_forward_and_backward():
    _, _, ledgers, warned = _run(nested_inside)
    rows = sorted((e.name, e.graph.rsplit("/", 1)[-1]) for ledger in ledgers for e in ledger
                  if e.kind == "region" and not e.allowed)
    assert rows == [("region 'inner' in partitioned_bw_subgraph_0_0", "bw"),
                    ("region 'inner' in partitioned_fw_subgraph_0_0", "fw")]
    assert len(warned) == 2 and all("of invoke_subgraph;" in w for w in warned)
