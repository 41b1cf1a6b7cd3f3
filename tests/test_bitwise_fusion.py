"""Bitwise pointwise fusion outside regions: options={"bitwise_fusion": True}.

Every test compiles real functions with backend="lite" and compares outputs and gradients with
backend="aot_eager" by torch.equal; the ledger and the generated code show what was fused and what
fell back, and why. On CPU, Inductor's C++ code is bitwise equal to ATen for most of these ops in
fp32 (add, mul, sub, where, rsqrt, casts, relu) and not for fp32 exp (a different exp polynomial):
that is the real non-bitwise signature the fallback tests use, found by the checker itself. In
bf16 on CPU most arithmetic is not bitwise (NaN payloads where ATen runs a scalar tail loop);
comparisons and where are.
"""

from __future__ import annotations

import pytest
import torch

import lite_compiler
from lite_compiler import bitwise_check
from lite_compiler.bitwise_fusion import candidate, convex, find_groups

FUSION = {"bitwise_fusion": True}


@pytest.fixture(autouse=True, scope="module")
def _own_verdict_cache(tmp_path_factory):
    """These tests keep their verdicts in a cache of their own, never the user's; tests that must
    see a check run forget the verdicts held in memory (bitwise_check.forget_verdicts)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LITE_GUARD_CACHE_DIR", str(tmp_path_factory.mktemp("verdicts")))
        bitwise_check.forget_verdicts()
        yield
    bitwise_check.forget_verdicts()


def _fusion_rows():
    return [e for e in lite_compiler.last_ledger("lite").entries if e.kind == "fusion"]


def _fused(rows):
    return [e for e in rows if e.stage == "runtime" and e.allowed]


def _fell_back(rows):
    return [e for e in rows if e.stage == "runtime" and not e.allowed]


def _grads_and_outputs(fn, make_inputs, steps: int = 1):
    """Outputs and input grads of ``steps`` calls of ``fn`` on fresh inputs each."""
    results = []
    for step in range(steps):
        # With CUDA graphs a replay overwrites the last step's outputs: mark each step, keep copies.
        torch.compiler.cudagraph_mark_step_begin()
        inputs = make_inputs(step)
        out = fn(*inputs)
        out.float().sum().backward()
        results.append((out.detach().clone(), *(t.grad.clone() for t in inputs if t.requires_grad)))
    return results


def _assert_bitwise(a, b):
    assert len(a) == len(b)
    for step_a, step_b in zip(a, b):
        assert len(step_a) == len(step_b)
        for x, y in zip(step_a, step_b):
            assert x.dtype == y.dtype and torch.equal(x, y)


def _compare(fn, make_inputs, options=FUSION, steps: int = 2):
    torch._dynamo.reset()
    ours = _grads_and_outputs(torch.compile(fn, backend="lite", options=options), make_inputs, steps)
    ledger = lite_compiler.last_ledger("lite")
    torch._dynamo.reset()
    reference = _grads_and_outputs(torch.compile(fn, backend="aot_eager"), make_inputs, steps)
    _assert_bitwise(ours, reference)
    return ledger


def _chain(x, y, w):
    """add/mul/sub/where/rsqrt and casts around one matmul: pointwise groups fw and bw."""
    a = (x * y + 1.5).rsqrt()
    b = torch.where(a > 0.25, a, x - y)
    h = b.to(torch.bfloat16).to(x.dtype) @ w
    return torch.relu(h) * 0.5 - h


def _chain_inputs(dtype):
    def make(step):
        gen = torch.Generator().manual_seed(step)
        x = torch.rand(32, 48, generator=gen).to(dtype).requires_grad_()
        y = torch.rand(32, 48, generator=gen).to(dtype).requires_grad_()
        w = torch.randn(48, 16, generator=gen).to(dtype).requires_grad_()
        return x, y, w
    return make


def _signature_rows(allowed: bool):
    return [e for e in _fusion_rows() if e.stage == "fusion" and e.allowed == allowed
            and e.name.startswith("bitwise_fusion aten.")]


def test_pointwise_chains_fuse_and_stay_bitwise_equal_to_aot_eager():
    ledger = _compare(_chain, _chain_inputs(torch.float32))
    rows = _fusion_rows()
    fused = _fused(rows)
    assert not _fell_back(rows), [e.reason for e in _fell_back(rows)]
    # Forward and backward both fused, each group a region with Inductor code of its own.
    assert any(e.graph.split("/")[1] == "fw" for e in fused), [e.graph for e in fused]
    assert any(e.graph.split("/")[1] == "bw" for e in fused), [e.graph for e in fused]
    assert all(e.graph in ledger.region_code for e in fused)
    assert any("aten.rsqrt.default" in e.reason and "aten.where.self" in e.reason for e in fused)
    fw_code = next(code for name, code in ledger.graph_code.items() if name.endswith("/fw"))
    assert "__lite_region_" in fw_code  # the groups are region calls in the graph that runs
    assert "torch.ops.aten.rsqrt" not in fw_code
    # Each fused signature says what its verdict rests on: fp32 binary ops on CPU are sampled.
    add = [e for e in _signature_rows(True) if "aten.add.Tensor(float32[2d], float32[2d])" in e.name]
    assert add and "not proven: sampled 1,048,576 random input bit patterns" in add[0].reason
    # NaN - NaN: ATen's vector code keeps the second NaN, Inductor's the first (found by sampling).
    sub = [e for e in _signature_rows(False) if "aten.sub.Tensor(float32[2d], float32[2d])" in e.name]
    assert sub and "outputs differ, e.g. inputs (0x" in sub[0].reason


def test_bf16_chains_stay_bitwise_and_unary_signatures_are_checked_exhaustively():
    """On CPU, Inductor's C++ code rounds every bf16 NaN to 0xffff when it converts through
    float (ATen keeps a NaN's payload or writes 0x7fc0), so checked on all 65,536 bit patterns
    most bf16 ops are not bitwise there and stay ATen, each with its reason; the result is still
    aot_eager's, bit for bit."""
    _compare(_chain, _chain_inputs(torch.bfloat16))
    refused = _signature_rows(False)
    rsqrt = [e for e in refused if e.name.startswith("bitwise_fusion aten.rsqrt.default(bfloat16")]
    assert rsqrt and "they refused it: not enumerated" in rsqrt[0].reason  # (NaN in the tail)
    assert any("exhaustive over all 65,536 input bit-pattern combinations" in e.reason
               for e in _signature_rows(True) + refused)  # a unary bf16 op the stress values passed
    where = [e for e in refused if e.name.startswith("bitwise_fusion aten.where.self(bool[2d], bfloat16")]
    assert where and "outputs differ, e.g. inputs (" in where[0].reason
    assert not _fell_back(_fusion_rows())


def test_a_small_mlp_trains_bitwise_equal_to_aot_eager_with_groups_fused():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(24, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))

    def loss_of(m, x, target):
        return ((m(x) - target) ** 2 * 0.5 + m[0].weight.abs().mean() * 1e-3).mean()

    def train(backend, options=None):
        torch._dynamo.reset()
        m = torch.nn.Sequential(torch.nn.Linear(24, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))
        m.load_state_dict(model.state_dict())
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        step = torch.compile(loss_of, backend=backend, **({"options": options} if options else {}))
        gen = torch.Generator().manual_seed(1)
        losses, ledger = [], None
        for _ in range(3):
            x, target = torch.randn(16, 24, generator=gen), torch.randn(16, 8, generator=gen)
            opt.zero_grad()
            loss = step(m, x, target)
            loss.backward()
            opt.step()
            losses.append(loss.detach())
            ledger = ledger or (lite_compiler.last_ledger("lite") if backend == "lite" else None)
        return losses, [p.detach().clone() for p in m.parameters()], ledger

    ours_losses, ours_params, ledger = train("lite", FUSION)
    ref_losses, ref_params, _ = train("aot_eager")
    assert all(torch.equal(a, b) for a, b in zip(ours_losses, ref_losses))
    assert all(torch.equal(a, b) for a, b in zip(ours_params, ref_params))
    fused = [e for e in ledger.entries if e.kind == "fusion" and e.stage == "runtime" and e.allowed]
    assert {e.graph.split("/")[1] for e in fused} == {"fw", "bw"}, [e.graph for e in fused]


