"""Red team of the run-time guard: every way an Inductor developer or a third-party library can get
code to run in a lite compile, attacked with a real compile on real torch.

The promise: in lite mode nothing the registry does not allow runs; anything not in it is refused
at run time (one LitePassViolation naming the code and what to do), or it never runs and the
graph outside regions is bitwise what aot_eager runs. The attack matrix with each result is in
docs/guard.md ("Red team"). Attacks are put in with monkeypatch (or config.patch) and undone after
each test; the ``torch_untouched`` fixture checks the guard left nothing patched.
"""

import functools

import pytest
import torch

import lite_compiler
from compiler_models import compile_lite
from lite_compiler import hooks

aten = torch.ops.aten
HERE = __name__
pytestmark = pytest.mark.usefixtures("torch_untouched")  # tests/conftest.py
RAN = []  # what the attacking code did, in order: a refused pass must never have run


def qualified(qualname):
    return f"{HERE}:{qualname}"




def region_fn(x):
    y = x.sin() * 2
    with lite_compiler.region(id="r"):
        y = y.cos() * 2
    return y * 3


def plain_fn(x):
    """No region: lite mode must be bitwise aot_eager."""
    return (x.sin() * 2).cos() * 3 + x


def mul_to_add(graph):
    """The attacking transform: x * 2 -> x + 2 (changes numerics)."""
    RAN.append("mul_to_add")
    for node in graph.nodes:
        if node.target is aten.mul.Tensor:
            node.target = aten.add.Tensor


def aot_eager(fn, *args):
    torch._dynamo.reset()
    return torch.compile(fn, backend="aot_eager")(*args)


def refused(fn, *args, backward=False, **compile_kwargs):
    with pytest.raises(lite_compiler.LitePassViolation) as err:
        out = compile_lite(fn, **compile_kwargs)(*args)
        if backward:
            out.sum().backward()
    return err.value


def user_registry(monkeypatch, tmp_path, *entries):
    path = tmp_path / "team.toml"
    path.write_text("\n".join(
        f'[[pass]]\nname = "{name}"\nstage = "{stage}"\nlite = "{lite}"\nkind = "function"\n'
        'why = "red-team test"\n' for name, stage, lite in entries))
    monkeypatch.setenv("LITE_GUARD_REGISTRIES", str(path))


# ---- config hooks that hold user passes -----------------------------------------------------------

def _custom_hooks():
    from lite_compiler import custom_passes
    from lite_compiler.config import registry

    return [(h.module, h.key) for h in custom_passes.custom_hooks(registry())]


@pytest.mark.parametrize("module,key", _custom_hooks(), ids=lambda v: v.rsplit(".", 1)[-1])
def test_every_custom_hook_holding_an_unregistered_pass_is_refused_before_it_runs(module, key):
    import importlib

    config = importlib.import_module(module)
    with config.patch({key: mul_to_add}):
        violation = refused(region_fn, torch.randn(8, requires_grad=True), backward=True)
    assert violation.pass_name == qualified("mul_to_add")
    assert "no registry names this pass" in violation.reason
    assert RAN == []


class NumericsChangingGraphPass:
    """A CustomGraphPass as Inductor wants them (uuid for the FX graph cache key)."""

    def __call__(self, graph):
        mul_to_add(graph)

    def uuid(self):
        return "red-team"


def test_custom_graph_pass_object_with_uuid_is_refused_by_its_class():
    from torch._inductor.custom_graph_pass import CustomGraphPass

    cls = type("UuidPass", (NumericsChangingGraphPass, CustomGraphPass), {"__module__": HERE})
    with torch._inductor.config.patch(post_grad_custom_post_pass=cls()):
        violation = refused(region_fn, torch.randn(8))
    assert violation.pass_name == qualified("UuidPass") and RAN == []


def test_inductor_choices_class_from_outside_torch_is_refused():
    from torch._inductor.choices import InductorChoices

    choices = type("MyChoices", (InductorChoices,), {"__module__": HERE, "__qualname__": "MyChoices"})
    with torch._inductor.config.patch(inductor_choices_class=choices):
        violation = refused(region_fn, torch.randn(8))
    assert violation.pass_name == qualified("MyChoices")
    assert "torch._inductor.config.inductor_choices_class" in violation.reason


def _callable_config_keys():
    """Every Inductor/functorch key torch types as holding a callable that lite mode neither
    forces nor treats as a custom hook: derived from torch's own type annotations."""
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config

    from lite_compiler.config import derive_configs, registry

    forced_inductor, forced_functorch = derive_configs(registry())
    hooked = {key for _, key in _custom_hooks()}
    keys = []
    for module, forced in ((inductor_config, forced_inductor), (functorch_config, forced_functorch)):
        for key, entry in module._config.items():
            if "Callable" in str(getattr(entry, "value_type", "")) and key not in forced \
                    and key not in hooked:
                keys.append((module.__name__, key))
    return keys


def estimate(*args):
    RAN.append("estimate")
    return 1


@pytest.mark.parametrize("module,key", _callable_config_keys(), ids=lambda v: v.rsplit(".", 1)[-1])
def test_user_code_in_any_config_key_lite_mode_leaves_alone_is_refused(module, key):
    import importlib

    config = importlib.import_module(module)
    with config.patch({key: estimate}):
        violation = refused(region_fn, torch.randn(8))
    assert violation.pass_name == qualified("estimate") and key in violation.reason


def test_the_callable_config_keys_are_found_by_type_not_listed():
    assert ("torch._inductor.config", "inductor_choices_class") in _callable_config_keys()


def test_region_config_holding_user_code_is_refused_even_where_its_policy_is_free():
    def fn(x):
        with lite_compiler.region(id="r", **{"aten_distributed_optimizations.custom_runtime_estimation": estimate}):
            return x.cos() * 2

    violation = refused(fn, torch.randn(8))
    assert violation.pass_name == qualified("estimate")
    assert "region 'r' sets it" in violation.reason


def test_torch_own_class_in_a_callable_config_key_is_not_refused():
    from torch._inductor.choices import InductorChoices

    with torch._inductor.config.patch(inductor_choices_class=InductorChoices):
        compile_lite(region_fn, fullgraph=True)(torch.randn(8))
    assert not lite_compiler.last_ledger().refused


# ---- monkeypatching torch's passes ----------------------------------------------------------------

def _patch_view_to_reshape(monkeypatch, use_wraps):
    import torch._inductor.compile_fx as compile_fx

    original = compile_fx.view_to_reshape

    def view_to_reshape_and_more(gm):
        original(gm)
        mul_to_add(gm.graph)
        gm.recompile()

    if use_wraps:  # looks like torch's by __module__ and __qualname__
        view_to_reshape_and_more = functools.wraps(original)(view_to_reshape_and_more)
    monkeypatch.setattr(compile_fx, "view_to_reshape", view_to_reshape_and_more)
    return qualified("_patch_view_to_reshape.<locals>.view_to_reshape_and_more")


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("use_wraps", [False, True], ids=["plain", "functools.wraps"])
def test_monkeypatched_allowed_torch_pass_runs_as_itself_and_is_refused(monkeypatch, use_wraps, dynamic):
    """view_to_reshape is allowed (lite = "always"); code put in its place does not inherit that."""
    name = _patch_view_to_reshape(monkeypatch, use_wraps)
    violation = refused(region_fn, torch.randn(8), dynamic=dynamic)
    assert violation.pass_name == name and RAN == []
    assert "stands in for torch's 'view_to_reshape' at torch._inductor.compile_fx:view_to_reshape" \
        in violation.reason
    first_line = str(violation).splitlines()[0]
    assert name in first_line and "register it under this name, or remove the patch" in first_line


