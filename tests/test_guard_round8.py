"""Red team, round 8 (docs/guard.md, "Red team: the attack matrix"): no pass runs unseen in lite
mode. Shapes of custom passes the identity code had not met (a ``functools.partial``, a bound
method, a ``__call__`` that is not a function, a ``CustomGraphPass`` whose ``uuid`` is None, an
object whose class is swapped after it was registered); code that edits the graph being traced
or lowered from inside an op's fake kernel; plugin tables Inductor reads by name (its fusion
registry, its pattern passes after a first compile, torch's global decomposition table); a
config patch entered between a forward and its lazy backward; a global module hook on every
GraphModule call; a torch.fx Transformer run by a ``torch.library`` kernel; and Inductor's FX
graph cache filled by a default-mode compile that ran a pass. Each attack is a real compile on
real torch: refused (the exact message, the attacking code named) or bits ``torch.equal`` to
aot_eager. Every patch is undone; ``torch_untouched`` checks the guard left nothing patched."""

import functools
import sys

import pytest
import torch

import lite_compiler
from compiler_models import aot_eager_result as aot_eager
from compiler_models import compile_lite
from compiler_models import lowering_hook_op
from compiler_models import refused_by_lite as refused

aten = torch.ops.aten
HERE = __name__
pytestmark = pytest.mark.usefixtures("torch_untouched")  # tests/conftest.py
RAN = []  # what the attacking code did


def qualified(qualname):
    return f"{HERE}:{qualname}"


def plain_fn(x, y):
    return (x * y).sin() * 3


def region_fn(x, y):
    with lite_compiler.region(id="r"):
        z = (x * y).cos() * 3
    return z + 1


def no_refusal():
    return not any(not row.allowed for row in lite_compiler.last_ledger().entries)


def mul_to_add(graph):
    RAN.append("mul_to_add")
    for node in graph.nodes:
        if node.op == "call_function" and node.target is aten.mul.Tensor:
            node.target = aten.add.Tensor


def user_registry(monkeypatch, tmp_path, *entries):
    path = tmp_path / "team.toml"
    path.write_text("\n".join(
        f'[[pass]]\nname = "{name}"\nstage = "{stage}"\nlite = "{lite}"\nkind = "function"\n'
        'why = "red-team test"\n' for name, stage, lite in entries))
    monkeypatch.setenv("LITE_GUARD_REGISTRIES", str(path))


def test_the_attacked_functions_compile_bitwise_aot_eager_with_no_attack():
    x, y = torch.randn(8), torch.randn(8)
    assert torch.equal(compile_lite(plain_fn)(x, y), aot_eager(plain_fn, x, y))
    assert no_refusal()
    torch.testing.assert_close(compile_lite(region_fn)(x, y), aot_eager(region_fn, x, y))
    assert no_refusal()


# ---- shapes of a custom pass ------------------------------------------------------------------

class Rewriter:
    def rewrite(self, graph):
        mul_to_add(graph)


def _add_graph(scale, graph):
    mul_to_add(graph)


class PartialCall:
    """A callable object whose ``__call__`` is a ``functools.partial`` (no function of its own)."""

    __call__ = functools.partial(_add_graph, 1)


class _Caller:
    """A descriptor: what ``obj.__call__`` is, is whatever ``__get__`` returns."""

    def __get__(self, obj, owner=None):
        return mul_to_add


class DescriptorCall:
    """``__call__`` is no function of the class: a descriptor hands out a function defined
    elsewhere (special methods are looked up on the type, through descriptors)."""

    __call__ = _Caller()


def _no_uuid_pass():
    from torch._inductor.custom_graph_pass import CustomGraphPass

    class NoUuidPass(CustomGraphPass):
        def __call__(self, graph):
            mul_to_add(graph)

        def uuid(self):
            return None

    return NoUuidPass()