def _with_exp(x, y):
    return (torch.exp(x * 0.5) * y + 1.0) * 2.0 - y


def _exp_inputs(step):
    gen = torch.Generator().manual_seed(step)
    return (torch.randn(40, 64, generator=gen).requires_grad_(),
            torch.randn(40, 64, generator=gen).requires_grad_())


def test_a_signature_that_is_not_bitwise_stays_aten_with_its_reason_in_the_ledger(monkeypatch):
    monkeypatch.setenv("LITE_GUARD_VERDICT_CACHE", "0")  # the check itself must run here,
    bitwise_check.forget_verdicts()  # not a verdict cached on disk or in memory
    ledger = _compare(_with_exp, _exp_inputs)
    rows = [e for e in _fusion_rows() if e.stage == "fusion" and not e.allowed]
    exp_rows = [e for e in rows if e.name == "bitwise_fusion aten.exp.default(float32[2d]) on cpu"]
    assert exp_rows, [e.name for e in rows]
    assert "signature not bitwise" in exp_rows[0].reason
    assert "elements differ in bits" in exp_rows[0].reason
    fw_code = next(code for name, code in ledger.graph_code.items() if name.endswith("/fw"))
    assert "torch.ops.aten.exp.default" in fw_code  # still the ATen op
    assert _fused(_fusion_rows())  # the ops around it still fuse


def test_a_group_whose_first_call_differs_from_aten_falls_back_for_good():
    """With the signature check off (a documented option), exp joins a group; the group's
    first-call check finds the bits that differ and the group runs ATen from then on."""
    options = {"bitwise_fusion": True, "bitwise_fusion_signature_check": False}
    ledger = _compare(_with_exp, _exp_inputs, options=options, steps=3)
    rows = _fusion_rows()
    back = [e for e in _fell_back(rows) if "aten.exp.default" in e.reason]
    assert back, [e.reason for e in rows]
    assert "fell back to ATen" in back[0].reason and "elements differ in bits" in back[0].reason
    assert back[0].graph in ledger.region_code  # it was compiled; the check refused it
    # Decided once: one runtime row per group, however many calls followed.
    assert len([e for e in rows if e.graph == back[0].graph and e.stage == "runtime"]) == 1


def test_identical_groups_in_one_graph_share_one_compile():
    def twice(x, y, w):  # the same chain on two inputs: two identical groups per graph
        return _chain(x, y, w) + _chain(y, x, w)

    ledger = _compare(twice, _chain_inputs(torch.float32), steps=1)
    rows = [e for e in _fusion_rows() if e.stage == "fusion" and e.allowed and e.name == "bitwise_fusion"]
    reused = [e for e in rows if "reuses the Inductor code of" in e.reason]
    assert reused, [e.reason for e in rows]
    first = reused[0].reason.split("reuses the Inductor code of ")[1].split(" ")[0]
    assert first in ledger.region_code and first != reused[0].graph
    assert len(_fused(_fusion_rows())) == len(rows)  # each group still checked on its first call