def test_monkeypatched_allowed_torch_pass_registered_by_its_own_name_runs_and_is_recorded(
        monkeypatch, tmp_path):
    name = _patch_view_to_reshape(monkeypatch, use_wraps=True)
    user_registry(monkeypatch, tmp_path, (name, "post_grad", "region"))
    compile_lite(region_fn)(torch.randn(8))
    assert RAN == ["mul_to_add"]
    rows = {e.name: e for e in lite_compiler.last_ledger()}
    assert rows[name].allowed and rows["view_to_reshape"].allowed


def test_monkeypatched_scheduler_method_is_refused(monkeypatch):
    from torch._inductor.scheduler import Scheduler

    original = Scheduler.fuse_nodes

    def fuse_nodes(self, nodes):
        RAN.append("fuse_nodes")
        return original(self, nodes)

    monkeypatch.setattr(Scheduler, "fuse_nodes", fuse_nodes)
    violation = refused(region_fn, torch.randn(8))
    assert violation.pass_name == qualified("test_monkeypatched_scheduler_method_is_refused.<locals>.fuse_nodes")
    assert RAN == []


def test_monkeypatched_gated_pass_is_refused_even_with_its_gate_off(monkeypatch):
    """decide_layout_opt counts as a pass only when layout_optimization is on (off in lite), but
    GraphLowering calls it always: code put there runs, so it is checked whatever the gate says."""
    from torch._inductor.graph import GraphLowering

    def decide_layout_opt(gm, *, is_inference):
        RAN.append("decide_layout_opt")
        return False

    monkeypatch.setattr(GraphLowering, "decide_layout_opt", staticmethod(decide_layout_opt))
    violation = refused(region_fn, torch.randn(8))
    assert violation.pass_name.endswith("<locals>.decide_layout_opt") and RAN == []


def test_monkeypatched_partitioner_is_refused(monkeypatch):
    import functorch.compile

    original = functorch.compile.min_cut_rematerialization_partition

    @functools.wraps(original)
    def partition(joint, *args, **kwargs):
        RAN.append("partition")
        return original(joint, *args, **kwargs)

    monkeypatch.setattr(functorch.compile, "min_cut_rematerialization_partition", partition)
    violation = refused(plain_fn, torch.randn(8, requires_grad=True), backward=True)
    assert violation.pass_name.endswith("<locals>.partition") and RAN == []
    assert "torch's min_cut_rematerialization_partition" in violation.reason


def test_monkeypatched_graph_runner_outside_regions_is_refused(monkeypatch):
    """boxed_nop runs the graph outside regions (as for aot_eager): a replacement could run
    anything, so it runs as itself."""
    import torch._dynamo.backends.debugging as debugging

    original = debugging.boxed_nop

    def boxed_nop(gm, example_inputs):
        RAN.append("boxed_nop")
        return original(gm, example_inputs)

    monkeypatch.setattr(debugging, "boxed_nop", boxed_nop)
    violation = refused(plain_fn, torch.randn(8))
    assert violation.pass_name.endswith("<locals>.boxed_nop") and RAN == []


def _patch_post_grad_pipeline_step(monkeypatch, when=lambda gm: True):
    """compile_fx._recursive_post_grad_passes (a module function no hook names) replaced by one
    that rewrites the region graph first; returns its identity."""
    import torch._inductor.compile_fx as compile_fx

    original = compile_fx._recursive_post_grad_passes

    def _recursive_post_grad_passes(gm, is_inference=False):
        if when(gm):
            mul_to_add(gm.graph)
            gm.recompile()
        return original(gm, is_inference=is_inference)

    monkeypatch.setattr(compile_fx, "_recursive_post_grad_passes", _recursive_post_grad_passes)
    return qualified("_patch_post_grad_pipeline_step.<locals>._recursive_post_grad_passes")


def test_monkeypatched_module_function_of_inductor_is_refused_by_its_code(monkeypatch):
    name = _patch_post_grad_pipeline_step(monkeypatch)
    violation = refused(region_fn, torch.randn(8))
    assert violation.pass_name == name and RAN == []
    assert "patched into torch._inductor.compile_fx:_recursive_post_grad_passes" in violation.reason


def test_registered_code_that_changes_the_graph_is_still_refused_by_effect(monkeypatch, tmp_path):
    """Registering the code lets it run; it does not explain a graph change no registered pass
    made: the effect check refuses that."""
    name = _patch_post_grad_pipeline_step(monkeypatch)
    user_registry(monkeypatch, tmp_path, (name, "lowering", "region"))
    violation = refused(region_fn, torch.randn(8))
    assert violation.kind == "effect" and violation.stage == "lowering"
    assert "target aten.mul.Tensor -> aten.add.Tensor" in violation.reason and RAN == ["mul_to_add"]


def test_pass_that_acts_only_on_the_second_compile_is_refused_there(monkeypatch):
    """Recompiles (a new shape) go through the guard like the first compile."""
    import torch._functorch.partitioners as partitioners

    original = partitioners.reordering_to_mimic_autograd_engine
    calls = []

    def reordering_to_mimic_autograd_engine(gm):
        gm = original(gm)
        calls.append(1)
        if len(calls) == 2:
            mul_to_add(gm.graph)
            gm.recompile()
        return gm

    monkeypatch.setattr(partitioners, "reordering_to_mimic_autograd_engine", reordering_to_mimic_autograd_engine)
    compiled = compile_lite(plain_fn, dynamic=False)
    compiled(torch.randn(8, requires_grad=True)).sum().backward()
    assert RAN == [] and not lite_compiler.last_ledger().refused
    with pytest.raises(lite_compiler.LitePassViolation) as err:
        compiled(torch.randn(9, requires_grad=True)).sum().backward()
    assert err.value.kind == "effect" and err.value.stage == "aot" and RAN == ["mul_to_add"]


# ---- lowerings and decompositions -----------------------------------------------------------------

def _override_cos_lowering(monkeypatch, table_name):
    from torch._inductor import lowering

    def cos_as_sin(x):
        RAN.append("cos_as_sin")
        return lowering.lowerings[aten.sin.default](x)

    monkeypatch.setitem(getattr(lowering, table_name), aten.cos.default, cos_as_sin)
    return qualified("_override_cos_lowering.<locals>.cos_as_sin")


@pytest.mark.parametrize("table", ["lowerings", "user_lowerings"])
def test_lowering_override_is_refused_by_its_identity(monkeypatch, table):
    from torch._inductor import lowering

    if not hasattr(lowering, table):
        pytest.skip(f"torch {torch.__version__} has no {table}")
    name = _override_cos_lowering(monkeypatch, table)
    violation = refused(region_fn, torch.randn(8))
    assert violation.pass_name == name and RAN == []
    assert f"the lowering of aten.cos.default in torch._inductor.lowering.{table}" in violation.reason


