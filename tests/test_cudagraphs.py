"""CUDA graphs in lite mode: options={"cudagraphs": True} (lite_compiler.cudagraphs).

CPU (CI): the switch is accepted by backend="lite" and mode="lite", falls back with its reason in
the ledger and a warning, and leaves numerics bitwise equal to aot_eager. GPU (marked gpu): the
forward and backward are replayed as CUDA graphs, still bitwise equal to aot_eager, regions
included; dynamic shapes and uncapturable ops fall back with their reason.
"""

from __future__ import annotations

import warnings

import pytest
import torch

import lite_compiler
from lite_compiler.cudagraphs import CudaGraphsSkipped, dynamic_shape_reason, in_place_inputs, op_reason


def _mlp(x, w1, w2):
    return (torch.relu(x @ w1) @ w2).tanh().sum()


def _inputs(device: str = "cpu", seed: int = 0):
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(16, 32, device=device, generator=gen)
    w1 = torch.randn(32, 64, device=device, generator=gen, requires_grad=True)
    w2 = torch.randn(64, 8, device=device, generator=gen, requires_grad=True)
    return x, w1, w2


def _train(fn, inputs, steps: int = 1):
    outs = []
    for _ in range(steps):
        for t in inputs:
            t.grad = None
        out = fn(*inputs)
        out.backward()
        outs.append((out.detach().clone(), *(t.grad.clone() for t in inputs if t.requires_grad)))
    return outs


def _cudagraph_rows():
    ledger = lite_compiler.last_ledger("lite")
    return {e.graph.split("/")[-1]: e for e in ledger.entries if e.kind == "cudagraphs"}


def _assert_bitwise(a, b):
    assert len(a) == len(b)
    for step_a, step_b in zip(a, b):
        for x, y in zip(step_a, step_b):
            assert torch.equal(x, y)


def test_switch_on_cpu_falls_back_with_the_reason_in_ledger_and_warning():
    torch._dynamo.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = _train(torch.compile(_mlp, backend="lite", options={"cudagraphs": True}), _inputs())
    rows = _cudagraph_rows()
    assert not rows["fw"].allowed and rows["fw"].reason == "CPU tensors ('primals_1' is on cpu)"
    assert not rows["bw"].allowed and "forward graph runs without CUDA graphs" in rows["bw"].reason
    messages = [str(w.message) for w in caught if issubclass(w.category, CudaGraphsSkipped)]
    assert any("fw runs without CUDA graphs: CPU tensors" in m for m in messages)
    torch._dynamo.reset()
    _assert_bitwise(ours, _train(torch.compile(_mlp, backend="aot_eager"), _inputs()))


def test_mode_lite_takes_the_same_switch():
    torch._dynamo.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CudaGraphsSkipped)
        _train(torch.compile(_mlp, mode="lite", options={"cudagraphs": True}), _inputs())
    assert _cudagraph_rows()["fw"].reason.startswith("CPU tensors")


def test_without_the_switch_the_ledger_has_no_cudagraph_rows():
    torch._dynamo.reset()
    _train(torch.compile(_mlp, backend="lite"), _inputs())
    assert _cudagraph_rows() == {}


def test_an_unknown_option_is_one_clear_error_at_torch_compile():
    with pytest.raises(lite_compiler.LiteConfigError, match="lite mode has no option 'cudagraph'"):
        torch.compile(_mlp, mode="lite", options={"cudagraph": True})


def test_a_non_bool_switch_is_an_error():
    torch._dynamo.reset()
    with pytest.raises(Exception, match="lite option 'cudagraphs' must be a bool"):
        _train(torch.compile(_mlp, backend="lite", options={"cudagraphs": "yes"}), _inputs())


def test_dynamic_shapes_are_a_reason_to_skip():
    from torch.fx.experimental.proxy_tensor import make_fx

    gm = make_fx(lambda x: x * 2, tracing_mode="symbolic")(torch.randn(3, 4))
    assert dynamic_shape_reason(gm).startswith("dynamic shapes (input 'x_1'")


def test_a_cpu_sync_op_is_a_reason_to_skip():
    from torch.fx.experimental.proxy_tensor import make_fx

    gm = make_fx(lambda x: x * x.sum().item(), tracing_mode="symbolic")(torch.randn(3))
    assert "_local_scalar_dense" in op_reason(gm) and "cannot be captured" in op_reason(gm)
    assert op_reason(make_fx(lambda x: x * 2)(torch.randn(3))) is None


TABLE = torch.arange(8.0)  # read by _reads_a_global from this module's globals
GRAD_TABLE = torch.arange(8.0, requires_grad=True)


def _reads_a_global(x, w):
    return ((x @ w) * TABLE * GRAD_TABLE).sum()


def _reads_a_table(x, w):
    return ((x @ w) * TABLE).sum()