def test_verdicts_are_kept_in_an_authenticated_cache_and_a_forged_entry_is_not_read(tmp_path, monkeypatch):
    from lite_compiler.verdict_cache import LAYOUT

    monkeypatch.setenv("LITE_GUARD_CACHE_DIR", str(tmp_path / "cache"))
    bitwise_check.forget_verdicts()

    def rows():
        return {e.name: e.reason for e in _signature_rows(True) + _signature_rows(False)}

    _compare(_with_exp, _exp_inputs, steps=1)
    first = rows()
    assert first and not any("read back" in reason for reason in first.values())
    entries = sorted((tmp_path / "cache" / LAYOUT).glob("*.json"))
    assert entries and all(e.stat().st_mode & 0o077 == 0 for e in entries)

    bitwise_check.forget_verdicts()  # a new process, as far as verdicts go
    _compare(_with_exp, _exp_inputs, steps=1)
    assert rows().keys() == first.keys()
    assert all("read back from the authenticated verdict cache" in r for r in rows().values())

    for entry in entries:  # every verdict rewritten as "bitwise, proven", without the secret
        data = entry.read_bytes()
        forged = data[:32] + data[32:].replace(b'"bitwise": false', b'"bitwise": true').replace(
            b'"proven": false', b'"proven": true')
        assert forged != data
        entry.write_bytes(forged)
    bitwise_check.forget_verdicts()
    _compare(_with_exp, _exp_inputs, steps=1)
    assert not any("read back" in reason for reason in rows().values())
    assert any(name.startswith("bitwise_fusion aten.exp.default") for name, _ in
               ((e.name, e) for e in _signature_rows(False)))


def test_proven_mode_fuses_only_signatures_checked_on_every_bit_pattern():
    """fp32 binary ops are only sampled on CPU: bitwise_fusion="proven" leaves them ATen."""
    _compare(_chain, _chain_inputs(torch.float32), options={"bitwise_fusion": "proven"}, steps=1)
    refused = _signature_rows(False)
    add = [e for e in refused if "aten.add.Tensor(float32[2d], float32[2d])" in e.name]
    assert add and "bitwise but not proven (sampled" in add[0].reason
    assert "fuses proven signatures only" in add[0].reason
    assert not [e for e in _signature_rows(True) if "not proven" in e.reason]


def test_without_the_option_nothing_is_fused():
    torch._dynamo.reset()
    torch.compile(_chain, backend="lite")(*_chain_inputs(torch.float32)(0))
    assert _fusion_rows() == []
    assert lite_compiler.last_ledger("lite").region_code == {}


def test_mode_lite_takes_the_option():
    torch._dynamo.reset()
    torch.compile(_chain, mode="lite", options=FUSION)(*_chain_inputs(torch.float32)(0))
    assert _fused(_fusion_rows())


@pytest.mark.parametrize(("options", "message"), [
    ({"bitwise_fusoin": True}, "lite mode has no option 'bitwise_fusoin'"),
    ({"bitwise_fusion": 1}, "lite option 'bitwise_fusion' must be a bool or \"proven\", got 1"),
    ({"bitwise_fusion_signature_check": False},
     "lite option 'bitwise_fusion_signature_check' only applies with 'bitwise_fusion': True"),
    ({"bitwise_fusion": "proven", "bitwise_fusion_signature_check": False},
     "needs 'bitwise_fusion_signature_check': True"),
    ({"bitwise_fusion": "maybe"}, "lite option 'bitwise_fusion' must be a bool or \"proven\""),
])
def test_option_errors_are_one_line(options, message):
    with pytest.raises(lite_compiler.LiteConfigError, match=message) as caught:
        torch.compile(_chain, mode="lite", options=options)
    assert "\n" not in str(caught.value)


def test_regions_and_fusion_groups_stay_apart():
    def f(x, y, w):
        with lite_compiler.region(id="norm"):
            x = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6)
        return _chain(x, y, w)

    # A user region is Inductor's own numerics (close to aot_eager, not bitwise): compare with
    # lite mode without fusion, which runs the same region.
    make = _chain_inputs(torch.float32)
    torch._dynamo.reset()
    plain = _grads_and_outputs(torch.compile(f, backend="lite"), make, 2)
    torch._dynamo.reset()
    fused = _grads_and_outputs(torch.compile(f, backend="lite", options=FUSION), make, 2)
    _assert_bitwise(plain, fused)
    ledger = lite_compiler.last_ledger("lite")
    assert any("region[norm]" in name for name in ledger.region_code)
    assert _fused(_fusion_rows())
    assert all("region[norm]" not in e.graph for e in _fusion_rows())


def test_the_outer_effect_check_still_refuses_a_change_outside_the_groups(monkeypatch):
    """Fused nodes are region nodes; every other node must still be AOTAutograd's. A pass
    planted into the region fuser (as in test_guard_mutations) rewrites ``exp(x) * 2``, which
    stays outside every group (fp32 exp is not bitwise here, a lone mul is no group)."""
    import torch.fx.passes.utils.fuser_utils as fuser_utils

    aten = torch.ops.aten
    original = fuser_utils.fuse_by_partitions
    planted = []

    def fuse_by_partitions(gm, *args, **kwargs):
        result = original(gm, *args, **kwargs)
        for node in gm.graph.nodes:
            if node.target is aten.mul.Tensor and node.args[1:] == (2,):
                node.args = (node.args[0], node.args[0])
                node.target = aten.add.Tensor  # x * 2 -> x + x: bitwise the same, still refused
                planted.append(node.name)
        gm.recompile()
        return result

    def f(x):
        return torch.exp(x) * 2, (x + 1.0) * 3.0 - x

    monkeypatch.setattr(fuser_utils, "fuse_by_partitions", fuse_by_partitions)
    torch._dynamo.reset()
    with pytest.raises(lite_compiler.LitePassViolation, match="not the graph AOTAutograd produced"):
        torch.compile(f, backend="lite", options=FUSION)(torch.randn(8, 16))
    assert planted