def test_lowering_override_through_register_lowering_is_refused(monkeypatch):
    from torch._inductor import lowering

    monkeypatch.setitem(lowering.lowerings, aten.cos.default, lowering.lowerings[aten.cos.default])

    def cos_plus_one(x):
        RAN.append("cos_plus_one")
        return lowering.lowerings[aten.sin.default](x)

    lowering.register_lowering(aten.cos.default)(cos_plus_one)  # torch's own wrapper around it
    violation = refused(region_fn, torch.randn(8))
    assert violation.pass_name.endswith("<locals>.cos_plus_one") and RAN == []


def test_lowering_override_registered_for_regions_runs_there(monkeypatch, tmp_path):
    name = _override_cos_lowering(monkeypatch, "lowerings")
    user_registry(monkeypatch, tmp_path, (name, "lowering", "region"))
    x = torch.randn(8)
    out = compile_lite(region_fn)(x)
    assert RAN and torch.allclose(out, (x.sin() * 2).sin() * 2 * 3)  # the override ran
    (row,) = [e for e in lite_compiler.last_ledger() if e.name == name]
    assert row.allowed and "region[r]" in row.graph


def _edit_cos_decomposition(monkeypatch):
    from torch._inductor import decomposition

    def cos_as_sin(x):
        RAN.append("cos_as_sin")
        return torch.sin(x)

    monkeypatch.setitem(decomposition.decompositions, aten.cos.default, cos_as_sin)
    return qualified("_edit_cos_decomposition.<locals>.cos_as_sin")


def test_decomposition_table_edit_used_inside_a_region_is_refused(monkeypatch):
    name = _edit_cos_decomposition(monkeypatch)
    violation = refused(region_fn, torch.randn(8))
    assert violation.pass_name == name and RAN == []
    assert "a decomposition in Inductor's table" in violation.reason


def test_decomposition_table_edit_never_runs_outside_regions_and_lite_is_bitwise_aot_eager(monkeypatch):
    def fn(x):
        y = x.cos() * 2  # cos outside the region: the edited decomposition must not apply
        with lite_compiler.region(id="r"):
            y = y.exp()
        return y.cos() + x

    _edit_cos_decomposition(monkeypatch)
    x = torch.randn(8)
    out = compile_lite(fn)(x)
    assert RAN == []
    ref = aot_eager(fn, x)
    # Outside the region (cos, mul, cos, add) is ATen; the region's exp may round differently.
    assert torch.allclose(out, ref)
    assert torch.equal(compile_lite(plain_fn)(x), aot_eager(plain_fn, x)) and RAN == []


def test_torch_own_lowerings_and_decompositions_pass_the_provenance_check():
    """The check refuses nothing of torch's own (else every region compile would fail)."""
    import torch._inductor.compile_fx  # noqa: F401  (imports every lowering)
    from torch._inductor import lowering
    from torch._inductor.decomposition import select_decomp_table

    from lite_compiler.provenance import foreign_identity

    assert not [k for k, v in lowering.lowerings.items() if foreign_identity(v)]
    assert not [k for k, v in select_decomp_table().items() if foreign_identity(v)]


# ---- pattern matcher registrations ----------------------------------------------------------------

@pytest.fixture
def third_party_pattern():
    """A third-party module's import-time registration into Inductor's own post-grad pattern
    pass (register_graph_pattern), taken out afterwards."""
    from torch._inductor.fx_passes import post_grad
    from torch._inductor.pattern_matcher import Arg, CallFunction, register_graph_pattern

    target = post_grad.pass_patterns[0]
    saved = {key: list(entries) for key, entries in target.patterns.items()}

    def rewrite_cos(match, x):
        RAN.append("rewrite_cos")

    register_graph_pattern(CallFunction(aten.cos.default, Arg()), pass_dict=target)(rewrite_cos)
    yield
    target.patterns.clear()
    target.patterns.update(saved)


def test_pattern_registered_into_torch_pattern_pass_never_runs_in_lite(third_party_pattern):
    x = torch.randn(8)
    compile_lite(region_fn)(x)
    assert RAN == [] and not lite_compiler.last_ledger().refused
    assert torch.equal(compile_lite(plain_fn)(x), aot_eager(plain_fn, x)) and RAN == []


@pytest.mark.slow
def test_the_same_pattern_does_run_in_default_mode(third_party_pattern):
    """The attack is real: default Inductor applies the registered pattern (caches off: a hit
    would skip the pattern pass)."""
    with torch._inductor.config.patch(fx_graph_cache=False), \
            torch._functorch.config.patch(enable_autograd_cache=False):
        torch.compile(plain_fn)(torch.randn(8))
    assert "rewrite_cos" in RAN


def test_own_pattern_pass_named_like_an_allowed_torch_pass_is_refused(monkeypatch):
    """A PatternMatcherPass named "fx_graph_cse" (an allowed torch name) applied from outside
    torch is qualified by the applying module: no borrowed permission."""
    import torch.fx.passes.utils.fuser_utils as fuser_utils
    from torch._inductor.pattern_matcher import PatternMatcherPass

    original = fuser_utils.fuse_by_partitions
    mine = PatternMatcherPass(pass_name="fx_graph_cse")

    def fuse_by_partitions(gm, *args, **kwargs):  # outside Inductor's modules: not swept
        mine.apply(gm)
        return original(gm, *args, **kwargs)

    monkeypatch.setattr(fuser_utils, "fuse_by_partitions", fuse_by_partitions)
    violation = refused(region_fn, torch.randn(8))
    assert violation.pass_name == qualified("fx_graph_cse")


# ---- partitioner config, caches across modes ------------------------------------------------------

class TwoLayer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(16, 64), torch.nn.Linear(64, 16)

    def forward(self, x):
        return self.b(torch.nn.functional.gelu(self.a(x)).sin()).sum()


def _loss_and_grads(model, x, backend):
    torch._dynamo.reset()
    model.zero_grad()
    loss = torch.compile(model, backend=backend)(x)
    loss.backward()
    return [loss.detach()] + [p.grad.clone() for p in model.parameters()]


def test_activation_memory_budget_set_by_the_user_is_overridden_loudly_and_bits_are_aot_eager():
    model, x = TwoLayer(), torch.randn(4, 16)
    reference = _loss_and_grads(model, x, "aot_eager")
    with torch._functorch.config.patch(activation_memory_budget=0.3), \
            pytest.warns(lite_compiler.LiteSettingOverridden, match="activation_memory_budget"):
        ours = _loss_and_grads(model, x, "lite")
    assert all(torch.equal(a, b) for a, b in zip(ours, reference))
    assert any(e.name == "config activation_memory_budget" and not e.allowed
               for e in lite_compiler.last_ledger())


def test_default_mode_compile_of_the_same_function_is_never_replayed_in_lite_mode():
    """Dynamo, AOTAutograd and FX graph caches warm from a default-mode compile of the same
    function: the lite compile compiles afresh (its own ledger) and is bitwise aot_eager."""
    x = torch.randn(8, requires_grad=True)
    with torch._inductor.config.patch(fx_graph_cache=True), \
            torch._functorch.config.patch(enable_autograd_cache=True):
        torch._dynamo.reset()
        torch.compile(plain_fn)(x).sum().backward()  # default Inductor, caches warm
        lite = torch.compile(plain_fn, backend="lite")  # no reset: same code object
        out = lite(x)
    ledger = lite_compiler.last_ledger()
    assert any(name.endswith("/fw") for name in ledger.graph_code)  # compiled by the lite compiler
    assert torch.equal(out, aot_eager(plain_fn, x.detach()))


