"""Regions for models nobody edits: modules into regions by class, instance or name; decorators."""

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import lite_compiler
from lite_compiler.testing import assert_bitwise_equal


class Norm(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


class Gate(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.up = nn.Linear(dim, 2 * dim)
        self.down = nn.Linear(2 * dim, dim)

    def forward(self, x):
        return self.down(F.silu(self.up(x)).cos())


class Block(nn.Module):
    def __init__(self, dim: int = 8):
        super().__init__()
        self.norm, self.gate = Norm(dim), Gate(dim)

    def forward(self, x):
        return x + self.gate(self.norm(x))


class Net(nn.Module):
    def __init__(self, dim: int = 8, depth: int = 2):
        super().__init__()
        self.blocks = nn.ModuleList(Block(dim) for _ in range(depth))
        self.head = nn.Linear(dim, 4)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x).tanh()


def _compile_and_run(model, x, backward=True):
    torch._dynamo.reset()
    out = torch.compile(model, backend="lite")(x)
    if backward:
        out.sum().backward()
    return out, lite_compiler.last_ledger()


def _fw(ledger):
    return {name: code for name, code in ledger.region_code.items() if "/fw/" in name}


@pytest.fixture(scope="module")
def class_rules():
    """One training compile of Net with every Norm in region "norm" and every Gate in "gate"."""
    torch.manual_seed(0)
    model = Net()
    with lite_compiler.module_regions(model, [
        lite_compiler.RegionRule(Norm, id="norm"),
        lite_compiler.RegionRule(Gate, id="gate", configs={"cpp.enable_kernel_profile": True}),
    ]) as handle:
        assignments = dict(handle.assignments)
        _, ledger = _compile_and_run(model, torch.randn(3, 8))
    return assignments, ledger


def test_class_rule_puts_every_instance_into_the_region(class_rules):
    assignments, _ = class_rules
    assert assignments == {"blocks.0.norm": "norm", "blocks.0.gate": "gate",
                           "blocks.1.norm": "norm", "blocks.1.gate": "gate"}


def test_module_regions_are_compiled_by_inductor_with_their_ids(class_rules):
    _, ledger = class_rules
    fw = _fw(ledger)
    assert {name.split("/")[2] for name in fw} == {"region[norm]", "region[gate]"}
    assert all("cpp_fused" in code for code in fw.values())
    assert any("/bw/" in name for name in ledger.region_code), "backward of the regions not compiled"
    # The head is in no region: its tanh stays an ATen call in the FX graph.
    graph = next(code for name, code in ledger.graph_code.items() if name.endswith("/fw"))
    assert "torch.ops.aten.tanh.default" in graph
    assert "torch.ops.aten.rsqrt" not in graph and "torch.ops.aten.cos" not in graph


def test_ledger_names_the_modules_of_each_region(class_rules):
    _, ledger = class_rules
    modules = {name: mods for name, mods in ledger.region_modules.items() if "/fw/" in name}
    assert sorted(m for mods in modules.values() for m in mods) == [
        "blocks.0.gate", "blocks.0.norm", "blocks.1.gate", "blocks.1.norm"]
    for name, mods in modules.items():
        kind = "norm" if "region[norm]" in name else "gate"
        assert all(m.endswith(kind) for m in mods), (name, mods)


def test_module_region_configs_are_honoured(class_rules):
    _, ledger = class_rules
    for name, code in _fw(ledger).items():
        assert ("aoti_runtime/utils.h" in code) == ("region[gate]" in name), name


def test_name_pattern_and_instance_rules_with_per_instance_ids():
    torch.manual_seed(0)
    model = Net()
    with lite_compiler.module_regions(model, [
        ("blocks.*.norm", "norm:{name}"),
        lite_compiler.RegionRule(model.head, id="head"),
    ]) as handle:
        assert handle.assignments == {"blocks.0.norm": "norm:blocks.0.norm",
                                      "blocks.1.norm": "norm:blocks.1.norm", "head": "head"}
        assert lite_compiler.regions_of(model) == handle.assignments
        _, ledger = _compile_and_run(model, torch.randn(3, 8), backward=False)
    ids = {name.split("/")[2] for name in ledger.region_code}
    assert ids == {"region[norm:blocks.0.norm]", "region[norm:blocks.1.norm]", "region[head]"}


def test_remove_restores_the_modules_exactly_and_compiles_no_region():
    model = Net()
    before = {name: dict(m.__dict__) for name, m in model.named_modules()}
    handle = lite_compiler.module_regions(model, [(Norm, "norm"), (Gate, "gate")])
    assert "forward" in model.blocks[0].norm.__dict__
    handle.remove()
    after = {name: dict(m.__dict__) for name, m in model.named_modules()}
    assert after.keys() == before.keys()
    for name in before:
        assert after[name].keys() == before[name].keys(), name
        assert all(after[name][k] is before[name][k] for k in before[name]), name
    assert lite_compiler.regions_of(model) == {}
    _, ledger = _compile_and_run(model, torch.randn(3, 8), backward=False)
    assert ledger.region_code == {}


def test_without_regions_the_model_is_bitwise_equal_to_aot_eager_after_remove():
    torch.manual_seed(0)
    model = Net()
    lite_compiler.module_regions(model, [(Norm, "norm")]).remove()
    assert_bitwise_equal(model, torch.randn(3, 8, requires_grad=True))


def test_deepcopy_keeps_regions_bound_to_the_copy():
    torch.manual_seed(0)
    model = Net()
    with lite_compiler.module_regions(model, [(Gate, "gate")]):
        twin = copy.deepcopy(model)
    assert lite_compiler.regions_of(model) == {}
    assert lite_compiler.regions_of(twin) == {"blocks.0.gate": "gate", "blocks.1.gate": "gate"}
    with torch.no_grad():
        model.blocks[0].gate.up.weight.zero_()  # the original changes; the copy must not see it
    x = torch.randn(3, 8)
    expected = twin(x)
    torch._dynamo.reset()
    got = torch.compile(twin, backend="lite")(x)
    assert lite_compiler.last_ledger().region_code, "the copy's regions were not compiled"
    torch.testing.assert_close(got, expected)


def test_a_module_matched_by_two_rules_is_an_error():
    model = Net()
    with pytest.raises(lite_compiler.LiteRegionConfigError,
                       match=r"module 'blocks.0.norm' \(.*Norm\) matches RegionRule\(.*Norm, id='a'\)"
                             r" and RegionRule\('blocks.\*', id='b'\); make the rules disjoint"):
        lite_compiler.module_regions(model, [(Norm, "a"), ("blocks.*", "b")])
    assert lite_compiler.regions_of(model) == {}


def test_a_rule_that_matches_nothing_is_an_error():
    model = Net()
    with pytest.raises(lite_compiler.LiteRegionConfigError,
                       match=r"RegionRule\('blocks.\*.mlp', id='mlp'\) matches no module of Net"):
        lite_compiler.module_regions(model, [(Norm, "norm"), ("blocks.*.mlp", "mlp")])
    assert lite_compiler.regions_of(model) == {}, "a failed apply left modules wrapped"


def test_a_rule_that_matches_only_a_container_is_an_error():
    # A ModuleList is never called (the model calls its children): its region stayed empty and
    # the compile put nothing into a region, silently (found on HF Llama's "model.layers").
    model = Net()
    with pytest.raises(lite_compiler.LiteRegionConfigError,
                       match=r"RegionRule\('blocks', id='b'\) matches only 'blocks', a container"
                             r" without a forward .* match its children instead \(e.g. 'blocks.\*'"):
        lite_compiler.module_regions(model, [("blocks", "b")])
    assert lite_compiler.regions_of(model) == {}


def test_a_pattern_over_containers_and_their_children_wraps_the_children():
    model = Net()
    with lite_compiler.module_regions(model, [("blocks*", "b")]) as handle:
        assert "blocks" not in handle.assignments and handle.assignments["blocks.0"] == "b"


def test_applying_twice_is_an_error_until_removed():
    model = Net()
    first = lite_compiler.module_regions(model, [(Norm, "norm")])
    with pytest.raises(lite_compiler.LiteRegionConfigError, match="already in a region"):
        lite_compiler.module_regions(model, [(Norm, "norm2")])
    assert lite_compiler.regions_of(model)["blocks.0.norm"] == "norm"
    first.remove()
    lite_compiler.module_regions(model, [(Norm, "norm2")]).remove()


def test_region_as_a_decorator_and_region_fn():
    @lite_compiler.region(id="deco")
    def act(x):
        return x.cos() * 2

    def act2(x):
        return x.exp() + 1

    wrapped = lite_compiler.region_fn(act2, id="fn")

    def fn(x):
        return wrapped(act(x.sin())).tanh()

    torch._dynamo.reset()
    torch.compile(fn, backend="lite", fullgraph=True)(torch.randn(8))
    ledger = lite_compiler.last_ledger()
    codes = {name.split("/")[2]: code for name, code in ledger.region_code.items()}
    assert set(codes) == {"region[deco]", "region[fn]"}
    assert "cpp_fused_cos_mul" in codes["region[deco]"]
    assert "cpp_fused_add_exp" in codes["region[fn]"]
    assert act.__name__ == "act" and wrapped.__name__ == "act2"


# ---- graph breaks inside regions ------------------------------------------------------------

def _not_compiled(record):
    return [w for w in record if issubclass(w.category, lite_compiler.LiteRegionNotCompiled)]


def test_a_graph_break_inside_a_region_warns_once_naming_the_region():
    def fn(x):
        y = x.sin()
        with lite_compiler.region(id="breaks"):
            print("a graph break")
            y = y.cos() * 2
        return y + 1

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="lite")
    lite_compiler.clear_ledgers()
    with pytest.warns(lite_compiler.LiteRegionNotCompiled) as record:
        compiled(torch.randn(4))
        compiled(torch.randn(4))
    (warning,) = _not_compiled(record)
    assert str(warning.message).startswith(
        "lite_compiler: region 'breaks' ran eagerly inside torch.compile, so nothing in it was"
        " compiled: a graph break inside the region")
    assert warning.filename == __file__  # points at the user's `with` line
    assert lite_compiler.all_ledgers() == []  # indeed: no graph reached the lite backend