# ---- grouping, by structure ---------------------------------------------------------------------

def _traced(fn, *args):
    from torch.fx.experimental.proxy_tensor import make_fx

    return make_fx(fn)(*args)


def test_groups_are_convex_connected_and_skip_non_pointwise_ops():
    def f(x):
        a = x * 2.0  # pointwise
        b = a.sum(-1, keepdim=True)  # a reduction: not a candidate
        c = a + b  # a path a -> b -> c leaves {a, c} and comes back: they cannot share a group
        d = torch.bernoulli(torch.sigmoid(x))  # seeded random: never fused
        return c - 1.0, d

    gm = _traced(f, torch.randn(4, 8))
    fusible = {n for n in gm.graph.nodes if candidate(n)}
    assert sorted(str(n.target) for n in fusible) == [
        "aten.add.Tensor", "aten.mul.Tensor", "aten.sigmoid.default", "aten.sub.Tensor"]
    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    mul, add = (next(n for n in fusible if str(n.target) == t) for t in ("aten.mul.Tensor", "aten.add.Tensor"))
    assert not convex(gm, {mul, add}, order)
    groups = find_groups(gm, fusible)
    assert [[str(n.target) for n in g] for g in groups] == [["aten.add.Tensor", "aten.sub.Tensor"]]


def test_views_copies_fills_and_cats_are_recognised_by_schema_and_by_a_probe():
    """Data movement joins groups by structure (an aliasing schema) or by effect (the probe:
    the output holds only input elements and constants, from the same places in two draws),
    never by name; sums, scans, sorts, products and index lookups are no movers."""
    from lite_compiler.bitwise_fusion import kind

    def f(x, y, i):
        moved = (torch.cat([x, y], 1), torch.ops.aten.slice_backward(x, [4, 16], 1, 0, 8, 1),
                 x.t().contiguous(), torch.full((3, 3), 2.5), torch.nn.functional.pad(x, (1, 1), value=-3.0),
                 x.flip(0), x.new_zeros(5), x.repeat(2, 1), torch.ops.aten.slice_scatter(x, y, 1, 0, 8))
        computed = (x.sum(1), torch.sort(x, 1).values, x.cumsum(1), x @ y.t(), x.amax(1),
                    torch.nn.functional.embedding(i, x), torch.arange(5.0))
        return moved, computed

    gm = _traced(f, torch.randn(4, 8), torch.randn(4, 8), torch.tensor([0, 1]))
    kinds = {str(n.target): kind(n) for n in gm.graph.nodes if n.op == "call_function"}
    for op in ("aten.cat.default", "aten.slice_backward.default", "aten.full.default",
               "aten.constant_pad_nd.default", "aten.flip.default", "aten.new_zeros.default",
               "aten.repeat.default", "aten.slice_scatter.default"):
        assert kinds[op] == "mover", (op, kinds[op])
    assert kinds["aten.t.default"] == "view"
    assert kinds["aten.clone.default"] == "pointwise"  # (torch tags clone pointwise)
    computing = [op for op in kinds if op.startswith(("aten.sum.", "aten.sort.", "aten.cumsum.",
                                                      "aten.mm.", "aten.amax.", "aten.embedding.", "aten.arange."))]
    assert len(computing) == 7 and all(kinds[op] is None for op in computing), kinds


def test_the_probe_never_runs_an_op_outside_aten():
    """The probe runs the op: a custom op (or a collective) might act beyond its result, so only
    ATen's own are probed; a custom op that copies its input is no mover, and it never ran."""
    from lite_compiler.bitwise_fusion import kind

    calls = []

    @torch.library.custom_op("lite_guard_test::copy_and_count", mutates_args=())
    def copy_and_count(x: torch.Tensor) -> torch.Tensor:
        calls.append(1)
        return x.clone()

    @copy_and_count.register_fake
    def _(x):
        return torch.empty_like(x)

    gm = _traced(lambda x: copy_and_count(x) * 2.0, torch.randn(4, 8))
    calls.clear()
    node = next(n for n in gm.graph.nodes if "copy_and_count" in str(n.target))
    assert kind(node) is None and calls == []


def test_a_view_at_a_groups_edge_is_left_out_and_a_group_must_save_a_kernel():
    def f(x, w):
        h = (x * 2.0 + 1.0).view(8, 4) @ w  # the view only feeds the matmul: not in the group
        return h.t() * 3.0  # one op and a view: no kernel saved, no group

    gm = _traced(f, torch.randn(4, 8), torch.randn(4, 4))
    fusible = {n for n in gm.graph.nodes if candidate(n)}
    groups = find_groups(gm, fusible)
    assert [[str(n.target) for n in g] for g in groups] == [["aten.mul.Tensor", "aten.add.Tensor"]]


def _rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _rotary(q, cos, sin):
    """HF Llama's rotary embedding around attention's transposes: slices, a cat, and in the
    backward two slice_backward (a zero fill and a copy each) between pointwise ops."""
    q = q.transpose(1, 2)
    out = q * cos + _rotate_half(q) * sin
    return out.transpose(1, 2).reshape(q.shape[0], q.shape[2], -1) * 2.0


def _rotary_inputs(dtype):
    def make(step):
        gen = torch.Generator().manual_seed(step)
        return (torch.randn(2, 64, 4, 32, generator=gen).to(dtype).requires_grad_(),
                torch.randn(64, 32, generator=gen).to(dtype), torch.randn(64, 32, generator=gen).to(dtype))
    return make