def test_a_region_compiles_afresh_even_with_the_fx_graph_cache_switched_on():
    """A cache hit would skip every pass the guard must see: regions never read the cache."""
    with torch._inductor.config.patch(fx_graph_cache=True):
        for _ in range(2):
            compile_lite(region_fn)(torch.randn(8))
            assert "fuse_nodes" in lite_compiler.last_ledger().names()


# ---- GPU: CUDA graphs ------------------------------------------------------------------------------

@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_monkeypatched_pass_is_refused_under_lite_cuda_graphs(monkeypatch):
    _patch_view_to_reshape(monkeypatch, use_wraps=True)
    torch._dynamo.reset()
    with pytest.raises(lite_compiler.LitePassViolation) as err:
        torch.compile(region_fn, backend="lite", options={"cudagraphs": True})(
            torch.randn(8, device="cuda"))
    assert err.value.pass_name.endswith("view_to_reshape_and_more") and RAN == []


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_lite_cuda_graphs_outside_regions_are_bitwise_aot_eager_with_a_pattern_registered(third_party_pattern):
    x = torch.randn(64, device="cuda", requires_grad=True)
    torch._dynamo.reset()
    compiled = torch.compile(plain_fn, backend="lite", options={"cudagraphs": True})
    outs = [compiled(x) for _ in range(3)]
    ref = aot_eager(plain_fn, x)
    assert RAN == [] and all(torch.equal(o, ref) for o in outs)


# ---- more ways in --------------------------------------------------------------------------------

def test_user_code_registered_for_regions_in_a_config_key_runs_and_is_recorded(monkeypatch, tmp_path):
    from torch._inductor.choices import InductorChoices

    class CountingChoices(InductorChoices):
        def __init__(self):
            RAN.append("choices")
            super().__init__()

    name = qualified(CountingChoices.__qualname__)
    user_registry(monkeypatch, tmp_path, (name, "lowering", "region"))
    with torch._inductor.config.patch(inductor_choices_class=CountingChoices):
        compile_lite(region_fn)(torch.randn(8))
    assert not lite_compiler.last_ledger().refused
    rows = [e for e in lite_compiler.last_ledger() if e.name == name]
    assert rows and all(e.allowed for e in rows)


