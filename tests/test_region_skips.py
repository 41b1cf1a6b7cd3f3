"""A module put into a region whose forward never runs compiles nothing: reported, never silent.

``nn.TransformerEncoderLayer`` in eval under ``no_grad`` takes a fast path (one fused
``_transformer_encoder_layer_fwd``) that calls none of its submodules, so a region on its
attention or its linear layers holds no op. lite_compiler finds such modules by effect (Dynamo's
graph holds the parent's ops but none of the module's) and says so: a ledger row per module and
one ``LiteRegionNotCompiled`` warning.
"""

import sys
import warnings
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import lite_compiler  # noqa: E402
from lite_compiler.testing import assert_bitwise_equal  # noqa: E402


def _encoder():
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, batch_first=True, dropout=0.0)
    return torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)


def _skipped_rows(ledger):
    return sorted(e.name for e in ledger if e.kind == "region" and not e.allowed)


def test_module_skipped_by_a_fast_path_is_reported_in_the_ledger_and_warned():
    torch._dynamo.reset()
    model, x = _encoder().eval(), torch.randn(2, 5, 16)
    with lite_compiler.module_regions(model, [(torch.nn.MultiheadAttention, "attn")]), \
            torch.no_grad(), \
            pytest.warns(lite_compiler.LiteRegionNotCompiled,
                         match=r"module 'layers\.0\.self_attn' \(MultiheadAttention\) is in region"
                               r" 'attn', but none of its ops reached graph\d+/dynamo although its"
                               r" parent 'layers\.0' \(TransformerEncoderLayer\) ran there \(and 1"
                               r" more, listed in lite_compiler.last_ledger\(\)\), so the region"
                               r" compiled nothing: a fast path skipped its forward"):
        out = torch.compile(model, backend="lite")(x)
    ledger = lite_compiler.last_ledger()
    assert _skipped_rows(ledger) == ["region 'attn' module layers.0.self_attn",
                                     "region 'attn' module layers.1.self_attn"]
    assert ledger.region_code == {}  # really nothing compiled: the report is not a false alarm
    with torch.no_grad():
        assert torch.equal(out, model(x))


def test_modules_that_ran_are_not_reported():
    torch._dynamo.reset()
    model, x = _encoder().train(), torch.randn(2, 5, 16)  # train: no fast path
    with lite_compiler.module_regions(model, [(torch.nn.MultiheadAttention, "attn")]), \
            warnings.catch_warnings():
        warnings.simplefilter("error", lite_compiler.LiteRegionNotCompiled)
        torch.compile(model, backend="lite")(x).sum().backward()
    ledger = lite_compiler.last_ledger()
    assert _skipped_rows(ledger) == []
    assert {m for mods in ledger.region_modules.values() for m in mods} == {
        "layers.0.self_attn", "layers.1.self_attn"}


class BreakBeforeChild(torch.nn.Module):
    """The parent's graph ends at a graph break before it calls the child: the child's ops are
    in the next graph, so the first graph must not report it."""

    def __init__(self):
        super().__init__()
        self.first, self.second = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)

    def forward(self, x):
        y = torch.relu(self.first(x))
        torch._dynamo.graph_break()
        return self.second(y)


class Outer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = BreakBeforeChild()

    def forward(self, x):
        return self.inner(x) * 2


@pytest.mark.parametrize("nested", [False, True], ids=["frame_per_module", "nested_graph_breaks"])
def test_child_called_after_a_graph_break_is_not_reported(nested):
    # nested_graph_breaks: Outer's first graph ends inside inner's forward, with inner (the
    # child's parent) still open; its child's ops are in the graph after the break.
    torch._dynamo.reset()
    lite_compiler.clear_ledgers()
    model, x = Outer(), torch.randn(4, 8)
    with lite_compiler.module_regions(model, [("inner.second", "second")]), warnings.catch_warnings(), \
            torch._dynamo.config.patch(nested_graph_breaks=nested):
        warnings.simplefilter("error", lite_compiler.LiteRegionNotCompiled)
        out = torch.compile(model, backend="lite")(x)
    ledgers = lite_compiler.all_ledgers("lite")
    assert all(_skipped_rows(ledger) == [] for ledger in ledgers)
    assert any("inner.second" in mods for ledger in ledgers for mods in ledger.region_modules.values())
    assert torch.allclose(out, model(x))