def test_slices_cat_and_slice_backward_fuse_with_the_pointwise_ops_around_them_bitwise():
    ledger = _compare(_rotary, _rotary_inputs(torch.float32))
    rows = _fusion_rows()
    assert not _fell_back(rows), [e.reason for e in _fell_back(rows)]
    fused = [e.reason for e in _fused(rows)]
    assert any("aten.cat.default" in r and "aten.neg.default" in r and "aten.slice.Tensor" in r
               for r in fused), fused
    assert any(r.count("aten.slice_backward.default") == 2 and "aten.add.Tensor" in r for r in fused), fused
    for name, code in ledger.graph_code.items():  # neither runs as an ATen op any more
        assert "aten.cat.default" not in code and "aten.slice_backward" not in code, (name, code)
    cat = [e for e in _signature_rows(True) if e.name.startswith("bitwise_fusion aten.cat.default(")]
    assert cat and "float32[2x4x64x16]" in cat[0].name  # checked at its real shapes
    assert "distinct bit patterns moved at its real shapes and strides" in cat[0].reason


def test_a_mover_whose_inductor_code_changes_nan_payloads_is_refused_by_its_real_shape_check(monkeypatch):
    """On CPU, Inductor's C++ code for bf16 slice_backward writes every NaN as 0xffff where ATen
    copies the bits: the check at its real shapes, with every bf16 bit pattern moved through
    each input, finds it; cat's code copies them and is proven. The result stays aot_eager's."""
    monkeypatch.setenv("LITE_GUARD_VERDICT_CACHE", "0")
    bitwise_check.forget_verdicts()
    _compare(_rotary, _rotary_inputs(torch.bfloat16))
    refused = [e for e in _signature_rows(False)
               if e.name.startswith("bitwise_fusion aten.slice_backward.default(bfloat16[2x4x64x16]")]
    assert refused and "Inductor nan (0xffff)" in refused[0].reason, [e.name for e in _signature_rows(False)]
    assert "every bit pattern of each input moved" in refused[0].reason
    cat = [e for e in _signature_rows(True) if e.name.startswith("bitwise_fusion aten.cat.default(")]
    assert cat and "signature bitwise, proven: every bit pattern of each input moved" in cat[0].reason
    assert "65,536 of 65,536; 65,536 of 65,536" in cat[0].reason


def test_silu_backward_decomposes_as_atens_cuda_functor_in_cuda_groups_only():
    """In a CUDA group, silu_backward is a real division and an fma (addcmul), as ATen's CUDA
    functor computes it, not torch's sigmoid-based decomposition; on other devices, Inductor's
    own table. (The GPU tests judge it on all 2^32 bf16 pairs.)"""
    from torch._inductor.decomposition import select_decomp_table

    from lite_compiler.faithful_decompositions import decomposition_table

    # As torch 2.11's table is read without emulate_precision_casts: addcmul decomposed into a
    # mul and an add, which would round the product the fma must not round.
    addcmul = torch.ops.aten.addcmul.default
    base = {**select_decomp_table(), addcmul: torch._decomp.decomposition_table[addcmul]}
    silu_bw = torch.ops.aten.silu_backward.default
    cpu = decomposition_table(base, {"cpu"})  # (on CPU only the loss-tail composites: their own rows)
    assert {op for op in cpu if cpu[op] is not base.get(op)} <= {
        torch.ops.aten.nll_loss_backward.default, torch.ops.aten._log_softmax_backward_data.default}
    assert cpu[silu_bw] is base[silu_bw] and cpu[addcmul] is base[addcmul]
    assert decomposition_table(base, {"cpu", "cuda"}) is base
    cuda = decomposition_table(base, {"cuda"})
    assert cuda[silu_bw] is not base[silu_bw] and addcmul not in cuda
    from torch.fx.experimental.proxy_tensor import make_fx

    gen = torch.Generator().manual_seed(0)
    dy, x = (torch.randn(64, generator=gen).to(torch.bfloat16) for _ in range(2))
    gm = make_fx(lambda a, b: silu_bw(a, b), decomposition_table=cuda)(dy, x)
    ops = {str(n.target) for n in gm.graph.nodes if n.op == "call_function"}
    assert {"aten.addcmul.default", "aten.div.Tensor", "aten.exp.default"} <= ops
    assert "aten.sigmoid.default" not in ops
    assert torch.equal(gm(dy, x), silu_bw(dy, x))  # the same values on CPU too, here
    # relu as ATen's CUDA clamp_min: a NaN as it is, -0.0 -> +0.0 (Inductor's maximum keeps -0.0)
    relu = make_fx(lambda a: torch.ops.aten.relu.default(a), decomposition_table=cuda)
    special = torch.tensor([-0.0, 0.0, -1.0, 2.0, float("nan"), float("-inf")])
    got = relu(special)(special)
    assert got[0].item() == 0.0 and not got[0].signbit() and got[4].isnan() and got[5] == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name", ["llama", "moe"])
def test_zoo_models_train_bitwise_equal_to_aot_eager_with_data_movement_fused(name, dtype):
    """The zoo's llama block (rotary cat, RMSNorm, SwiGLU) and mixture of experts, two training
    steps: every output and grad torch.equal to aot_eager, groups fused, none fell back."""
    from compiler_models import build, run_step

    results = {}
    for backend in ("aot_eager", "lite"):
        torch._dynamo.reset()
        model, inputs = build(name, dtype)
        fn = torch.compile(model, backend=backend, **({"options": FUSION} if backend == "lite" else {}))
        results[backend] = [run_step(model, tuple(t * (1 + step) for t in inputs), fn, train=True)
                            for step in range(2)]
        if backend == "lite":
            rows = _fusion_rows()
    for (out_a, grads_a), (out_b, grads_b) in zip(results["aot_eager"], results["lite"]):
        assert torch.equal(out_a, out_b) and len(grads_a) == len(grads_b)
        assert all(torch.equal(a, b) for a, b in zip(grads_a, grads_b))
    assert _fused(rows) and not _fell_back(rows), [e.reason for e in _fell_back(rows)]