def test_a_graph_break_inside_a_module_region_names_region_and_module():
    class Talks(nn.Module):
        def forward(self, x):
            print("a graph break")
            return x * 2

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.talks = Talks()

        def forward(self, x):
            return self.talks(x).sin()

    model = Outer()
    torch._dynamo.reset()
    with lite_compiler.module_regions(model, [(Talks, "talky")]), \
            pytest.warns(lite_compiler.LiteRegionNotCompiled) as record:
        torch.compile(model, backend="lite")(torch.randn(3))
    (warning,) = _not_compiled(record)
    assert "region 'talky' (module 'talks') ran eagerly inside torch.compile" in str(warning.message)


def test_a_region_that_reaches_the_compiler_does_not_warn(recwarn):
    def fn(x):
        with lite_compiler.region(id="traced"):
            y = x.cos() * 2
        return y + 1

    torch._dynamo.reset()
    torch.compile(fn, backend="lite")(torch.randn(4))
    assert any("region[traced]" in name for name in lite_compiler.last_ledger().region_code)
    assert not _not_compiled(recwarn.list)
    with lite_compiler.region(id="eager-only"):  # plain eager code, no compile: nothing to say
        torch.randn(2).cos()
    assert not _not_compiled(recwarn.list)


def test_regions_keep_the_order_of_the_graph_outside_them_under_autocast():
    """Scooping regions used to re-sort the whole graph, moving independent casts outside the
    regions ahead of other nodes; the guard's effect check (rightly) refused the changed graph."""
    torch.manual_seed(0)
    model = Net()
    with lite_compiler.module_regions(model, [(Gate, "gate")]), \
            torch.autocast("cpu", dtype=torch.bfloat16):
        _, ledger = _compile_and_run(model, torch.randn(3, 8))
    assert not ledger.refused
    assert any("/fw/region[gate]/" in name for name in ledger.region_code)