SHAPES = {
    "partial": (lambda: functools.partial(_add_graph, 2), "_add_graph"),
    "bound_method": (lambda: Rewriter().rewrite, "Rewriter.rewrite"),
    "partial_as_call": (PartialCall, "_add_graph"),
    "descriptor_call": (DescriptorCall, "_Caller"),
    "uuid_none": (_no_uuid_pass, "_no_uuid_pass.<locals>.NoUuidPass"),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_custom_pass_of_any_callable_shape_is_refused_by_its_code(shape):
    """A post-grad custom pass given as a ``functools.partial``, a bound method, a class whose
    ``__call__`` is a partial or a descriptor, or a ``CustomGraphPass`` whose ``uuid()`` is None
    (Inductor then skips its caches, nothing else): named by the code that runs, refused before
    anything compiles."""
    make, name = SHAPES[shape]
    x, y = torch.randn(8), torch.randn(8)
    with torch._inductor.config.patch(post_grad_custom_post_pass=make()):
        violation = refused(region_fn, x, y)
    assert violation.pass_name == qualified(name)
    assert "no registry names this pass (fail closed)" in violation.reason
    assert RAN == []


class ShapeOnlyPass:
    """A team's registered pass (lite = "always"): it only reads the graph."""

    def __call__(self, graph):
        RAN.append("ShapeOnlyPass")


class RegisteredDescriptorPass:
    """Registered by its class; its ``__call__`` a descriptor handing out ``mul_to_add``."""

    __call__ = _Caller()


class MulToAddPass:
    def __call__(self, graph):
        mul_to_add(graph)


def test_registered_class_whose_call_is_a_descriptor_runs_as_the_code_it_hands_out(monkeypatch, tmp_path):
    """The class is registered lite = "always", but what its objects run is whatever the
    descriptor's ``__get__`` hands out at that call (``mul_to_add`` here, defined outside the
    class): the object runs as the descriptor's class, which no registry names. It ran under the
    class's permission before."""
    user_registry(monkeypatch, tmp_path, (qualified("RegisteredDescriptorPass"), "post_grad", "always"))
    x, y = torch.randn(8), torch.randn(8)
    with torch._inductor.config.patch(post_grad_custom_post_pass=RegisteredDescriptorPass()):
        violation = refused(plain_fn, x, y)
    assert violation.pass_name == qualified("_Caller") and RAN == []


def test_registered_pass_object_whose_class_is_swapped_after_a_compile_is_refused(monkeypatch, tmp_path):
    """``obj.__class__ = Other`` on the object the config holds, after a clean compile: the object
    is the same (identity, id), its code is not; it is named by its class at each compile."""
    user_registry(monkeypatch, tmp_path, (qualified("ShapeOnlyPass"), "post_grad", "always"))
    instance = ShapeOnlyPass()
    x, y = torch.randn(8), torch.randn(8)
    with torch._inductor.config.patch(post_grad_custom_post_pass=instance):
        assert torch.equal(compile_lite(plain_fn)(x, y), aot_eager(plain_fn, x, y))
        assert RAN == ["ShapeOnlyPass"]
        RAN.clear()
        instance.__class__ = MulToAddPass
        violation = refused(plain_fn, x, y)
    assert violation.pass_name == qualified("MulToAddPass") and RAN == []


# ---- the graph edited from inside an op's fake kernel ------------------------------------------

scale, LOWERING_HOOK, _ = lowering_hook_op("lite_guard_r8::scale")


def op_region_fn(x, w):
    with lite_compiler.region(id="r"):
        z = scale(x).cos() * w + 1
    return z


@pytest.fixture
def lowering_hook():
    yield LOWERING_HOOK
    LOWERING_HOOK.clear()


def test_region_graph_rewritten_by_a_fake_kernel_while_it_lowers_is_refused(lowering_hook):
    """A custom op's fake kernel, run by Inductor while it lowers the region, rewrites the nodes
    the lowering has not reached yet (``V.graph.module.graph``: mul as add). No pass, no patch of
    any torch code: the region's graph changed under the lowering."""
    from torch._inductor.virtualized import V

    def rewrite():
        mul_to_add(V.graph.module.graph)

    lowering_hook.append(rewrite)
    x, w = torch.randn(8), torch.randn(8)
    violation = refused(op_region_fn, x, w)
    assert "mul_to_add" in RAN and violation.kind == "effect" and violation.stage == "lowering"
    assert "and the end of lowering" in violation.reason
    assert "aten.mul.Tensor -> aten.add.Tensor" in violation.reason


def _tracer_graph():
    """The graph make_fx is recording, found on the stack (a library reaching into the tracer)."""
    from torch.fx.experimental.proxy_tensor import PythonKeyTracer

    frame = sys._getframe(1)
    while frame is not None:
        for value in frame.f_locals.values():
            if isinstance(value, PythonKeyTracer):
                return value.graph
        frame = frame.f_back
    return None


@torch.library.custom_op("lite_guard_r8::rewrite_traced", mutates_args=())
def rewrite_traced(x: torch.Tensor) -> torch.Tensor:
    return x.clone()


@rewrite_traced.register_fake
def _rewrite_traced_fake(x):
    graph = _tracer_graph()
    if graph is not None:
        mul_to_add(graph)
    return torch.empty_like(x)


def traced_fn(x, y):
    return rewrite_traced((x * y).sin()) * 3


def test_traced_graph_rewritten_by_a_fake_kernel_reaches_lite_and_aot_eager_alike():
    """The fake kernel rewrites the graph AOTAutograd's make_fx is recording (mul as add, the
    nodes traced so far): it runs inside the trace, which aot_eager runs too, so the graph lite
    receives is aot_eager's; bits equal, nothing refused."""
    x, y = torch.randn(8), torch.randn(8)
    out = compile_lite(traced_fn)(x, y)
    assert "mul_to_add" in RAN and no_refusal()
    assert torch.equal(out, aot_eager(traced_fn, x, y))


# ---- plugin tables Inductor reads ------------------------------------------------------------

@pytest.fixture
def post_grad_patterns():
    """Inductor's post-grad pattern passes as they are now, put back after."""
    from torch._inductor.fx_passes import post_grad

    saved = [{key: list(value) for key, value in p.patterns.items()} for p in post_grad.pass_patterns]
    yield post_grad.pass_patterns
    for p, patterns in zip(post_grad.pass_patterns, saved):
        p.patterns.clear()
        p.patterns.update(patterns)


def test_replacement_registered_after_a_first_compile_never_runs_when_lite_recompiles(post_grad_patterns):
    """A third-party module imported after the first lite compile registers a replacement (mul as
    add) into ``post_grad.pass_patterns[1]``; a new shape recompiles: the pattern never runs,
    outside the region (bits aot_eager's) nor in it (it computes mul)."""
    from torch._inductor.pattern_matcher import fwd_only, register_replacement

    x, y = torch.randn(8), torch.randn(8)
    compile_lite(region_fn)(x, y)

    def replacement(a, b):
        RAN.append("replacement")
        return aten.add.Tensor(a, b)

    register_replacement(lambda a, b: aten.mul.Tensor(a, b), replacement,
                         [torch.randn(8), torch.randn(8)], fwd_only, post_grad_patterns[1])
    RAN.clear()  # (register_replacement traces it once)
    x, y = torch.randn(16), torch.randn(16)
    lite = torch.compile(region_fn, backend="lite")
    out = lite(x, y)
    torch.testing.assert_close(out, (x * y).cos() * 3 + 1)
    assert RAN == [] and no_refusal()
    assert torch.equal(compile_lite(plain_fn)(x, y), aot_eager(plain_fn, x, y)) and RAN == []


@pytest.fixture
def post_grad_fusion():
    """A third party's batch fusion registered in Inductor's POST_GRAD_FUSIONS (taken out after)."""
    from torch._inductor.fx_passes import group_batch_fusion as gbf

    @gbf.register_fusion("lite_guard_r8_fusion", pre_grad=False)
    class MulFusion(gbf.BatchFusion):
        def match(self, node):
            RAN.append("match")
            if node.op == "call_function" and node.target is aten.mul.Tensor:
                return ("mul",)
            return None

        def fuse(self, graph, subset):
            RAN.append("fuse")
            for node in subset:
                node.target = aten.add.Tensor

    yield MulFusion
    gbf.POST_GRAD_FUSIONS.pop("lite_guard_r8_fusion", None)


@pytest.mark.parametrize("fn", [plain_fn, region_fn], ids=["no_region", "region"])
def test_batch_fusion_registered_in_inductors_fusion_table_is_refused_or_never_runs(post_grad_fusion, fn):
    """``register_fusion(..., pre_grad=False)`` puts a class in Inductor's POST_GRAD_FUSIONS,
    switched on by ``post_grad_fusion_options={name: {}}``: its ``match``/``fuse`` rewrite the
    post-grad graph. Without a region the option is overridden loudly (lite forces ``{}``; a
    ledger row) and nothing runs (bits aot_eager's); a compile with a region is refused by the
    class (the sweep reads Inductor's tables) before it runs."""
    x, y = torch.randn(8), torch.randn(8)
    with torch._inductor.config.patch(post_grad_fusion_options={"lite_guard_r8_fusion": {}}):
        if fn is plain_fn:
            out = compile_lite(fn)(x, y)
            rows = lite_compiler.last_ledger().entries
            assert RAN == [] and torch.equal(out, aot_eager(fn, x, y))
            assert [row.name for row in rows if not row.allowed] == ["config post_grad_fusion_options"]
            return
        violation = refused(fn, x, y)
    assert RAN == []
    assert violation.pass_name == qualified("post_grad_fusion.<locals>.MulFusion")
    assert "torch._inductor.fx_passes.group_batch_fusion:POST_GRAD_FUSIONS['lite_guard_r8_fusion']" \
        in violation.reason


def test_torch_global_decomposition_table_edited_in_a_warm_process_never_runs():
    """``torch._decomp.decomposition_table[aten.hardsigmoid.default] = f`` (torch's global table)
    after Inductor was imported: Inductor's ``decompositions`` copied the global table when it
    was imported, so the edit never runs in a region (which computes torch's hardsigmoid) nor
    outside (aot_eager's bits). Made before Inductor is imported, it lands in Inductor's table
    and is refused by its identity ("a decomposition in Inductor's table")."""
    import torch._decomp as decomp

    op = aten.hardsigmoid.default

    def hardsigmoid(a):
        RAN.append("hardsigmoid")
        return a * 0.0

    def fn(x, y):
        with lite_compiler.region(id="r"):
            z = torch.nn.functional.hardsigmoid(x * y) * 3
        return torch.nn.functional.hardsigmoid(z)

    x, y = torch.randn(8), torch.randn(8)
    compile_lite(region_fn)(x, y)  # Inductor imported
    had, saved = op in decomp.decomposition_table, decomp.decomposition_table.get(op)
    decomp.decomposition_table[op] = hardsigmoid
    try:
        out = compile_lite(fn)(x, y)
        assert RAN == [] and no_refusal()
        expected = aot_eager(fn, x, y)
    finally:
        if had:
            decomp.decomposition_table[op] = saved
        else:
            decomp.decomposition_table.pop(op, None)
    assert RAN == []
    torch.testing.assert_close(out, expected)
    hardsigmoid_of = torch.nn.functional.hardsigmoid
    torch.testing.assert_close(out, hardsigmoid_of(hardsigmoid_of(x * y) * 3))


# ---- between the forward and its backward ------------------------------------------------------

def test_pass_configured_between_the_forward_and_its_lazy_backward_is_refused():
    """The forward compiled clean; ``config.patch(post_grad_custom_post_pass=...)`` entered before
    ``.backward()``: the backward's region compiles under it (lazily, at the first backward).
    Refused there, before the pass runs."""
    x, y = torch.randn(8, requires_grad=True), torch.randn(8)
    out = compile_lite(region_fn)(x, y)
    with torch._inductor.config.patch(post_grad_custom_post_pass=MulToAddPass()), \
            pytest.raises(lite_compiler.LitePassViolation) as err:
        out.sum().backward()
    assert RAN == [] and err.value.pass_name == qualified("MulToAddPass")
    assert err.value.stage == "post_grad" and err.value.graph.endswith("/bw")


# ---- a global hook on every module call --------------------------------------------------------

def test_global_module_hook_rewriting_graph_modules_reaches_lite_and_aot_eager_alike():
    """``register_module_forward_pre_hook``: called before every ``nn.Module`` call in the process,
    it rewrites any GraphModule it sees (mul as add) and recompiles it. It fires at run time, at
    the compiled forward's calls (torch.fx's lazy recompile calls the module), for aot_eager's
    forward as for lite's: no compile is running, and each call's bits are aot_eager's under
    the same hook (the second call runs the rewrite)."""
    from torch.fx import GraphModule

    def hook(module, args):
        if isinstance(module, GraphModule):
            mul_to_add(module.graph)
            module.recompile()

    x, y = torch.randn(8), torch.randn(8)
    handle = torch.nn.modules.module.register_module_forward_pre_hook(hook)
    try:
        lite = compile_lite(plain_fn)
        outs = [lite(x, y), lite(x, y)]
        assert "mul_to_add" in RAN and no_refusal()
        ran_in_lite = len(RAN)
        torch._dynamo.reset()
        reference = torch.compile(plain_fn, backend="aot_eager")
        expected = [reference(x, y), reference(x, y)]
    finally:
        handle.remove()
    assert len(RAN) > ran_in_lite  # it ran for aot_eager too
    assert all(torch.equal(a, b) for a, b in zip(outs, expected))
    assert torch.equal(outs[1], (x + y).sin() + 3)


# ---- a torch.fx Transformer run by a torch.library kernel ---------------------------------------

class _MulToAdd(torch.fx.Transformer):
    def call_function(self, target, args, kwargs):
        RAN.append("transformer")
        if target is torch.mul or target is aten.mul.Tensor:
            target = torch.add
        return super().call_function(target, args, kwargs)


_LIB = torch.library.Library("lite_guard_r8", "DEF")
_LIB.define("twice(Tensor x) -> Tensor")


def _twice(x):
    gm = torch.fx.symbolic_trace(lambda a: torch.mul(a, 2))
    return _MulToAdd(gm).transform()(x)


_LIB.impl("twice", _twice, "CompositeImplicitAutograd")


def library_fn(x, y):
    return torch.ops.lite_guard_r8.twice(x * y).sin()


def test_fx_transformer_run_by_a_library_kernel_while_tracing_reaches_lite_and_aot_eager_alike():
    """A ``CompositeImplicitAutograd`` kernel of a library op runs a torch.fx Transformer (mul as
    add) on a graph of its own: it runs while Dynamo/AOTAutograd trace, for aot_eager as for lite,
    and what it returns is traced: the same graph, the same bits, nothing refused."""
    x, y = torch.randn(8), torch.randn(8)
    out = compile_lite(library_fn)(x, y)
    assert "transformer" in RAN and no_refusal()
    assert torch.equal(out, aot_eager(library_fn, x, y))
    assert torch.equal(out, (x * y + 2).sin())


# ---- Inductor's caches filled by a default-mode compile that ran a pass ------------------------

def _cos_to_sin_pass():
    from torch._inductor.custom_graph_pass import CustomGraphPass

    class CosToSin(CustomGraphPass):
        def __call__(self, graph):
            RAN.append("cos_to_sin")
            for node in graph.nodes:
                if node.op == "call_function" and node.target is aten.cos.default:
                    node.target = aten.sin.default

        def uuid(self):
            return "lite-guard-r8-cos-to-sin"

    return CosToSin()


def test_fx_graph_cache_filled_by_a_default_mode_compile_with_a_pass_is_never_served_to_lite():
    """Default mode compiles ``region_fn`` and the region's body with a cacheable custom pass (cos
    as sin) while Inductor's FX graph cache and AOTAutograd's cache are on, so both hold graphs
    the pass rewrote. A lite compile then, caches still on: the region is lowered in this
    process (its compile is seen) and computes cos, bits equal to lite's own before."""
    from torch._inductor.utils import fresh_cache

    def body(x, y):
        return (x * y).cos() * 3

    x, y = torch.randn(8), torch.randn(8)
    with fresh_cache(), torch._inductor.config.patch(fx_graph_cache=True), \
            torch._functorch.config.patch(enable_autograd_cache=True):
        expected = compile_lite(region_fn)(x, y)
        with torch._inductor.config.patch(post_grad_custom_post_pass=_cos_to_sin_pass()):
            torch._dynamo.reset()
            torch.compile(body)(x, y)
            torch._dynamo.reset()
            poisoned = torch.compile(region_fn)(x, y)
        assert "cos_to_sin" in RAN
        torch.testing.assert_close(poisoned, (x * y).sin() * 3 + 1)
        RAN.clear()
        out = compile_lite(region_fn)(x, y)
    assert RAN == [] and no_refusal()
    assert torch.equal(out, expected)
    assert "fuse_nodes" in {row.name for row in lite_compiler.last_ledger().entries}


def shape_only(graph):
    """A team's registered function pass (lite = "always"): it only reads the graph."""
    RAN.append("shape_only")


def _rewrite_mul(graph):
    mul_to_add(graph)


@pytest.mark.parametrize("swap", ["class", "code"])
def test_registered_pass_swapped_after_it_was_judged_is_refused(monkeypatch, tmp_path, swap):
    """A ``sys.setprofile`` callback swaps the object's class (to a class that rewrites mul as
    add), or the registered function's ``__code__``, when the guard's check of the registered
    pass returns, before it is called: the swapped-in code ran under the registered pass's
    permission (lite computed add). What a call runs is compared again right before the call
    now (attribute reads only): it runs as what it has become."""
    from lite_compiler import guard

    if swap == "class":
        user_registry(monkeypatch, tmp_path, (qualified("ShapeOnlyPass"), "post_grad", "always"))
        judged, the_pass = qualified("ShapeOnlyPass"), ShapeOnlyPass()

        def act():
            the_pass.__class__ = MulToAddPass
    else:
        user_registry(monkeypatch, tmp_path, (qualified("shape_only"), "post_grad", "always"))
        judged, the_pass = qualified("shape_only"), shape_only
        monkeypatch.setattr(shape_only, "__code__", shape_only.__code__)  # put back after

        def act():
            shape_only.__code__ = _rewrite_mul.__code__

    acted = []

    def swap_after_check(frame, event, arg):
        if event == "return" and frame.f_code is guard.check.__code__ and not acted \
                and frame.f_locals.get("name") == judged:
            acted.append(True)
            act()

    x, y = torch.randn(8), torch.randn(8)
    with torch._inductor.config.patch(post_grad_custom_post_pass=the_pass):
        sys.setprofile(swap_after_check)
        try:
            violation = refused(plain_fn, x, y)
        finally:
            sys.setprofile(None)
    assert acted and RAN == []
    assert f"it replaced '{judged}' after the guard judged it" in violation.reason
    if swap == "class":
        assert violation.pass_name == qualified("MulToAddPass")


# ---- a config lite mode sets that torch takes from the environment whatever is patched ---------

@pytest.mark.parametrize("key, forced", [("disabled_passes", "foo"), ("delay_realize_cheap_outputs", False)])
def test_config_key_forced_by_an_environment_variable_is_one_clear_error(monkeypatch, key, forced):
    """``TORCHINDUCTOR_DISABLED_PASSES`` / ``TORCHINDUCTOR_DELAY_REALIZE_CHEAP_OUTPUTS`` are read with
    ``env_name_force``: the value wins over every ``config.patch``, lite mode's included. Lite's
    forced value was silently void (its ledger said "overridden: lite mode forces ''") and the
    region compiled under the environment's value, refused afterwards as "code the compile ran
    changed it". One clear error before anything compiles now. (Set here as torch sets it when
    its config module is imported with the variable in the environment.)"""
    import torch._inductor.config as config

    monkeypatch.setattr(config._config[key], "env_value_force", forced)
    assert getattr(config, key) == forced  # no patch can change it
    x, y = torch.randn(8), torch.randn(8)
    for fn in (plain_fn, region_fn):
        with pytest.raises(lite_compiler.LiteConfigError) as err:
            compile_lite(fn)(x, y)
        first = str(err.value).splitlines()[0]
        assert first.startswith(f"torch._inductor.config.{key} is forced to {forced!r} by an"
                                " environment variable torch reads for it")
        assert first.endswith("(registry); unset that variable for lite compiles")