def test_user_pass_set_while_the_compile_runs_is_refused_before_the_region_compiles():
    """A custom op's Python code (here: its fake kernel, run while AOTAutograd traces) installs a
    pass after lite mode checked the config: the region compile checks again."""

    @torch.library.custom_op("lite_redteam::sneaky", mutates_args=())
    def sneaky(x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    @sneaky.register_fake
    def _(x):
        torch._inductor.config.post_grad_custom_post_pass = mul_to_add
        return torch.empty_like(x)

    def fn(x):
        y = sneaky(x)
        with lite_compiler.region(id="r"):
            return y.cos() * 2

    try:
        violation = refused(fn, torch.randn(8))
    finally:
        torch._inductor.config.post_grad_custom_post_pass = None
    assert violation.pass_name == qualified("mul_to_add") and RAN == []


def test_torch_function_whose_code_was_swapped_in_place_runs_as_the_new_code(monkeypatch):
    """No attribute changes at all: view_to_reshape's own function object gets another
    __code__. Provenance reads the code that runs, so it is still seen."""
    import torch._inductor.compile_fx as compile_fx

    def swapped(gm):
        RAN.append("swapped")

    monkeypatch.setattr(compile_fx.view_to_reshape, "__code__", swapped.__code__)
    violation = refused(region_fn, torch.randn(8))
    assert violation.pass_name == qualified(
        "test_torch_function_whose_code_was_swapped_in_place_runs_as_the_new_code.<locals>.swapped")
    assert RAN == []


def test_monkeypatched_region_compiler_entry_is_refused(monkeypatch):
    import torch._inductor.compile_fx as compile_fx

    original = compile_fx.compile_fx_inner

    def compile_fx_inner(*args, **kwargs):
        RAN.append("compile_fx_inner")
        return original(*args, **kwargs)

    monkeypatch.setattr(compile_fx, "compile_fx_inner", compile_fx_inner)
    violation = refused(region_fn, torch.randn(8))
    assert violation.pass_name.endswith("<locals>.compile_fx_inner") and RAN == []
    assert "compile_fx_inner" in violation.reason  # found by the sweep, or where it is called


@pytest.mark.parametrize("key", ["reorder_for_compute_comm_overlap_passes", "custom_should_partition_ops"])
def test_forced_list_config_set_by_the_user_is_overridden_loudly_and_never_runs(key):
    value = [mul_to_add] if key.startswith("reorder") else ["aten::cos"]
    with torch._inductor.config.patch({key: value}), \
            pytest.warns(lite_compiler.LiteSettingOverridden, match=key):
        compile_lite(region_fn)(torch.randn(8))
    assert RAN == []
    assert any(e.name == f"config {key}" and not e.allowed for e in lite_compiler.last_ledger())


def test_method_patched_into_any_inductor_class_is_refused_by_its_code(monkeypatch):
    """No hook names CppOverrides.cos (how a region's cos becomes C++): a patch there changes
    what a region computes without changing its FX graph, schedule or wrapper lines. The sweep
    of Inductor's classes finds it by its code."""
    from torch._inductor.codegen.cpp import CppOverrides

    def cos(x):
        RAN.append("cos")
        return f"std::sin({x})"

    monkeypatch.setattr(CppOverrides, "cos", staticmethod(cos))
    violation = refused(region_fn, torch.randn(8))
    assert violation.pass_name.endswith("<locals>.cos") and RAN == []
    assert "patched into torch._inductor.codegen.cpp:CppOverrides.cos" in violation.reason


def test_the_sweep_finds_nothing_in_torch_own_classes():
    import torch._inductor.compile_fx  # noqa: F401
    import torch._inductor.codegen.cpp  # noqa: F401

    from lite_compiler.provenance import foreign_methods

    assert foreign_methods() == []


# ---- registry edge cases a team can write -------------------------------------------------------

def test_an_entry_for_other_torch_releases_grants_nothing_on_this_one(monkeypatch, tmp_path):
    name = _patch_view_to_reshape(monkeypatch, use_wraps=False)
    path = tmp_path / "team.toml"
    path.write_text(f'[[pass]]\nname = "{name}"\nstage = "post_grad"\nlite = "always"\n'
                    'kind = "function"\ntorch = "<2.0"\nwhy = "old"\n')
    monkeypatch.setenv("LITE_GUARD_REGISTRIES", str(path))
    violation = refused(region_fn, torch.randn(8))
    assert violation.pass_name == name and "only for torch <2.0" in violation.reason and RAN == []


def test_a_hook_gated_by_a_config_key_torch_lacks_fails_closed_before_compiling(monkeypatch, tmp_path):
    path = tmp_path / "team.toml"
    path.write_text('[[pass]]\nname = "myproj:gated"\nstage = "lowering"\nlite = "never"\n'
                    'kind = "function"\nhook = "torch._inductor.compile_fx:view_to_reshape"\n'
                    'when = "no_such_gate_key"\nwhy = "test"\n')
    monkeypatch.setenv("LITE_GUARD_REGISTRIES", str(path))
    with pytest.raises(lite_compiler.LiteConfigError, match="its when key 'no_such_gate_key' is not"):
        compile_lite(region_fn)(torch.randn(8))


def test_user_code_in_a_config_key_torch_types_as_str_is_found_by_its_value():
    """estimate_op_runtime is typed str, yet Inductor calls it when it holds a callable: the
    check reads values, not annotations."""
    with torch._inductor.config.patch(estimate_op_runtime=estimate):
        violation = refused(region_fn, torch.randn(8))
    assert violation.pass_name == qualified("estimate") and "estimate_op_runtime" in violation.reason


def test_pattern_pass_appended_to_inductor_pass_list_never_runs(monkeypatch):
    from torch._inductor.fx_passes import post_grad
    from torch._inductor.pattern_matcher import PatternMatcherPass

    class Recording(PatternMatcherPass):
        def apply(self, gm):
            RAN.append("appended")
            return 0

    monkeypatch.setattr(post_grad, "pass_patterns", [*post_grad.pass_patterns, Recording()])
    x = torch.randn(8)
    compile_lite(region_fn)(x)
    assert RAN == [] and not lite_compiler.last_ledger().refused
    assert torch.equal(compile_lite(plain_fn)(x), aot_eager(plain_fn, x))


def test_pass_acting_only_on_the_backward_graph_is_refused_when_the_backward_compiles(monkeypatch, tmp_path):
    """AOTAutograd compiles the backward lazily, at the first .backward(): the guard is there.
    (The code is registered, so only what it does to the backward graph is refused.)"""
    name = _patch_post_grad_pipeline_step(monkeypatch, when=lambda gm: any(
        "tangents" in n.name for n in gm.graph.find_nodes(op="placeholder")))
    user_registry(monkeypatch, tmp_path, (name, "lowering", "region"))

    def fn(x):
        y = x.sin() * 2
        with lite_compiler.region(id="r"):
            y = (y.cos() * 2).exp() * 3  # the backward region has mul nodes
        return y

    out = compile_lite(fn)(torch.randn(8, requires_grad=True))  # forward compiles fine
    assert RAN == []
    with pytest.raises(lite_compiler.LitePassViolation) as err:
        out.sum().backward()
    assert err.value.kind == "effect" and "/bw/region" in err.value.graph and RAN == ["mul_to_add"]


def test_another_package_registering_the_backend_name_lite_does_not_take_over(monkeypatch):
    """A package registers its own Dynamo backend under the name "lite" (before Dynamo loaded
    our entry point): after ``import lite_compiler``, backend="lite" still reaches the guarded
    compiler, not theirs."""
    from torch._dynamo.backends import registry as dynamo_registry

    def impostor(gm, example_inputs, **kwargs):
        RAN.append("impostor")
        return gm.forward

    monkeypatch.setitem(dynamo_registry._COMPILER_FNS, "lite", impostor)
    x = torch.randn(8)
    out = compile_lite(plain_fn)(x)
    assert RAN == [] and lite_compiler.last_ledger().graph_code
    assert torch.equal(out, aot_eager(plain_fn, x))


def test_code_patched_under_a_name_an_allowed_aot_pass_calls_is_refused(monkeypatch):
    """tensorify_python_scalars is allowed (AOTAutograd runs it for aot_eager too); the function
    it calls by its module's global name is replaced. The replacement would run under the
    allowed pass's permission; it runs as itself."""
    import torch._functorch._aot_autograd.graph_compile as graph_compile

    original = graph_compile.tensorify_python_scalars

    def tensorify_and_more(gm, *args, **kwargs):
        result = original(gm, *args, **kwargs)
        mul_to_add(gm.graph)
        gm.recompile()
        return result

    monkeypatch.setattr(graph_compile, "tensorify_python_scalars", tensorify_and_more)
    violation = refused(plain_fn, torch.randn(8, requires_grad=True), backward=True)
    assert violation.pass_name.endswith("<locals>.tensorify_and_more") and RAN == []
    assert "called by torch's 'tensorify_python_scalars'" in violation.reason


def drop_last_node(nodes):
    RAN.append("drop_last_node")
    return list(nodes)[:-1]


def test_registered_scheduler_custom_pass_that_drops_a_kernel_is_refused_by_effect(monkeypatch, tmp_path):
    """A _pre_fusion_custom_pass registered for regions runs; dropping a kernel is no registered
    pass's doing (only dead-node elimination may remove nodes, and it is off): refused."""
    user_registry(monkeypatch, tmp_path, (qualified("drop_last_node"), "scheduler", "region"))

    def fn(x, z):
        with lite_compiler.region(id="r"):
            a = x.cos() * 2
            b = z.exp() + 1
        return a, b

    with torch._inductor.config.patch(_pre_fusion_custom_pass=drop_last_node):
        violation = refused(fn, torch.randn(8), torch.randn(5))
    assert RAN == ["drop_last_node"] and violation.kind == "effect" and violation.stage == "scheduler"
    assert "vanished from the schedule" in violation.reason


@pytest.mark.slow
def test_region_compiled_in_a_subprocess_where_the_guard_cannot_see_is_refused(monkeypatch):
    """TORCHINDUCTOR_FX_COMPILE_MODE=subprocess: Inductor lowers and schedules the region in a
    child process, where no guard hook is installed; lite mode refuses code it did not see made."""
    import torch._inductor.compile_fx as compile_fx
    from torch._inductor.compile_fx import FxCompileMode

    monkeypatch.setattr(compile_fx, "fx_compile_mode", FxCompileMode.SUBPROCESS)
    violation = refused(region_fn, torch.randn(8))
    assert violation.kind == "effect" and "without being lowered in this process" in violation.reason


def test_user_pass_claiming_a_torch_module_and_name_is_named_by_its_code():
    """__module__ and __qualname__ set to torch's allowed view_to_reshape: the pass is still
    identified by where its code comes from."""
    def spoofed(graph):
        mul_to_add(graph)

    spoofed.__module__ = "torch._inductor.fx_passes.post_grad"
    spoofed.__qualname__ = spoofed.__name__ = "view_to_reshape"
    with torch._inductor.config.patch(post_grad_custom_post_pass=spoofed):
        violation = refused(region_fn, torch.randn(8))
    assert violation.pass_name == qualified(
        "test_user_pass_claiming_a_torch_module_and_name_is_named_by_its_code.<locals>.spoofed")
    assert RAN == []


def test_observer_applied_by_code_that_claims_a_torch_module_is_qualified(monkeypatch, tmp_path):
    """Code compiled outside torch but run under a torch module's name (its globals say
    torch._inductor...) applies an observer named like the allowed fx_graph_cse: torch's name
    is for code compiled from torch's files, so the pass is qualified and refused."""
    import torch.fx.passes.utils.fuser_utils as fuser_utils
    from torch.fx.passes.graph_transform_observer import GraphTransformObserver

    source = tmp_path / "spoof.py"
    source.write_text("def apply(gm):\n"
                      "    GraphTransformObserver(gm, 'fx_graph_cse').apply_graph_pass(lambda g: None)\n")
    namespace = {"__name__": "torch._inductor.fx_passes.post_grad",
                 "GraphTransformObserver": GraphTransformObserver}
    exec(compile(source.read_text(), str(source), "exec"), namespace)
    original = fuser_utils.fuse_by_partitions

    def fuse_by_partitions(gm, *args, **kwargs):
        namespace["apply"](gm)
        return original(gm, *args, **kwargs)

    monkeypatch.setattr(fuser_utils, "fuse_by_partitions", fuse_by_partitions)
    violation = refused(region_fn, torch.randn(8))
    assert violation.pass_name == "torch._inductor.fx_passes.post_grad:fx_graph_cse"


def test_lowering_override_reached_only_through_another_lowering_is_refused(monkeypatch, tmp_path):
    """The region graph names only aten.cos; its lowering calls the table entry of aten.sin,
    which a third party overrode: the override is checked when it is called, not only when the
    graph names its op."""
    from torch._inductor import lowering

    def sin_override(x):
        RAN.append("sin_override")
        return lowering.make_fallback  # never reached: refused first

    def cos_via_sin(x):  # stands for a torch lowering that calls another through the table
        return lowering.lowerings[aten.sin.default](x)

    monkeypatch.setitem(lowering.lowerings, aten.sin.default, sin_override)
    monkeypatch.setitem(lowering.lowerings, aten.cos.default, cos_via_sin)
    user_registry(monkeypatch, tmp_path, (qualified(  # the caller is allowed, the callee not
        "test_lowering_override_reached_only_through_another_lowering_is_refused.<locals>.cos_via_sin"),
        "lowering", "region"))

    def fn(x):
        with lite_compiler.region(id="r"):
            return x.cos() * 2

    violation = refused(fn, torch.randn(8))
    assert violation.pass_name.endswith("<locals>.sin_override") and RAN == []


# ---- round 6: tables, containers, base classes, timing, threads, wrappers --------------------------

def test_torch_lowering_moved_under_another_op_is_refused(monkeypatch):
    """lowerings[aten.cos] = lowerings[aten.sin]: torch's own code (provenance passes it), yet the
    region would compute sin. Torch's register_lowering records the ops a lowering is for."""
    from torch._inductor import lowering

    monkeypatch.setitem(lowering.lowerings, aten.cos.default, lowering.lowerings[aten.sin.default])
    violation = refused(region_fn, torch.randn(8))
    assert violation.pass_name == "torch._inductor.lowering:lowerings[aten.cos.default]"
    assert "is torch's lowering of aten.sin" in violation.reason


def test_torch_lowering_moved_under_an_op_reached_only_through_the_table_is_refused(monkeypatch, tmp_path):
    from torch._inductor import lowering

    def cos_via_sin(x):  # an allowed lowering that calls another through the table
        RAN.append("cos_via_sin")
        return lowering.lowerings[aten.sin.default](x)

    monkeypatch.setitem(lowering.lowerings, aten.sin.default, lowering.lowerings[aten.exp.default])
    monkeypatch.setitem(lowering.lowerings, aten.cos.default, cos_via_sin)
    user_registry(monkeypatch, tmp_path, (qualified(
        "test_torch_lowering_moved_under_an_op_reached_only_through_the_table_is_refused.<locals>.cos_via_sin"),
        "lowering", "region"))

    def fn(x):
        with lite_compiler.region(id="r"):
            return x.cos() * 2

    violation = refused(fn, torch.randn(8))
    assert violation.pass_name == "torch._inductor.lowering:lowerings[aten.sin.default]"
    assert "called while a region lowers" in violation.reason and RAN == ["cos_via_sin"]


def test_torch_own_lowering_table_has_no_moved_entry():
    import torch._inductor.compile_fx  # noqa: F401  (imports every lowering)
    from torch._inductor import lowering

    from lite_compiler.provenance import lowering_moved

    assert [op for op, fn in lowering.lowerings.items() if lowering_moved(op, fn)] == []
    # The record exists: most of the table is checked, not skipped.
    assert sum(lowering_moved(aten.cos.default, fn) is not None for fn in lowering.lowerings.values()) > 1000


def test_method_patched_into_a_torch_base_class_of_inductor_is_refused(monkeypatch):
    """GraphLowering is a torch.fx.Interpreter: a method patched into Interpreter runs inside
    every region's lowering. torch.fx is not Inductor, but what Inductor's classes inherit is."""
    original = torch.fx.Interpreter.fetch_args_kwargs_from_env

    def fetch_args_kwargs_from_env(self, node):
        if type(self).__name__ == "GraphLowering":
            RAN.append("fetch")
        return original(self, node)

    monkeypatch.setattr(torch.fx.Interpreter, "fetch_args_kwargs_from_env", fetch_args_kwargs_from_env)
    violation = refused(region_fn, torch.randn(8))
    assert violation.pass_name.endswith("<locals>.fetch_args_kwargs_from_env") and RAN == []
    assert "patched into torch.fx.interpreter:Interpreter.fetch_args_kwargs_from_env" in violation.reason


@pytest.fixture
def cpu_codegen():
    from torch._inductor.codegen import common

    common.init_backend_registration()
    saved = dict(common.device_codegens), dict(common.custom_backend_passes)
    yield common
    common.device_codegens.clear()
    common.device_codegens.update(saved[0])
    common.custom_backend_passes.clear()
    common.custom_backend_passes.update(saved[1])


def test_scheduling_class_registered_for_the_device_is_refused(cpu_codegen):
    """register_backend_for_device("cpu", ...): an out-of-tree Scheduling generates the region's
    kernels. The class is held in a dict of Inductor's (no hook, no config key names it)."""
    from torch._inductor.codegen.cpp import CppScheduling

    class MyScheduling(CppScheduling):
        def codegen_node(self, node):
            RAN.append("codegen_node")
            return super().codegen_node(node)

    cpu = cpu_codegen.device_codegens["cpu"]
    cpu_codegen.register_backend_for_device("cpu", MyScheduling, cpu.wrapper_codegen,
                                            cpu.cpp_wrapper_codegen, cpu.fx_wrapper_codegen)
    violation = refused(region_fn, torch.randn(8))
    assert violation.pass_name == qualified(MyScheduling.__qualname__) and RAN == []
    assert "torch._inductor.codegen.common:device_codegens['cpu']" in violation.reason


def test_device_custom_pass_is_refused_in_region_compiles_and_never_runs_outside(cpu_codegen):
    def device_pass(graph):
        mul_to_add(graph)

    cpu_codegen.custom_backend_passes["cpu"] = device_pass
    violation = refused(region_fn, torch.randn(8))
    assert violation.pass_name.endswith("<locals>.device_pass") and RAN == []
    x = torch.randn(8)
    assert torch.equal(compile_lite(plain_fn)(x), aot_eager(plain_fn, x)) and RAN == []


def test_patched_decomposition_table_selector_is_refused_before_it_runs(monkeypatch):
    """select_decomp_table runs while AOTAutograd traces, before any region compiles: Inductor is
    swept for foreign code before the trace starts."""
    from torch._inductor import decomposition

    original = decomposition.select_decomp_table

    def select_decomp_table():
        RAN.append("select_decomp_table")
        return original()

    monkeypatch.setattr(decomposition, "select_decomp_table", select_decomp_table)
    violation = refused(region_fn, torch.randn(8))
    assert violation.pass_name.endswith("<locals>.select_decomp_table") and RAN == []


def test_method_patched_after_the_forward_compiled_is_refused_when_the_backward_compiles(monkeypatch):
    """AOTAutograd compiles the backward at the first .backward(): a patch put into Inductor in
    between (the region's backward computes cos) is swept for then."""
    from torch._inductor.codegen.cpp import CppOverrides

    def fn(x):
        with lite_compiler.region(id="r"):
            y = x.sin() * 2  # backward: cos(x) * 2 * grad, in the region
        return y * 3

    out = compile_lite(fn)(torch.randn(8, requires_grad=True))

    def cos(x):
        RAN.append("cos")
        return f"std::sin({x})"

    monkeypatch.setattr(CppOverrides, "cos", staticmethod(cos))
    with pytest.raises(lite_compiler.LitePassViolation) as err:
        out.sum().backward()
    assert err.value.pass_name.endswith("<locals>.cos") and "/bw" in err.value.graph and RAN == []


def test_lite_compile_in_another_thread_refuses_a_monkeypatched_pass(monkeypatch):
    """Sessions are per thread; a compile run by a worker thread is guarded like any other."""
    import threading

    name = _patch_view_to_reshape(monkeypatch, use_wraps=True)
    caught = []

    def worker():
        try:
            compile_lite(region_fn)(torch.randn(8))
        except lite_compiler.LitePassViolation as exc:
            caught.append(exc)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert [v.pass_name for v in caught] == [name] and RAN == []


def test_backend_that_wraps_lite_is_still_guarded(monkeypatch):
    """A team's own backend that delegates to lite (logging, say) gets lite's guard with it."""
    from lite_compiler.backend import lite_backend

    def my_backend(gm, example_inputs):
        RAN.append("my_backend")
        return lite_backend(gm, example_inputs)

    name = _patch_view_to_reshape(monkeypatch, use_wraps=False)
    torch._dynamo.reset()
    with pytest.raises(lite_compiler.LitePassViolation) as err:
        torch.compile(region_fn, backend=my_backend)(torch.randn(8))
    assert err.value.pass_name == name and RAN == ["my_backend"]


def test_pattern_registered_into_joint_graph_patterns_never_runs_in_lite():
    from torch._inductor.fx_passes import joint_graph
    from torch._inductor.pattern_matcher import Arg, CallFunction, register_graph_pattern

    saved = {key: list(entries) for key, entries in joint_graph.patterns.patterns.items()}

    def rewrite_cos(match, x):
        RAN.append("rewrite_cos")

    register_graph_pattern(CallFunction(aten.cos.default, Arg()), pass_dict=joint_graph.patterns)(rewrite_cos)
    try:
        x = torch.randn(8, requires_grad=True)
        compile_lite(region_fn)(x).sum().backward()
        assert RAN == [] and not lite_compiler.last_ledger().refused
        assert torch.equal(compile_lite(plain_fn)(x), aot_eager(plain_fn, x)) and RAN == []
    finally:
        joint_graph.patterns.patterns.clear()
        joint_graph.patterns.patterns.update(saved)


def test_torch_decomposition_moved_under_another_op_is_refused(monkeypatch):
    """decompositions[aten.hardsigmoid] = decompositions[aten.hardswish]: torch's own code,
    registered by torch for hardswish; in a region it would compute hardswish."""
    import torch.nn.functional as F
    from torch._inductor import decomposition

    table = decomposition.decompositions
    monkeypatch.setitem(table, aten.hardsigmoid.default, table[aten.hardswish.default])

    def fn(x):
        with lite_compiler.region(id="r"):
            return F.hardsigmoid(x) * 2

    violation = refused(fn, torch.randn(8))
    assert violation.pass_name == "torch._inductor.decomposition:decompositions[aten.hardsigmoid.default]"
    assert "is torch's decomposition of aten.hardswish.default" in violation.reason


def test_torch_own_decomposition_table_has_no_moved_entry():
    import torch._inductor.compile_fx  # noqa: F401
    from torch._inductor.decomposition import select_decomp_table

    from lite_compiler.provenance import decomposition_moved

    table = select_decomp_table()
    assert [op for op, fn in table.items() if decomposition_moved(op, fn)] == []
    # Torch keeps a record for most of the table: it is checked, not skipped.
    assert sum(decomposition_moved(aten.cos.default, fn) is not None for fn in table.values()) > 0.8 * len(table)


def test_change_between_the_partitioner_and_the_lite_compiler_by_a_patch_is_refused():
    """AOTAutograd's own steps after the partitioner (saved-tensors hooks inlining, effect tokens)
    run for aot_eager too, so a change there was only reported; when the change is seen, AOTAutograd's
    modules are swept, and a patched step found there (off the call path: it returned before the
    lite compiler ran) is the cause, refused as itself."""
    import torch._functorch._aot_autograd.graph_compile as graph_compile

    original = graph_compile.maybe_inline_graph_saved_tensors_hooks

    def inline_and_more(fw_module, bw_module, *args, **kwargs):
        mul_to_add(fw_module.graph)
        fw_module.recompile()
        return original(fw_module, bw_module, *args, **kwargs)

    x = torch.randn(8, requires_grad=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(graph_compile, "maybe_inline_graph_saved_tensors_hooks", inline_and_more)
        violation = refused(plain_fn, x)
    assert violation.pass_name.endswith(
        "test_change_between_the_partitioner_and_the_lite_compiler_by_a_patch_is_refused.<locals>.inline_and_more")
    assert "graph_compile:maybe_inline_graph_saved_tensors_hooks" in violation.reason
    assert "target aten.mul.Tensor -> aten.add.Tensor" in violation.reason
    assert RAN == ["mul_to_add"]


def test_unchanged_graphs_after_the_partitioner_report_nothing():
    import warnings

    from lite_compiler.errors import LiteGuardReport

    with warnings.catch_warnings():
        warnings.simplefilter("error", LiteGuardReport)
        model, x = TwoLayer(), torch.randn(4, 16)
        compile_lite(model)(x).backward()
    assert not [e for e in lite_compiler.last_ledger() if e.kind == "effect"]


def _exec_as_torch(source, module, **names):
    """Code compiled under a torch file's name, run in a namespace of its own that claims the
    torch module's name: it looks like torch's code by file and by module name."""
    namespace = {"__name__": module.__name__, **names}
    exec(compile(source, module.__file__, "exec"), namespace)
    return namespace


def test_code_compiled_under_a_torch_file_name_is_not_torch_code_at_a_hook(monkeypatch):
    import torch._inductor.compile_fx as compile_fx

    namespace = _exec_as_torch("def view_to_reshape(gm):\n    RAN.append('exec')\n    return ORIGINAL(gm)\n",
                               compile_fx, RAN=RAN, ORIGINAL=compile_fx.view_to_reshape)
    monkeypatch.setattr(compile_fx, "view_to_reshape", namespace["view_to_reshape"])
    violation = refused(region_fn, torch.randn(8))
    assert violation.pass_name == "torch._inductor.compile_fx:view_to_reshape" and RAN == []


def test_code_compiled_under_a_torch_file_name_is_found_by_the_sweep(monkeypatch):
    import torch._inductor.compile_fx as compile_fx

    namespace = _exec_as_torch(
        "def _recursive_post_grad_passes(gm, is_inference=False):\n"
        "    RAN.append('exec')\n    return ORIGINAL(gm, is_inference=is_inference)\n",
        compile_fx, RAN=RAN, ORIGINAL=compile_fx._recursive_post_grad_passes)
    monkeypatch.setattr(compile_fx, "_recursive_post_grad_passes", namespace["_recursive_post_grad_passes"])
    violation = refused(region_fn, torch.randn(8))
    assert violation.pass_name == "torch._inductor.compile_fx:_recursive_post_grad_passes" and RAN == []
    assert "patched into torch._inductor.compile_fx:_recursive_post_grad_passes" in violation.reason


@pytest.fixture
def choices_handler():
    """V.set_choices_handler(...), as torch's choices.py suggests for out-of-tree heuristics;
    torch's own handler back afterwards."""
    from torch._inductor.choices import InductorChoices
    from torch._inductor.virtualized import V

    class MyHeuristics(InductorChoices):
        def can_fuse(self, *args, **kwargs):
            RAN.append("can_fuse")
            return super().can_fuse(*args, **kwargs)

    V.set_choices_handler(MyHeuristics())
    yield MyHeuristics
    V.set_choices_handler(InductorChoices())


def fusing_region_fn(x):
    with lite_compiler.region(id="r"):
        y = x.cos() * 2
        return y.sum(0) + y.exp().sum(0)  # the scheduler asks V.choices.can_fuse


def test_choices_handler_installed_in_inductor_virtualized_is_refused(choices_handler):
    violation = refused(fusing_region_fn, torch.randn(8, 8))
    assert violation.pass_name == qualified(choices_handler.__qualname__) and RAN == []
    assert "virtualized 'choices' handler" in violation.reason


def test_choices_handler_registered_for_regions_runs_there(choices_handler, monkeypatch, tmp_path):
    name = qualified(choices_handler.__qualname__)
    user_registry(monkeypatch, tmp_path, (name, "lowering", "region"))
    compile_lite(fusing_region_fn)(torch.randn(8, 8))
    assert "can_fuse" in RAN
    assert [e.allowed for e in lite_compiler.last_ledger() if e.name == name] == [True]


def test_record_field_set_in_place_after_a_clean_compile_is_refused(cpu_codegen):
    """The sweep skips an Inductor that holds the very objects of the last sweep: a field of a
    record Inductor holds (DeviceCodegen.scheduling), set in place, is a change it sees."""
    from torch._inductor.codegen.cpp import CppScheduling

    class MyScheduling(CppScheduling):
        def codegen_node(self, node):
            RAN.append("codegen_node")
            return super().codegen_node(node)

    compile_lite(region_fn)(torch.randn(8))  # a clean compile: the sweep's record is warm
    assert not lite_compiler.last_ledger().refused
    cpu = cpu_codegen.device_codegens["cpu"]
    original = cpu.scheduling
    object.__setattr__(cpu, "scheduling", MyScheduling)  # the same record object, changed
    try:
        violation = refused(region_fn, torch.randn(8))
    finally:
        object.__setattr__(cpu, "scheduling", original)
    assert violation.pass_name == qualified(MyScheduling.__qualname__) and RAN == []


def test_torch_code_object_run_with_globals_of_its_own_is_not_torch_code(monkeypatch):
    """types.FunctionType(torch_code, other_globals): torch's bytecode whose global names resolve
    to the attacker's functions (here: what _recursive_post_grad_passes calls as
    post_grad_passes). Its globals are no module's namespace, so it is not torch's code."""
    import types

    import torch._inductor.compile_fx as compile_fx

    def post_grad_passes(gm, is_inference):
        RAN.append("post_grad_passes")
        mul_to_add(gm.graph)

    original = compile_fx._recursive_post_grad_passes
    rebound = types.FunctionType(original.__code__, {**vars(compile_fx), "post_grad_passes": post_grad_passes},
                                 original.__name__, original.__defaults__, original.__closure__)
    rebound.__kwdefaults__ = original.__kwdefaults__
    monkeypatch.setattr(compile_fx, "_recursive_post_grad_passes", rebound)
    violation = refused(region_fn, torch.randn(8))
    assert violation.pass_name == "torch._inductor.compile_fx:_recursive_post_grad_passes" and RAN == []


def test_inductor_class_replaced_by_a_subclass_from_outside_torch_is_refused(monkeypatch):
    """compile_fx.GraphLowering = MyGraphLowering: no method of torch's class changes; the name
    torch looks up holds another class, whose code lowers every region."""
    import torch._inductor.compile_fx as compile_fx
    from torch._inductor.graph import GraphLowering

    class MyGraphLowering(GraphLowering):
        def run(self, *args):
            RAN.append("run")
            return super().run(*args)

    monkeypatch.setattr(compile_fx, "GraphLowering", MyGraphLowering)
    violation = refused(region_fn, torch.randn(8))
    assert violation.pass_name == qualified(MyGraphLowering.__qualname__) and RAN == []
    assert "patched into torch._inductor.compile_fx:GraphLowering" in violation.reason


def test_moved_decomposition_of_an_op_in_a_bitwise_fusion_group_is_refused(monkeypatch, tmp_path):
    """Bitwise fusion decomposes its groups with Inductor's table itself (not through the trace's
    selective wrappers): the group's entries are asked about all the same. sgn (abs's backward)
    is in a group of this step; its decomposition is replaced by torch's of hardswish."""
    from torch._inductor import decomposition

    monkeypatch.setenv("LITE_GUARD_CACHE_DIR", str(tmp_path))  # verdicts of our own
    table = decomposition.decompositions
    monkeypatch.setitem(table, aten.sgn.default, table[aten.hardswish.default])
    model = torch.nn.Sequential(torch.nn.Linear(24, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))

    def loss_of(m, x, target):
        return ((m(x) - target) ** 2 * 0.5 + m[0].weight.abs().mean() * 1e-3).mean()

    step = torch.compile(loss_of, backend="lite", options={"bitwise_fusion": True})
    with pytest.raises(lite_compiler.LitePassViolation) as err:
        step(model, torch.randn(16, 24), torch.randn(16, 8)).backward()
    assert err.value.pass_name == "torch._inductor.decomposition:decompositions[aten.sgn.default]"


def test_code_compiled_by_exec_with_its_default_name_is_found_by_the_sweep(monkeypatch):
    """exec(source) names its code "<string>", as torch's generated methods are named (dataclass
    and DefaultHandler methods stay trusted); a module-level function of that name is not."""
    import torch._inductor.compile_fx as compile_fx

    namespace = {"RAN": RAN, "ORIGINAL": compile_fx._recursive_post_grad_passes}
    exec("def _recursive_post_grad_passes(gm, is_inference=False):\n"
         "    RAN.append('exec')\n    return ORIGINAL(gm, is_inference=is_inference)\n", namespace)
    monkeypatch.setattr(compile_fx, "_recursive_post_grad_passes", namespace["_recursive_post_grad_passes"])
    violation = refused(region_fn, torch.randn(8))
    assert "patched into torch._inductor.compile_fx:_recursive_post_grad_passes" in violation.reason
    assert RAN == []