# ---- GPU (the lead runs these on the H200) -------------------------------------------------------

def _cuda_chain_inputs(dtype):
    def make(step):
        gen = torch.Generator(device="cuda").manual_seed(step)
        x = torch.rand(64, 96, device="cuda", generator=gen).to(dtype).requires_grad_()
        y = torch.rand(64, 96, device="cuda", generator=gen).to(dtype).requires_grad_()
        w = torch.randn(96, 32, device="cuda", generator=gen).to(dtype).requires_grad_()
        return x, y, w
    return make


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("cudagraphs", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gpu_fusion_is_bitwise_equal_to_aot_eager(dtype, cudagraphs):
    options = {**FUSION, "cudagraphs": cudagraphs}
    ledger = _compare(_chain, _cuda_chain_inputs(dtype), options=options, steps=4)
    fused = _fused(_fusion_rows())
    if dtype == torch.float32 or fused:
        assert fused and any("triton" in ledger.region_code[e.graph] for e in fused)
    else:  # nothing fused: every signature that kept it from fusing says why
        assert all(e.reason for e in _signature_rows(False)), _fusion_rows()
    if cudagraphs:
        rows = {e.graph.split("/")[-1]: e for e in ledger.entries if e.kind == "cudagraphs"}
        assert rows["fw"].allowed and rows["bw"].allowed, rows


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_gpu_bf16_neg_is_checked_by_effect():
    """On the H200, bf16 neg is not bitwise (NaN sign); whatever this GPU does, the result is."""
    def f(x, y):
        return (-(x * y) + 1.0) * y

    def make(step):
        gen = torch.Generator(device="cuda").manual_seed(step)
        return tuple(torch.randn(64, 96, device="cuda", generator=gen, dtype=torch.bfloat16)
                     .requires_grad_() for _ in range(2))

    _compare(f, make, steps=2)
    assert _fusion_rows()


def test_lite_guard_trace_shows_fused_groups_and_signatures_that_fell_back(tmp_path):
    """``lite_guard trace`` keeps the script's lite options and prints the fusion rows."""
    import json
    import subprocess
    import sys

    script = tmp_path / "fused.py"
    script.write_text(
        "import torch\n"
        "def f(x, y):\n"
        "    return (torch.exp(x * 0.5) * y + 1.0) * 2.0 - y\n"
        "x, y = torch.randn(40, 64, requires_grad=True), torch.randn(40, 64)\n"
        "torch.compile(f, backend='lite', options={'bitwise_fusion': True})(x, y).sum().backward()\n")
    done = subprocess.run([sys.executable, "-m", "lite_guard", "trace", "--json", str(script)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [row for ledger in json.loads(done.stdout)["lite"] for row in ledger["passes"]
            if row["kind"] == "fusion"]
    assert any(r["stage"] == "runtime" and r["verdict"] == "allowed" and r["reason"].startswith("fused")
               for r in rows), rows
    assert any(r["name"] == "bitwise_fusion aten.exp.default(float32[2d]) on cpu"
               and r["verdict"] == "refused" for r in rows), rows


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_gpu_16_bit_binary_signatures_are_checked_on_every_pair_of_bit_patterns():
    def f(x, y):
        return (x * y + x) * y

    def make(step):
        gen = torch.Generator(device="cuda").manual_seed(step)
        return tuple(torch.randn(64, 96, device="cuda", generator=gen, dtype=torch.bfloat16)
                     .requires_grad_() for _ in range(2))

    _compare(f, make, steps=1)
    rows = _signature_rows(True) + _signature_rows(False)
    mul = [e for e in rows if "aten.mul.Tensor(bfloat16[2d], bfloat16[2d]) on cuda" in e.name]
    assert mul and "exhaustive over all 4,294,967,296 input bit-pattern combinations" in mul[0].reason


# ---- the loss tail: faithful decompositions and order-independent sums ----------------------------

def _ledger_ops(rows):
    return " ".join(e.reason for e in _fused(rows))


def test_nll_loss_backward_joins_a_group_through_its_faithful_decomposition():
    """nll_loss_backward is neither pointwise nor data movement; decomposed as ATen's kernel
    computes (where(one-hot, -(g / total_weight), 0)), every piece of it checked, it fuses with the
    multiply after it, bitwise equal to aot_eager (ignore_index rows included)."""
    def fn(x, t):
        return torch.nn.functional.nll_loss(x * 2, t, ignore_index=-100)

    def make(step):
        gen = torch.Generator().manual_seed(step)
        t = torch.randint(0, 37, (24,), generator=gen)
        t[:5] = -100
        return torch.randn(24, 37, generator=gen, requires_grad=True), t

    rows = _fusion_rows_of(_compare(fn, make))
    assert any("aten.nll_loss_backward.default" in e.reason for e in _fused(rows)), rows
    judged = [e for e in rows if e.stage == "fusion" and "nll_loss_backward" in e.name]
    assert judged and judged[0].allowed and "every piece bitwise" in judged[0].reason


def _fusion_rows_of(ledger):
    return [e for e in ledger.entries if e.kind == "fusion"]


def test_a_loss_tail_on_cpu_keeps_log_softmax_backward_aten_because_its_exp_piece_differs():
    """On CPU Inductor's fp32 exp is not ATen's (its own polynomial): the checker refuses the
    exp piece of _log_softmax_backward_data's decomposition, names it, and the op stays ATen."""
    def fn(logits, t):
        return torch.nn.functional.cross_entropy(logits.float(), t, ignore_index=-100)

    def make(step):
        gen = torch.Generator().manual_seed(step)
        t = torch.randint(0, 40, (16,), generator=gen)
        t[:3] = -100
        return torch.randn(16, 40, generator=gen).bfloat16().requires_grad_(), t

    rows = _fusion_rows_of(_compare(fn, make))
    refused = [e for e in rows if e.stage == "fusion" and "_log_softmax_backward_data" in e.name]
    assert refused and not refused[0].allowed
    assert "its piece aten.exp.default(float32[2d]) on cpu is not bitwise" in refused[0].reason


def test_order_independence_is_read_from_the_producers_structure():
    """A row sum of nll_loss_backward's gradient (at most one element per row is not +0.0) is
    order-independent by structure; the same sum of a dense gradient is reported."""
    from torch._inductor.decomposition import select_decomp_table
    from torch.fx.experimental.proxy_tensor import make_fx

    from lite_compiler.faithful_decompositions import decomposition_table
    from lite_compiler.order_independent import order_dependent

    aten = torch.ops.aten
    table = decomposition_table(select_decomp_table(), {"cpu"})
    lp, t = torch.randn(8, 5).log_softmax(1), torch.tensor([0, 1, -100, 4, 2, 2, 3, 0])

    def tail(g, lp, t, tw):
        grad = aten.nll_loss_backward(g, lp, t, None, 1, -100, tw)
        return aten._log_softmax_backward_data(grad, lp, 1, torch.float32)

    sparse = make_fx(tail, decomposition_table=table)(torch.tensor(1.0), lp, t, torch.tensor(7.0))
    assert order_dependent(sparse) == []
    dense = make_fx(lambda g, lp: aten._log_softmax_backward_data(g, lp, 1, torch.float32),
                    decomposition_table=table)(lp, lp)
    (problem,) = order_dependent(dense)
    assert problem.startswith("aten.sum.dim_IntList(sum_1) over dims [1]: its input is not shown")
    # The decomposition itself is ATen's values, bit for bit, on CPU (eager, both reductions).
    from lite_compiler.faithful_decompositions import FAITHFUL
    for reduction in (1, 2):
        for weight in (None, torch.rand(5)):
            want = aten.nll_loss_backward(torch.tensor(-0.0), lp, t, weight, reduction, -100, torch.tensor(7.0))
            got = FAITHFUL["cpu"][aten.nll_loss_backward.default](
                torch.tensor(-0.0), lp, t, weight, reduction, -100, torch.tensor(7.0))
            assert torch.equal(want.view(torch.int32), got.view(torch.int32))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_gpu_llama_loss_tail_fuses_bitwise():
    """bf16 logits .float() -> cross_entropy (mean, ignore_index -100) -> backward, as HF Llama's
    loss: nll_loss_backward, _log_softmax_backward_data and the cast back to bf16 in one group
    (its row sum order-independent by structure), bitwise equal to aot_eager."""
    def fn(h, w, t):
        logits = (h @ w).float()
        return torch.nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]), t.view(-1),
                                                 ignore_index=-100)

    def make(step):
        gen = torch.Generator(device="cuda").manual_seed(step)
        h = torch.randn(2, 64, 128, generator=gen, device="cuda").bfloat16().requires_grad_()
        w = torch.randn(128, 3000, generator=gen, device="cuda").bfloat16().requires_grad_()
        t = torch.randint(0, 3000, (2, 64), generator=gen, device="cuda")
        t[:, -1] = -100
        return h, w, t

    rows = _fusion_rows_of(_compare(fn, make, steps=2))
    fused = _ledger_ops(rows)
    assert "aten.nll_loss_backward.default" in fused and "aten._log_softmax_backward_data.default" in fused, \
        [f"{e.stage} {e.allowed} {e.name}: {e.reason}" for e in rows]