def test_the_other_cuda_inputs_are_read_in_place_not_static_ones_cpu_scalars_or_ints():
    """What a replay reads where it lives instead of copying into the graph's pool: every CUDA
    tensor input that is not already static; a CPU scalar stays copied (the capture bakes its
    value in), an int is not a tensor. Fake CUDA tensors: the choice needs no device."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        param, batch, mask = (torch.empty(4, device="cuda") for _ in range(3))
        scalar = torch.tensor(2.0)
    assert in_place_inputs([param, batch, scalar, 7, mask], static=[0]) == [1, 4]


# ---- GPU -------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("mode", ["backend", "mode"])
def test_training_replays_as_cuda_graphs_bitwise_equal_to_aot_eager(mode):
    torch._dynamo.reset()
    kwargs = {"backend": "lite"} if mode == "backend" else {"mode": "lite"}
    ours = _train(torch.compile(_mlp, options={"cudagraphs": True}, **kwargs), _inputs("cuda"), steps=4)
    rows = _cudagraph_rows()
    assert rows["fw"].allowed and rows["bw"].allowed, rows
    assert "replayed as a CUDA graph" in rows["fw"].reason
    torch._dynamo.reset()
    _assert_bitwise(ours, _train(torch.compile(_mlp, backend="aot_eager"), _inputs("cuda"), steps=4))


def _with_region(x, w1, w2):
    h = torch.relu(x @ w1)
    with lite_compiler.region(id="act"):
        h = torch.nn.functional.gelu(h) * torch.sigmoid(h)
    return (h @ w2).sum()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_regions_and_fallback_ops_replay_in_one_graph_with_unchanged_numerics():
    torch._dynamo.reset()
    plain = _train(torch.compile(_with_region, backend="lite"), _inputs("cuda"), steps=3)
    torch._dynamo.reset()
    graphed = _train(torch.compile(_with_region, backend="lite", options={"cudagraphs": True}),
                     _inputs("cuda"), steps=3)
    ledger = lite_compiler.last_ledger("lite")
    assert any("triton" in code for code in ledger.region_code.values())
    rows = _cudagraph_rows()
    assert rows["fw"].allowed and rows["bw"].allowed, rows
    _assert_bitwise(plain, graphed)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_dynamic_shapes_fall_back_on_gpu():
    torch._dynamo.reset()
    fn = torch.compile(_mlp, backend="lite", options={"cudagraphs": True}, dynamic=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = _train(fn, _inputs("cuda"))
    assert _cudagraph_rows()["fw"].reason.startswith("dynamic shapes")
    assert any(issubclass(w.category, CudaGraphsSkipped) for w in caught)
    torch._dynamo.reset()
    _assert_bitwise(ours, _train(torch.compile(_mlp, backend="aot_eager"), _inputs("cuda")))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_an_item_on_the_host_falls_back_and_one_kept_on_device_replays_bitwise():
    """``.item()`` makes the host wait for a value the graph computes: a replay would reuse a stale
    one, so such a graph must not be captured. torch 2.11 keeps ``max().item() * t`` on the device
    (no host read in the graph): then capturing is right, and each step must still see new data."""
    def scaled(x, w1, w2):
        return _mlp(x, w1, w2) * x.abs().max().item()

    torch._dynamo.reset()
    with torch._dynamo.config.patch(capture_scalar_outputs=True), warnings.catch_warnings():
        warnings.simplefilter("ignore", CudaGraphsSkipped)
        steps = [_inputs("cuda", seed) for seed in (0, 1, 2)]
        compiled = torch.compile(scaled, backend="lite", options={"cudagraphs": True}, fullgraph=True)
        ours = [_train(compiled, inputs)[0] for inputs in steps]
        fw_code = "\n".join(code for name, code in lite_compiler.last_ledger("lite").graph_code.items()
                            if name.endswith("fw"))
        row = _cudagraph_rows()["fw"]
        torch._dynamo.reset()
        reference = torch.compile(scaled, backend="aot_eager", fullgraph=True)
        expected = [_train(reference, _inputs("cuda", seed))[0] for seed in (0, 1, 2)]
    if "_local_scalar_dense" in fw_code or "aten.item" in fw_code:
        assert "cannot be captured" in row.reason, row.reason
    else:
        assert row.reason.startswith("replayed as a CUDA graph"), row.reason
    _assert_bitwise(ours, expected)


def _tables_and_inputs(seed: int, tables: int):
    """``tables`` values for TABLE and the (x, w) inputs of _reads_a_table, on the GPU."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    values = [torch.randn(8, device="cuda", generator=gen) for _ in range(tables)]
    return values, (torch.randn(3, 4, device="cuda", generator=gen),
                    torch.randn(4, 8, device="cuda", generator=gen, requires_grad=True))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_global_tensor_is_a_static_input_and_rebinding_it_records_again_bitwise():
    global TABLE
    saved = TABLE
    try:
        (first,), inputs = _tables_and_inputs(seed=3, tables=1)
        TABLE = first
        torch._dynamo.reset()
        graphed = torch.compile(_reads_a_table, backend="lite", options={"cudagraphs": True})
        ours = _train(graphed, inputs, steps=3)
        rows = _cudagraph_rows()
        assert rows["fw"].allowed and rows["fw"].reason.endswith("0 static inputs, 3 read in place)"), \
            rows["fw"].reason
        TABLE = first * 2  # another tensor at another address: recorded again, not read stale
        ours += _train(graphed, inputs, steps=2)
        torch._dynamo.reset()
        reference = torch.compile(_reads_a_table, backend="aot_eager")
        TABLE = first
        expected = _train(reference, inputs, steps=3)
        TABLE = first * 2
        expected += _train(reference, inputs, steps=2)
        _assert_bitwise(ours, expected)
    finally:
        TABLE = saved


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_global_replaced_at_every_step_is_copied_after_two_replacements_bitwise():
    global TABLE
    saved = TABLE
    try:
        tables, inputs = _tables_and_inputs(seed=4, tables=6)

        def run(fn):
            global TABLE
            outs = []
            for table in tables:
                TABLE = table.clone()  # a new tensor at every step
                outs += _train(fn, inputs)
            return outs

        torch._dynamo.reset()
        ours = run(torch.compile(_reads_a_table, backend="lite", options={"cudagraphs": True}))
        ledger = lite_compiler.last_ledger("lite")
        reasons = [e.reason for e in ledger.entries if e.kind == "cudagraphs" and e.graph.endswith("/fw")]
        assert reasons[0].endswith("0 static inputs, 3 read in place)"), reasons
        assert reasons[1:] == ["inputs read in place moved to another address 3 times: copied into"
                               " the graph's pool from now on"], reasons
        torch._dynamo.reset()
        _assert_bitwise(ours, run(torch.compile(_reads_a_table, backend="aot_eager")))
    finally:
        TABLE = saved