class CallsForwardDirectly(torch.nn.Module):
    """``self.child.forward(x)`` runs the child without ``__call__``: Dynamo records no module
    call for it, but its ops are in its region."""

    def __init__(self):
        super().__init__()
        self.child = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.child.forward(x)) * 2


def test_child_whose_forward_is_called_directly_is_not_reported():
    torch._dynamo.reset()
    model, x = CallsForwardDirectly(), torch.randn(4, 8)
    with lite_compiler.module_regions(model, [("child", "child")]), warnings.catch_warnings():
        warnings.simplefilter("error", lite_compiler.LiteRegionNotCompiled)
        torch.compile(model, backend="lite")(x)
    ledger = lite_compiler.last_ledger()
    assert _skipped_rows(ledger) == []
    assert any(mods == ["child"] for mods in ledger.region_modules.values())


def test_children_in_the_same_region_as_their_parent_are_not_reported():
    # "layers.*" puts each layer and all its children in region "enc": the attention a fast path
    # skips loses nothing (the fused op is in the layer's region).
    torch._dynamo.reset()
    model, x = _encoder().eval(), torch.randn(2, 5, 16)
    with lite_compiler.module_regions(model, [("layers.*", "enc")]), torch.no_grad(), \
            warnings.catch_warnings():
        warnings.simplefilter("error", lite_compiler.LiteRegionNotCompiled)
        torch.compile(model, backend="lite")(x)
    assert _skipped_rows(lite_compiler.last_ledger()) == []


def test_removed_regions_are_no_longer_checked():
    torch._dynamo.reset()
    model, x = _encoder().eval(), torch.randn(2, 5, 16)
    handle = lite_compiler.module_regions(model, [(torch.nn.MultiheadAttention, "attn")])
    handle.remove()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", lite_compiler.LiteRegionNotCompiled)
        torch.compile(model, backend="lite")(x)
    assert _skipped_rows(lite_compiler.last_ledger()) == []


def test_fast_path_with_regions_reported_is_still_bitwise_equal_to_aot_eager():
    model = _encoder().eval()
    with lite_compiler.module_regions(model, [(torch.nn.MultiheadAttention, "attn")]), \
            torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", lite_compiler.LiteRegionNotCompiled)
        assert_bitwise_equal(model, torch.randn(2, 5, 16), backward=False)


class _CheckpointedBlock(torch.nn.Module):
    """A block whose body runs under ``torch.utils.checkpoint`` (what HF's
    ``gradient_checkpointing_enable`` does to every layer): Dynamo puts the body's ops into a
    subgraph of the checkpoint higher-order op, not into the top-level graph."""

    def __init__(self):
        super().__init__()
        self.ffn = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(),
                                       torch.nn.Linear(16, 8))
        self.drop = torch.nn.Dropout(0.1)

    def _body(self, x):
        return x + self.drop(self.ffn(x))

    def forward(self, x):
        return torch.utils.checkpoint.checkpoint(self._body, x, use_reentrant=False)


def test_module_inside_an_activation_checkpoint_is_not_reported_as_skipped():
    torch._dynamo.reset()
    model, x = torch.nn.Sequential(_CheckpointedBlock(), _CheckpointedBlock()).train(), \
        torch.randn(4, 8)
    with lite_compiler.module_regions(model, [("*.ffn", "ffn")]), warnings.catch_warnings():
        warnings.simplefilter("error", lite_compiler.LiteRegionNotCompiled)
        torch.compile(model, backend="lite")(x).sum().backward()
    ledger = lite_compiler.last_ledger()
    assert _skipped_rows(ledger) == []
    assert ledger.region_code  # the regions did compile: a report would have been a false alarm