def test_cuda_groups_decompose_neg_and_mul_by_one_as_atens_kernels_compute():
    """In a CUDA group, neg is a sign flip with a NaN made canonical (as the H200's ATen writes it),
    never Triton's 0 - x; x * 1 is where(x != x, canonical NaN, x), never folded to x; any other
    multiply is Inductor's own. (The GPU enumeration judges them; here: structure and values.)"""
    from torch._inductor.decomposition import select_decomp_table
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    from lite_compiler.faithful_decompositions import FAITHFUL, decomposition_table

    aten = torch.ops.aten
    table = decomposition_table(select_decomp_table(), {"cuda"})
    with FakeTensorMode(allow_non_fake_inputs=True):
        for dtype, neg_ops, muls in ((torch.float32, {"aten.bitwise_xor.Scalar"}, 1),
                                     (torch.bfloat16, {"aten.bitwise_xor.Scalar"}, 1)):
            x = torch.empty(4, 8, device="cuda", dtype=dtype)
            gm = make_fx(lambda x: (aten.neg(x), aten.mul(x, 1.0), aten.mul(x, 2.0)),
                         decomposition_table=table)(x)
            ops = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
            assert "aten.neg.default" not in ops and neg_ops <= set(ops)
            assert "aten.where.self" in ops and ops.count("aten.mul.Tensor") == muls
    x = torch.cat([torch.tensor([0.0, -0.0, float("inf"), float("-inf"), 1e-40, -1e-40]), torch.randn(500)])
    for dtype, ints, nan in ((torch.float32, torch.int32, 0x7FFFFFFF), (torch.bfloat16, torch.int16, 0x7FFF)):
        y = x.to(dtype)
        for op, want in ((aten.neg.default, -y), (aten.mul.Tensor, y * 1.0)):
            got = FAITHFUL["cuda"][op](y) if op is aten.neg.default else FAITHFUL["cuda"][op](y, 1.0)
            assert torch.equal(got.view(ints), want.view(ints))  # (no NaN here: as ATen on CPU)
        payload = torch.tensor([float("nan")], dtype=dtype).view(ints) - 3  # a NaN with a payload
        for got in (FAITHFUL["cuda"][aten.neg.default](payload.view(dtype)),
                    FAITHFUL["cuda"][aten.mul.Tensor](payload.view(dtype), 1.0)):
            assert got.view(ints).item() == nan


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gpu_rotary_neg_and_mul_by_one_are_judged_on_every_bit_pattern(dtype):
    """HF Llama's rotate_half (neg, cat) and attention_scaling (x * 1.0): whatever this GPU
    decides for their faithful decompositions, the result is bitwise and the verdict exhaustive."""
    def f(x, cos):
        x1, x2 = x[..., :16], x[..., 16:]
        return x * (cos * 1.0) + torch.cat((-x2, x1), dim=-1) * cos

    def make(step):
        gen = torch.Generator(device="cuda").manual_seed(step)
        return (torch.randn(2, 4, 64, 32, device="cuda", generator=gen, dtype=dtype).requires_grad_(),
                torch.randn(64, 32, device="cuda", generator=gen, dtype=dtype))

    _compare(f, make, steps=2)
    rows = [e for e in _fusion_rows() if e.stage == "fusion" and "aten.neg.default" in e.name]
    print(*(f"{e.allowed} {e.name}: {e.reason}" for e in _fusion_rows() if e.stage == "fusion"), sep="\n")
    assert rows and ("exhaustive over all" in rows[0].reason or not rows[0].allowed)