def _pool_copies(fn, inputs) -> int:
    """How many times one training step copies inputs into a CUDA graph's pool: cudagraph trees
    copy every non-static input of a replay with one ``_foreach_copy_`` (profiler's CPU ops)."""
    for t in inputs:
        t.grad = None
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        fn(*inputs).backward()
        torch.cuda.synchronize()
    return sum(e.name == "aten::_foreach_copy_" for e in prof.events())


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_inputs_and_tangents_at_a_stable_address_are_read_in_place_without_copies_bitwise():
    """A batch that stays where it is and the backward's tangent are read where they live: a
    replay launches no copy into the graph's pool, and the steps stay bitwise aot_eager's."""
    torch._dynamo.reset()
    inputs = _inputs("cuda", seed=5)
    graphed = torch.compile(_mlp, backend="lite", options={"cudagraphs": True})
    ours = _train(graphed, inputs, steps=3)  # warm-up and recording
    rows = _cudagraph_rows()
    assert rows["fw"].reason.endswith("0 static inputs, 3 read in place)"), rows["fw"].reason
    assert rows["bw"].reason.endswith("read in place)") and " 0 read in place" not in rows["bw"].reason, \
        rows["bw"].reason
    assert _pool_copies(graphed, inputs) == 0
    ours += _train(graphed, inputs, steps=2)  # replays after the profiled one
    torch._dynamo.reset()
    _assert_bitwise(ours, _train(torch.compile(_mlp, backend="aot_eager"), _inputs("cuda", seed=5), steps=5))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_new_batch_at_a_new_address_every_step_is_never_read_stale_bitwise():
    """Every step's batch a new tensor, each kept alive (so each lives at another address): the
    graph records again for the first moves, then copies the batch; every step computes on its own
    batch, bitwise aot_eager's."""
    gen = torch.Generator(device="cuda").manual_seed(6)
    w1 = torch.randn(32, 64, device="cuda", generator=gen, requires_grad=True)
    w2 = torch.randn(64, 8, device="cuda", generator=gen, requires_grad=True)
    batches = [torch.randn(16, 32, device="cuda", generator=gen) for _ in range(6)]

    def run(fn):
        return [step for batch in batches for step in _train(fn, (batch, w1, w2))]

    torch._dynamo.reset()
    graphed = torch.compile(_mlp, backend="lite", options={"cudagraphs": True})
    ours = run(graphed)
    ledger = lite_compiler.last_ledger("lite")
    reasons = [e.reason for e in ledger.entries if e.kind == "cudagraphs" and e.graph.endswith("/fw")]
    assert reasons[1:] == ["inputs read in place moved to another address 3 times: copied into"
                           " the graph's pool from now on"], reasons
    assert _pool_copies(graphed, (batches[0], w1, w2)) >= 1  # the batch: copied from now on
    torch._dynamo.reset()
    _assert_bitwise(ours, run(torch.compile(_mlp, backend="aot_eager")))