@torch.library.custom_op("lite_models_test::column_major", mutates_args=())
def _column_major(x: torch.Tensor) -> torch.Tensor:
    return (x * 2).t().contiguous().t()  # the real kernel returns a column-major tensor ...


@_column_major.register_fake
def _(x):
    return torch.empty_like(x, memory_format=torch.contiguous_format)  # ... its fake one does not


def test_a_region_input_laid_out_unlike_its_fake_value_is_copied_into_place():
    """An ATen kernel outside a region may lay out its output unlike its meta kernel (torchvision's
    Swin does this in training); the region's code asserts the fake strides, so the input is
    copied into that layout (same values) instead of the call failing."""
    def fn(x):
        y = torch.ops.lite_models_test.column_major(x)
        with lite_compiler.region(id="after"):
            return y.cos() + 1

    x = torch.randn(4, 6)
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="lite", fullgraph=True)
    torch.testing.assert_close(compiled(x), fn(x))
    torch.testing.assert_close(compiled(x), fn(x))  # later calls take the same path
    assert any("region[after]" in name for name in lite_compiler.last_ledger().region_code)


def test_one_region_id_far_apart_keeps_the_outside_order():
    """The partitioner merges all nodes of one id it can (T5's encoder and decoder norms in one
    region "norm"); one call for both would make `b` below wait for `c`, reordering the graph
    outside the regions, which the guard refuses. The region is cut in two instead."""
    def fn(x, y):
        with lite_compiler.region(id="n"):
            a = x.cos() * 2
        b = a + 1  # uses the first part
        c = y.sin()  # the second part needs this
        with lite_compiler.region(id="n"):
            d = (c * 3).exp()
        return b, d

    torch._dynamo.reset()
    x, y = torch.randn(8), torch.randn(8)
    b, d = torch.compile(fn, backend="lite", fullgraph=True)(x, y)
    ledger = lite_compiler.last_ledger()
    assert not ledger.refused
    assert len([g for g in ledger.region_code if "region[n]" in g]) == 2
    torch.testing.assert_close((b, d), fn(x, y))


def test_module_regions_keep_the_model_one_dynamo_graph():
    """The wrapped forward must be traceable wherever the model is: on torch 2.11, calling the
    inner forward through ``function.__get__`` broke the graph at every region (10 graphs for
    resnet18 with one region per block, recompiled with dynamic shapes: no CUDA graphs)."""
    model = Net(depth=3)
    lite_compiler.module_regions(model, [lite_compiler.RegionRule(Block, id="{name}")])
    torch._dynamo.reset()
    explained = torch._dynamo.explain(model)(torch.randn(4, 8))
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