def test_a_group_output_keeps_atens_strides_when_its_decomposition_lays_it_out_otherwise():
    """HF's KV cache: cat(empty cache, transposed keys). ATen's cat is contiguous; Inductor's cat
    of an empty tensor keeps the transposed layout. The group asks Inductor for ATen's stride
    order, so its first-call check passes (it used to fall back on strides)."""
    def fn(x, cache):
        keys = (x * 2.0 + 1.0).transpose(1, 2)
        return torch.cat([cache, keys], dim=-2)

    def make(step):
        gen = torch.Generator().manual_seed(step)
        return torch.randn(2, 16, 4, 8, generator=gen, requires_grad=True), torch.zeros(2, 4, 0, 8)

    lite_compiler.clear_ledgers()
    _compare(fn, make)
    rows = [e for ledger in lite_compiler.all_ledgers("lite") for e in ledger.entries if e.kind == "fusion"]
    assert _fused(rows) and not _fell_back(rows), [e.reason for e in rows if e.stage == "runtime"]
    torch._dynamo.reset()
    x, cache = make(0)
    got = torch.compile(fn, backend="lite", options=FUSION)(x, cache)
    assert got.stride() == torch.cat([cache, (x * 2.0 + 1.0).transpose(1, 2)], dim=-2).stride()


def test_a_log_softmax_backward_of_a_dense_gradient_stays_aten_for_its_order_dependent_sum():
    """A weighted sum of log-probabilities (dense gradient): its row sum may depend on the order
    of its additions, nothing in its producers' structure says otherwise, so the op stays ATen
    with that reason (before any of its pieces is judged); the result stays bitwise."""
    def fn(x, w):
        return (torch.log_softmax(x * 2.0, dim=1) * w).sum()

    def make(step):
        gen = torch.Generator().manual_seed(step)
        return torch.randn(16, 40, generator=gen, requires_grad=True), torch.randn(16, 40, generator=gen)

    rows = _fusion_rows_of(_compare(fn, make))
    refused = [e for e in rows if e.stage == "fusion" and "_log_softmax_backward_data" in e.name]
    assert refused and not refused[0].allowed, rows
    assert "aten.sum.dim_IntList(sum_1) over dims [1]: its input is not shown, by its producers'" \
        " structure" in refused[0].reason


def test_a_group_takes_a_later_op_that_needs_only_earlier_nodes_across_an_outside_user():
    """llama's MLP backward: one view feeds two multiplies, a matmul uses the first, then an op
    needs only the second (silu_backward there). One call standing at the group's first node
    runs it without moving any node outside, so it joins the group (it used to stay ATen alone)."""
    def fn(a, b, w, w2):
        g = (a @ w).view(4, 8, 16)
        first = g * b
        second = g * 2.0
        out = first.view(32, 16) @ w2
        return out, (second + 1.0) * 3.0

    gen = torch.Generator().manual_seed(0)
    inputs = (torch.randn(32, 16, generator=gen), torch.randn(4, 8, 16, generator=gen),
              torch.randn(16, 16, generator=gen), torch.randn(16, 16, generator=gen))
    torch._dynamo.reset()
    lite_compiler.clear_ledgers()
    ours = torch.compile(fn, backend="lite", options=FUSION)(*inputs)
    rows = [e for ledger in lite_compiler.all_ledgers("lite") for e in ledger.entries if e.kind == "fusion"]
    torch._dynamo.reset()
    _assert_bitwise([ours], [torch.compile(fn, backend="aot_eager")(*inputs)])
    fused = [e.reason for e in _fused(rows)]
    assert any("aten.add.Tensor" in r and r.count("aten.mul.Tensor") >= 3 for r in fused), fused
