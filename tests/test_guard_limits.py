"""Red team, rounds 2 and 3, the attacks that ran unseen (docs/guard.md, "Limits"): code put
where the guard did not look. Each attack is a real compile on real torch; its control compiles
the same function without the attack, bitwise equal to aot_eager. Every patch is undone
(monkeypatch); the ``torch_untouched`` fixture checks the guard left nothing patched.
"""

import functools
import shutil
import sys
import types

import pytest
import torch
import torch.nn.functional as F

import lite_compiler
from compiler_models import aot_eager_result as aot_eager
from compiler_models import compile_lite
from compiler_models import refused_by_lite as refused
from lite_compiler import hooks

aten = torch.ops.aten
HERE = __name__
pytestmark = pytest.mark.usefixtures("torch_untouched")  # tests/conftest.py
RAN = []  # what the attacking code did: a refused attack must never have run


def qualified(qualname):
    return f"{HERE}:{qualname}"




def loss_region_fn(x, y):
    """mse_loss decomposes in the region (torch._decomp.decompositions.mse_loss)."""
    z = x.sin()
    with lite_compiler.region(id="r"):
        loss = F.mse_loss(z, y)
    return loss * 3


def mm_region_fn(x, w):
    """The region's matmul runs as extern_kernels.mm in the generated wrapper."""
    z = x.sin()
    with lite_compiler.region(id="r"):
        z = (z @ w) * 2
    return z.cos()


def plain_fn(x, w):
    """No region: lite mode must be bitwise aot_eager."""
    return (x.sin() @ w).cos() * 3


@pytest.mark.parametrize("fn", [loss_region_fn, mm_region_fn, plain_fn], ids=lambda f: f.__name__)
def test_the_attacked_functions_compile_bitwise_aot_eager_with_no_attack(fn):
    """The control of every attack below: the legit path compiles, and the graph outside
    regions is aot_eager's (plain_fn: bitwise; region functions: the region may round apart)."""
    x, w = torch.randn(8, 8), torch.randn(8, 8)
    expected = aot_eager(fn, x, w)
    out = compile_lite(fn)(x, w)
    assert torch.equal(out, expected) if fn is plain_fn else torch.allclose(out, expected, atol=1e-5)


# ---- decomp_helper: a helper a decomposition calls by global name, in torch._decomp ---------------

def test_helper_of_a_decomposition_replaced_in_torch_decomp_is_refused(monkeypatch):
    """torch._decomp.decompositions.mse_loss calls apply_loss_reduction by global name; only
    Inductor's modules were swept, so a replacement (sum instead of mean) ran in the region. The
    modules of the code Inductor's decomposition and lowering tables hold are swept too."""
    import torch._decomp.decompositions as decompositions

    def apply_loss_reduction(loss, reduction):
        RAN.append(type(loss).__name__)
        return torch.sum(loss)

    monkeypatch.setattr(decompositions, "apply_loss_reduction", apply_loss_reduction)
    violation = refused(loss_region_fn, torch.randn(8, 8), torch.randn(8, 8))
    assert violation.pass_name == qualified(
        "test_helper_of_a_decomposition_replaced_in_torch_decomp_is_refused.<locals>.apply_loss_reduction")
    assert "patched into torch._decomp.decompositions:apply_loss_reduction" in violation.reason
    # Dynamo's trace may call it for shapes (on fake tensors, as for any backend): it never
    # computed a value.
    assert set(RAN) <= {"FakeTensor"}


# ---- extern_kernels: a function set on a torch-owned instance -----------------------------------

def test_function_set_on_a_torch_instance_is_refused(monkeypatch):
    """extern_kernels (a KernelNamespace instance in select_algorithm) is what the generated
    wrapper calls for a region's matmul; the sweep read module globals and classes, not the
    attributes of torch's instances."""
    from torch._inductor import select_algorithm

    real_mm = torch.mm

    def mm(a, b, out=None):
        RAN.append("mm")
        return torch.add(a, b, out=out) if out is not None else a + b

    monkeypatch.setattr(select_algorithm.extern_kernels, "mm", mm)
    violation = refused(mm_region_fn, torch.randn(8, 8), torch.randn(8, 8))
    assert violation.pass_name == qualified("test_function_set_on_a_torch_instance_is_refused.<locals>.mm")
    assert "patched into torch._inductor.select_algorithm:extern_kernels.mm" in violation.reason
    assert RAN == [] and select_algorithm.extern_kernels.mm is mm and real_mm is torch.mm


# ---- ops_proxy: a foreign object under a swept module's global ------------------------------------

def test_foreign_object_under_an_inductor_global_is_refused_by_its_class(monkeypatch):
    """torch._inductor.ir.ops = Proxy(): not a function, class or container, so the sweep let it
    be; IR nodes call ops.<name> through it. Judged by its class's provenance."""
    from torch._inductor import ir

    class Proxy:
        def __init__(self, inner):
            self.inner = inner

        def __getattr__(self, name):
            RAN.append(name)
            return getattr(self.inner, name)

    monkeypatch.setattr(ir, "ops", Proxy(ir.ops))
    violation = refused(mm_region_fn, torch.randn(8, 8), torch.randn(8, 8))
    assert violation.pass_name == qualified(
        "test_foreign_object_under_an_inductor_global_is_refused_by_its_class.<locals>.Proxy")
    assert "patched into torch._inductor.ir:ops" in violation.reason
    assert RAN == []


# ---- lowering_cell: closure cells of torch's lowering wrappers ------------------------------------

def cos_region_fn(x, w):
    z = x.sin() @ w
    with lite_compiler.region(id="r"):
        z = z.cos() * 2
    return z + 1


@pytest.fixture
def cos_lowering_cell():
    """The ``decomp_fn`` cell of the wrapper torch's register_lowering put under aten.cos (and
    its other overloads): set by a test, restored after it."""
    import torch._inductor.compile_fx  # noqa: F401  (imports every lowering)
    from torch._inductor import lowering

    wrapper = lowering.lowerings[aten.cos.default]
    cell = wrapper.__closure__[wrapper.__code__.co_freevars.index("decomp_fn")]
    original = cell.cell_contents
    try:
        yield cell
    finally:
        cell.cell_contents = original


def test_torch_lowering_of_another_op_in_a_lowering_wrapper_cell_is_refused(cos_lowering_cell):
    """The table still holds torch's cos wrapper (its aten_fn record says cos); the function it
    calls, its decomp_fn cell, is torch's lowering of sin: the region would compute sin. The
    wrapper's functools.wraps record (__wrapped__) is what torch put in the cell."""
    from torch._inductor import lowering

    sin_wrapper = lowering.lowerings[aten.sin.default]
    cos_lowering_cell.cell_contents = sin_wrapper.__wrapped__
    violation = refused(cos_region_fn, torch.randn(8, 8), torch.randn(8, 8))
    assert violation.pass_name == "torch._inductor.lowering:lowerings[aten.cos.default]"
    assert "is torch's lowering of aten.sin" in violation.reason


def test_foreign_function_in_a_lowering_wrapper_cell_is_refused_as_itself(cos_lowering_cell):
    """Foreign code in the cell runs as itself: cells are provenance layers of torch's code."""
    from torch._inductor import lowering

    sin_inner = lowering.lowerings[aten.sin.default].__wrapped__

    def cos_as_sin(*args, **kwargs):
        RAN.append("cos_as_sin")
        return sin_inner(*args, **kwargs)

    cos_lowering_cell.cell_contents = cos_as_sin
    violation = refused(cos_region_fn, torch.randn(8, 8), torch.randn(8, 8))
    assert violation.pass_name == qualified(
        "test_foreign_function_in_a_lowering_wrapper_cell_is_refused_as_itself.<locals>.cos_as_sin")
    assert RAN == []


def test_torch_own_tables_hold_no_rewired_or_foreign_cell():
    """The cell checks refuse nothing of torch's own (else every region compile would fail)."""
    import torch._inductor.compile_fx  # noqa: F401
    from torch._inductor import lowering
    from torch._inductor.decomposition import select_decomp_table

    from lite_compiler.provenance import foreign_in_cells, lowering_moved

    assert [op for op, fn in lowering.lowerings.items() if lowering_moved(op, fn)] == []
    assert [op for op, fn in lowering.lowerings.items() if foreign_in_cells(fn)] == []
    assert [op for op, fn in select_decomp_table().items() if foreign_in_cells(fn)] == []
    # The record is there to be read: most wrappers of the table were made by functools.wraps.
    assert sum(hasattr(fn, "__wrapped__") for fn in lowering.lowerings.values()) > 0.8 * len(lowering.lowerings)


# ---- fx_codegen: the code that runs is the code of the checked graph ----------------------------

def _forward_from_other_source(monkeypatch):
    """torch.fx compiles a GraphModule's forward from its graph's source: compile other source
    (every aten.mul.Tensor becomes aten.add.Tensor) while the graph stays the checked one.
    During a compile Dynamo puts its own wrapper there, around the function it imported
    (convert_frame.original_forward_from_src): both are replaced."""
    import torch._dynamo.convert_frame as convert_frame
    import torch.fx.graph_module as graph_module

    original = graph_module._forward_from_src

    def _forward_from_src(src, globals, co_fields=None):
        if "aten.mul.Tensor" in src:
            RAN.append("_forward_from_src")
            src = src.replace("aten.mul.Tensor", "aten.add.Tensor")
        return original(src, globals, co_fields)

    monkeypatch.setattr(graph_module, "_forward_from_src", _forward_from_src)
    monkeypatch.setattr(convert_frame, "original_forward_from_src", _forward_from_src)


@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
def test_forward_compiled_from_other_source_than_the_checked_graph_is_refused(monkeypatch, training):
    """The graphs outside regions are checked node by node up to the hand-over to boxed_nop;
    the forward torch.fx compiles for it there must be the graph's own code. Since round 5 the
    code that ran while torch.fx compiled it is observed too: the patch is named, as itself."""
    x, w = torch.randn(8, 8, requires_grad=training), torch.randn(8, 8)
    _forward_from_other_source(monkeypatch)
    violation = refused(plain_fn, x, w)
    assert RAN  # the attack ran: the forward was compiled from the rewritten source
    assert violation.pass_name == qualified("_forward_from_other_source.<locals>._forward_from_src")
    assert "it ran while torch.fx generated the code of the checked" in violation.reason


# ---- cache_poison: the region's module loaded from Inductor's code cache --------------------------

POISON = f'''
_lite_guard_real_call = call


def call(args):
    import sys
    sys.modules[{HERE!r}].RAN.append("poisoned call")
    return tuple(out * 2 for out in _lite_guard_real_call(args))
'''


def test_region_module_planted_in_the_code_cache_is_refused():
    """Inductor writes a region's wrapper module under the hash of its source and loads whatever
    file is there (it never overwrites one): a module planted under the name the next compile's
    source hashes to (this one's, with the next AOT ID) ran as the region. The loaded file must
    hash to its key, and the code that runs must be compiled from it. (The shared cache is used,
    a fresh one would compile C++ for a minute: shapes of this test's own keep the file apart,
    and it is removed.)"""
    import os
    import re

    from torch._inductor.codecache import get_hash, get_path

    x, w = torch.randn(5, 7), torch.randn(7, 7)
    clean = compile_lite(cos_region_fn)(x, w)
    (source,) = lite_compiler.last_ledger().region_code.values()
    aot_id = int(re.search(r"# AOT ID: \['(\d+)_inference'\]", source).group(1))
    predicted = source.replace(f"['{aot_id}_inference']", f"['{aot_id + 1}_inference']", 1)
    path = get_path(get_hash(predicted.strip()), "py")[2]
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(predicted + POISON)
        violation = refused(cos_region_fn, x, w)
    finally:
        os.remove(path)
    assert violation.kind == "effect"
    assert "does not hash to its key" in str(violation) and path in str(violation)
    assert RAN == []
    assert torch.equal(compile_lite(cos_region_fn)(x, w), clean)


# ---- cxx_wrapper: the C++ compiler a region's kernels are built with ------------------------------

def test_compiler_wrapper_that_turns_on_fast_math_is_refused_before_it_builds(tmp_path):
    """``CXX`` (read into cpp.cxx, a neutral key) may name a wrapper that adds -ffast-math to
    whatever Inductor asks for: the command line Inductor builds shows nothing. The compiler
    builds a small library with Inductor's own flags, which is run: its predefined macros
    (__FAST_MATH__, __FINITE_MATH_ONLY__, __NO_MATH_ERRNO__) and what its code computes."""
    import shutil

    wrapper, calls = tmp_path / "g++-fast", tmp_path / "calls"
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> "{calls}"\nexec {shutil.which("g++")} "$@" -ffast-math\n')
    wrapper.chmod(0o755)
    with torch._inductor.config.patch({"cpp.cxx": (None, str(wrapper))}):
        violation = refused(cos_region_fn, torch.randn(8, 8), torch.randn(8, 8))
    assert violation.kind == "effect"
    assert "__FAST_MATH__" in str(violation) and str(wrapper) in str(violation)
    # It built the check's own library (run to see what it compiles under), and no kernel.
    asked = calls.read_text().splitlines()
    assert any("lite-guard-cxx-" in line for line in asked)
    assert all("lite-guard-cxx-" in line or line.strip() == "--version" for line in asked), asked


def test_a_relaxation_inductors_own_flags_ask_for_is_inductors_and_one_a_wrapper_adds_is_not(tmp_path):
    """torch 2.11's Inductor passes -fno-math-errno itself (2.13 passes -fmath-errno): what its
    own flags ask for is its own (its config decides it), so the compiler check counts only a
    relaxation the flags do not ask for, as from a wrapper that adds -fno-math-errno."""
    import shutil

    from lite_compiler.cpp_compiler import _relaxed

    compiler = shutil.which("g++")
    flags = ["-fno-trapping-math", "-fno-finite-math-only", "-ffp-contract=off"]
    assert _relaxed(compiler, [*flags, "-fno-math-errno"]) is None
    wrapper = tmp_path / "g++-errno"
    wrapper.write_text(f'#!/bin/sh\nexec {compiler} "$@" -fno-math-errno\n')
    wrapper.chmod(0o755)
    assert _relaxed(str(wrapper), [*flags, "-fmath-errno"]) == "__NO_MATH_ERRNO__ (no math errno)"


# ---- aot_compiler_swap, dynamo_prepass: wrappers on the path from Dynamo to the lite compiler ------

def _mul_to_add(gm):
    RAN.append("rewrite")
    for node in gm.graph.nodes:
        if node.target in (aten.mul.Tensor, torch.mul) or getattr(node.target, "__name__", "") == "mul":
            node.target = aten.add.Tensor if node.op == "call_function" and isinstance(
                node.target, torch._ops.OpOverload) else torch.add
    gm.recompile()


@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
def test_wrapper_around_aot_module_simplified_is_refused_as_itself(monkeypatch, training):
    """torch's AotAutograd object calls aot_module_simplified by global name; a wrapper there
    hands the lite compiler's fw/inference compiler a rewritten graph (the entry check takes
    what it is handed as AOTAutograd's graph). Code standing on the path from Dynamo to the
    lite compiler in a torch place (a torch module's global, a torch class's method) runs as
    itself."""
    import torch._dynamo.backends.common as common

    original = common.aot_module_simplified

    def aot_module_simplified(gm, example_inputs, **kwargs):
        for key in ("fw_compiler", "inference_compiler"):
            inner = kwargs[key]

            def rewriting(graph, inputs, inner=inner):
                _mul_to_add(graph)
                return inner(graph, inputs)

            kwargs[key] = rewriting
        return original(gm, example_inputs, **kwargs)

    monkeypatch.setattr(common, "aot_module_simplified", aot_module_simplified)
    violation = refused(plain_fn, torch.randn(8, 8, requires_grad=training), torch.randn(8, 8))
    assert violation.pass_name == qualified(
        "test_wrapper_around_aot_module_simplified_is_refused_as_itself.<locals>.aot_module_simplified")
    assert "torch._dynamo.backends.common:aot_module_simplified" in violation.reason
    assert RAN == ["rewrite"]  # it rewrote the graph it was handed; nothing compiled from it ran


def test_method_patched_into_dynamo_backend_wrapper_is_refused_as_itself(monkeypatch):
    """Dynamo calls every backend through WrapBackendDebug.__call__: a patch there rewrites
    Dynamo's graph (the reference of lite and aot_eager alike) before the lite backend sees it."""
    from torch._dynamo.repro.after_dynamo import WrapBackendDebug

    original = WrapBackendDebug.__call__

    def __call__(self, gm, example_inputs, **kwargs):
        _mul_to_add(gm)
        return original(self, gm, example_inputs, **kwargs)

    monkeypatch.setattr(WrapBackendDebug, "__call__", __call__)
    violation = refused(plain_fn, torch.randn(8, 8), torch.randn(8, 8))
    assert violation.pass_name == qualified(
        "test_method_patched_into_dynamo_backend_wrapper_is_refused_as_itself.<locals>.__call__")
    assert "torch._dynamo.repro.after_dynamo:WrapBackendDebug.__call__" in violation.reason


def test_patch_between_the_inference_trace_and_the_lite_compiler_is_refused(monkeypatch):
    """A patched step of AOTAutograd's inference path that rewrites the graph and returns before
    the lite compiler is called (graph_compile._log_inference_graph) is not on the call path;
    the inference trace is probed as the partitioner's output is, and when the graph changed,
    AOTAutograd's modules are swept: the patch found there is the cause, refused as itself."""
    import warnings

    import torch._functorch._aot_autograd.graph_compile as graph_compile

    from lite_compiler.errors import LiteGuardReport

    original = graph_compile._log_inference_graph

    def _log_inference_graph(fw_module, aot_config):
        _mul_to_add(fw_module)
        return original(fw_module, aot_config)

    x, w = torch.randn(8, 8), torch.randn(8, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("error", LiteGuardReport)  # the control reports nothing
        compile_lite(plain_fn)(x, w)
    monkeypatch.setattr(graph_compile, "_log_inference_graph", _log_inference_graph)
    violation = refused(plain_fn, x, w)
    assert violation.pass_name == qualified(
        "test_patch_between_the_inference_trace_and_the_lite_compiler_is_refused.<locals>._log_inference_graph")
    assert "AOTAutograd's inference trace" in violation.reason
    assert "target aten.mul.Tensor -> aten.add.Tensor" in violation.reason
    assert RAN == ["rewrite"]


def test_change_between_the_inference_trace_and_the_lite_compiler_with_no_cause_found_is_reported():
    """The same change made by code torch holds nowhere (a ``sys.setprofile`` callback at the call
    of that step): no foreign code in AOTAutograd's modules, and aot_eager runs the same steps, so
    the change is reported, never silent."""
    import torch._functorch._aot_autograd.graph_compile as graph_compile

    from lite_compiler.errors import LiteGuardReport

    step = graph_compile._log_inference_graph.__code__

    def profile(frame, event, arg):
        if event == "call" and frame.f_code is step and not RAN:
            _mul_to_add(frame.f_locals["fw_module"])

    sys.setprofile(profile)
    try:
        with pytest.warns(LiteGuardReport, match="AOTAutograd's inference trace"):
            compile_lite(plain_fn)(torch.randn(8, 8), torch.randn(8, 8))
    finally:
        sys.setprofile(None)
    (row,) = [e for e in lite_compiler.last_ledger() if e.name == "<change after partitioner>"]
    assert row.kind == "effect" and "target aten.mul.Tensor -> aten.add.Tensor" in row.reason
    assert RAN == ["rewrite"]


def test_object_of_a_library_class_under_an_inductor_global_is_an_import(monkeypatch, tmp_path):
    """On GPU, Inductor's modules hold Triton's JITFunction objects (a library's class, at its
    module's top level, extending nothing of torch's): such an object is that library's, as a
    library's class is an import to the sweep; the same object of a local class is refused."""
    from torch._inductor import ir

    (tmp_path / "kernel_library.py").write_text(
        "class JITFunction:\n    def __init__(self, fn):\n        self.fn = fn\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "kernel_library", raising=False)  # gone again after the test
    import kernel_library

    monkeypatch.setattr(ir, "library_kernel", kernel_library.JITFunction(ir.ops), raising=False)
    x, w = torch.randn(8, 8), torch.randn(8, 8)
    assert torch.allclose(compile_lite(mm_region_fn)(x, w), aot_eager(mm_region_fn, x, w), atol=1e-5)

    class JITFunction(kernel_library.JITFunction):
        pass

    monkeypatch.setattr(ir, "library_kernel", JITFunction(ir.ops))
    violation = refused(mm_region_fn, x, w)
    assert violation.pass_name == qualified(
        "test_object_of_a_library_class_under_an_inductor_global_is_an_import.<locals>.JITFunction")


def test_a_librarys_cached_function_under_an_inductor_global_is_an_import(monkeypatch, tmp_path):
    """On GPU, Inductor imports Triton's ``triton_key``, an ``lru_cache`` wrapper of a Triton
    function: the wrapper its own module holds under that name is an import, not a patch; the
    same cache wrapped around a local function under that name is refused."""
    import functools

    from torch._inductor import ir

    (tmp_path / "cache_library.py").write_text(
        "import functools\n\n\n@functools.lru_cache(None)\ndef library_key():\n    return 'v1'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "cache_library", raising=False)  # gone again after the test
    import cache_library

    monkeypatch.setattr(ir, "library_key", cache_library.library_key, raising=False)
    x, w = torch.randn(8, 8), torch.randn(8, 8)
    assert torch.allclose(compile_lite(mm_region_fn)(x, w), aot_eager(mm_region_fn, x, w), atol=1e-5)

    @functools.lru_cache(None)
    def library_key():
        return "v2"

    monkeypatch.setattr(ir, "library_key", library_key)
    violation = refused(mm_region_fn, x, w)
    assert violation.pass_name == qualified(
        "test_a_librarys_cached_function_under_an_inductor_global_is_an_import.<locals>.library_key")


def test_forward_compiled_with_torch_fx_profiler_records_is_not_refused():
    """With torch.fx's enrich_profiler_metadata, torch puts a profiler record named after a hash
    into the forward's source before compiling it: the same code, not a change."""
    from torch.fx.experimental import _config as fx_experimental_config

    x, w = torch.randn(8, 8, requires_grad=True), torch.randn(8, 8)
    with fx_experimental_config.patch(enrich_profiler_metadata=True):
        out = compile_lite(plain_fn)(x, w)
        out.sum().backward()
    assert torch.equal(out, aot_eager(plain_fn, x, w))


def test_torchs_realigning_wrapper_of_the_region_call_passes_and_others_are_named():
    """On GPU, Inductor hands back its input-realignment closure (torch's code) around the
    region module's call, holding that call in a cell: the checked code, not foreign. A wrapper
    compiled outside torch, or torch's closure around other foreign code, is named."""
    from torch._inductor.utils import align_inputs_from_check_idxs
    from torch.utils._ordered_set import OrderedSet

    from lite_compiler.generated_code import _foreign_wrapper

    class Runner:  # stands for the region module's Runner (generated, outside torch)
        def call(self, args):
            return args

    def other(args):
        return args

    runner = Runner()
    function = Runner.call
    assert _foreign_wrapper(runner.call, function) is None
    assert _foreign_wrapper(align_inputs_from_check_idxs(runner.call, [0], OrderedSet()), function) is None
    assert _foreign_wrapper(align_inputs_from_check_idxs(other, [0], OrderedSet()), function) == qualified(
        "test_torchs_realigning_wrapper_of_the_region_call_passes_and_others_are_named.<locals>.other")
    assert _foreign_wrapper(lambda args: runner.call(args), function) == qualified(
        "test_torchs_realigning_wrapper_of_the_region_call_passes_and_others_are_named.<locals>.<lambda>")


def test_a_method_transformers_adds_to_nn_module_is_not_a_patch_of_the_pipeline(monkeypatch):
    """transformers' weight initialisation adds ``torch.nn.Module.smart_apply`` (a new name;
    nothing in the compile pipeline calls it): the sweep of the modules the op tables' code lives
    in reads their module-level values, not their classes' bases, so it is not refused."""

    def smart_apply(self, fn):  # as transformers.modeling_utils defines it, in spirit
        for module in self.children():
            module.smart_apply(fn)
        fn(self)
        return self

    monkeypatch.setattr(torch.nn.Module, "smart_apply", smart_apply, raising=False)
    x, w = torch.randn(8, 8), torch.randn(8, 8)
    assert torch.allclose(compile_lite(cos_region_fn)(x, w), aot_eager(cos_region_fn, x, w), atol=1e-5)


# ==== Red team, round 3 ===========================================================================
# The limits docs/guard.md listed after round 2, and new attacks a hostile Inductor developer might
# use to switch a pass on for lite users unseen.

def sums_region_fn(x, w):
    """A region whose kernel computes a*b+c (contractible into an FMA) and reductions."""
    z = x.sin()
    with lite_compiler.region(id="r"):
        z = z * w + x
    return z.cos()


# ---- two_hops: a helper two calls away from the op tables ----------------------------------------

def test_helper_two_calls_from_a_decomposition_is_refused(monkeypatch):
    """The sweep read the modules of the tables' code, one level: mse_loss's cast wrapper
    (torch._decomp.decompositions.type_casts) calls ``utils.elementwise_dtypes``, a function of
    torch._prims_common, a module no table's code lives in. A replacement there decides the
    region's compute dtype. What the tables' code calls, by global name or through a module it
    names, is followed to the end (torch's code only)."""
    import torch._inductor.compile_fx  # noqa: F401  (Inductor imported its names before the patch)
    import torch._prims_common as prims_common

    original = prims_common.elementwise_dtypes

    def elementwise_dtypes(*args, **kwargs):
        RAN.append("elementwise_dtypes")
        computation, result = original(*args, **kwargs)
        return (torch.float16 if computation == torch.float32 else computation), result

    monkeypatch.setattr(prims_common, "elementwise_dtypes", elementwise_dtypes)
    violation = refused(loss_region_fn, torch.randn(8, 8), torch.randn(8, 8))
    assert violation.pass_name == qualified(
        "test_helper_two_calls_from_a_decomposition_is_refused.<locals>.elementwise_dtypes")
    assert "torch._prims_common:elementwise_dtypes" in violation.reason


# ---- cxx_build_only / cxx_contract: compiler wrappers the macro probe did not see -----------------

def _wrapper(tmp_path, name, body):
    script = tmp_path / name
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return script


def test_compiler_wrapper_that_relaxes_math_only_for_real_builds_is_refused(tmp_path):
    """The compiler was asked ``-dM -E``: a wrapper that adds -ffast-math only when it builds
    (not when it preprocesses) answered as the compiler itself. The check is a real build, run."""
    gxx = shutil.which("g++")
    script = _wrapper(tmp_path, "g++-sly", f'case " $* " in *" -E "*) exec {gxx} "$@";; esac\n'
                                           f'exec {gxx} "$@" -ffast-math')
    with torch._inductor.config.patch({"cpp.cxx": (None, str(script))}):
        violation = refused(cos_region_fn, torch.randn(8, 8), torch.randn(8, 8))
    assert violation.kind == "effect"
    assert "__FAST_MATH__" in str(violation) and str(script) in str(violation)


def test_compiler_wrapper_that_hides_the_fast_math_macros_is_refused(tmp_path):
    """``-ffast-math -U__FAST_MATH__ ...``: the macros say nothing, the code does."""
    gxx = shutil.which("g++")
    macros = ("__FAST_MATH__", "__FINITE_MATH_ONLY__", "__NO_MATH_ERRNO__", "__NO_SIGNED_ZEROS__",
              "__ASSOCIATIVE_MATH__", "__RECIPROCAL_MATH__")
    undefs = " ".join(f"-U{m}" for m in macros)
    script = _wrapper(tmp_path, "g++-quiet", f'exec {gxx} "$@" -ffast-math {undefs}')
    with torch._inductor.config.patch({"cpp.cxx": (None, str(script))}):
        violation = refused(cos_region_fn, torch.randn(8, 8), torch.randn(8, 8))
    assert violation.kind == "effect"
    assert "signed zeros" in str(violation) or "NaN" in str(violation) or "reassociat" in str(violation)


def test_compiler_wrapper_that_turns_on_contraction_is_refused(tmp_path):
    """``-ffp-contract=fast`` has no macro: a*b+c becomes one fused multiply-add under Inductor's
    -mfma (its vector ISA flags), rounding once instead of twice. Seen by what the code computes."""
    gxx = shutil.which("g++")
    script = _wrapper(tmp_path, "g++-fma", f'exec {gxx} "$@" -ffp-contract=fast')
    with torch._inductor.config.patch({"cpp.cxx": (None, str(script))}):
        violation = refused(sums_region_fn, torch.randn(8, 8), torch.randn(8, 8))
    assert violation.kind == "effect"
    assert "fused multiply-add" in str(violation)


# ---- class_partial: a callable object stored as a method of an Inductor class -----------------------

@pytest.mark.parametrize("how", ["partial", "staticmethod(partial)", "type.__setattr__"])
def test_callable_object_stored_as_an_inductor_method_is_refused(monkeypatch, how):
    """CppOverrides' ops are static methods called as ``CppOverrides.cos(x)``: a functools.partial
    stored there is called the same way; the class sweep judged functions only."""
    from torch._inductor.codegen.cpp import CppOverrides

    sin = CppOverrides.sin

    def emit_sin(x, unused=None):
        RAN.append("emit_sin")
        return sin(x)

    value = {"partial": functools.partial(emit_sin, unused=1),
             "staticmethod(partial)": staticmethod(functools.partial(emit_sin, unused=1)),
             "type.__setattr__": staticmethod(emit_sin)}[how]
    original = vars(CppOverrides)["cos"]
    monkeypatch.setattr(CppOverrides, "cos", original)  # (undone, below)
    if how == "type.__setattr__":
        type.__setattr__(CppOverrides, "cos", value)
    else:
        setattr(CppOverrides, "cos", value)
    try:
        violation = refused(cos_region_fn, torch.randn(8, 8), torch.randn(8, 8))
    finally:
        monkeypatch.undo()
    assert vars(CppOverrides)["cos"] is original
    assert violation.pass_name == qualified(
        "test_callable_object_stored_as_an_inductor_method_is_refused.<locals>.emit_sin")
    assert RAN == []


# ---- module_swap: sys.modules holds another module under an Inductor name -------------------------

def test_module_swapped_into_sys_modules_under_an_inductor_name_is_refused(monkeypatch):
    """GraphLowering imports its Scheduler when it codegens (``from .scheduler import Scheduler``,
    read from sys.modules): a module object put there with no file (so not "torch's") held a
    subclass that reorders nodes; the sweep skipped modules whose file is not torch's."""
    from torch._inductor import scheduler

    class Scheduler(scheduler.Scheduler):
        def _init(self, nodes):
            RAN.append("Scheduler._init")
            return super()._init(nodes)

    for attr, value in vars(scheduler.Scheduler).items():  # (every hook still resolves)
        if isinstance(value, types.FunctionType) and attr not in vars(Scheduler):
            setattr(Scheduler, attr, value)
    fake = types.ModuleType(scheduler.__name__)
    fake.__dict__.update({k: v for k, v in vars(scheduler).items() if k not in ("__file__", "__spec__")})
    fake.Scheduler = Scheduler
    monkeypatch.setitem(sys.modules, scheduler.__name__, fake)
    violation = refused(cos_region_fn, torch.randn(8, 8), torch.randn(8, 8))
    assert violation.pass_name == qualified(
        "test_module_swapped_into_sys_modules_under_an_inductor_name_is_refused.<locals>.Scheduler")
    assert "sys.modules" in violation.reason
    assert RAN == []


# ---- config_class: Inductor's config module given a class that lies -------------------------------

def test_inductor_config_module_with_a_lying_class_is_refused():
    """``torch._inductor.config.__class__ = Lying`` (a subclass of torch's ConfigModule class):
    every read goes through its __getattr__, so lite's forced values (config.patch writes them)
    read as anything the class says, and nothing in the module's namespace changed."""
    from torch._inductor import config

    real = type(config)

    class Lying(real):
        def __getattr__(self, name):
            if name == "epilogue_fusion":
                RAN.append(name)
                return True
            return real.__getattr__(self, name)

    types.ModuleType.__setattr__(config, "__class__", Lying)  # (ConfigModule refuses the name)
    try:
        violation = refused(cos_region_fn, torch.randn(8, 8), torch.randn(8, 8))
    finally:
        types.ModuleType.__setattr__(config, "__class__", real)
    assert violation.pass_name == qualified(
        "test_inductor_config_module_with_a_lying_class_is_refused.<locals>.Lying")
    assert "torch._inductor.config" in violation.reason


# ---- config_in_op: a custom op flips an Inductor config key while the compile traces -------------

def test_config_key_flipped_by_a_custom_op_while_tracing_does_not_reach_a_region():
    """A custom op's fake kernel (run while AOTAutograd traces, after the compile's checks began)
    sets optimization keys globally: each region compiles under lite's values patched over the
    global config, so the keys never reach it; the global value is the user's afterwards."""
    from torch._inductor import config

    @torch.library.custom_op("lite_round3::flip", mutates_args=())
    def flip(x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    @flip.register_fake
    def _(x):
        RAN.append("flip")
        config.pattern_matcher, config.epilogue_fusion = True, True
        return torch.empty_like(x)

    def fn(x, w):
        z = flip(x.sin())
        with lite_compiler.region(id="r"):
            z = (z @ w).cos() * 2
        return z + 1

    saved = (config.pattern_matcher, config.epilogue_fusion)
    try:
        x, w = torch.randn(8, 8), torch.randn(8, 8)
        out = compile_lite(fn)(x, w)
        assert RAN  # the flip ran during the trace
        assert not [e for e in lite_compiler.last_ledger() if e.name == "pattern_matcher" and e.allowed]
        config.pattern_matcher, config.epilogue_fusion = saved
        assert torch.allclose(out, aot_eager(fn, x, w), atol=1e-5)
    finally:
        config.pattern_matcher, config.epilogue_fusion = saved


# ---- import_hook: a module patched as torch imports it, after the compile's sweep ------------------

IMPORT_HOOK_SCRIPT = '''
import importlib.abc, importlib.machinery, sys
import torch
import lite_compiler

class Patcher(importlib.abc.MetaPathFinder):
    """Lets torch import a module of Inductor's that a fresh process imports only when a region
    lowers (after the compile's first sweep), then makes the C++ codegen emit sin for cos."""
    def find_spec(self, name, path, target=None):
        if name != "torch._inductor.codegen.cpu_device_op_overrides":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        real_exec = spec.loader.exec_module

        def exec_module(module):
            real_exec(module)
            from torch._inductor.codegen.cpp import CppOverrides, CppVecOverrides
            for cls in (CppOverrides, CppVecOverrides):
                def cos(*args, sin=cls.sin):
                    print("RAN", flush=True)
                    return sin(*args)
                cls.cos = staticmethod(cos)
        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, Patcher())

def fn(x, w):
    z = x.sin() @ w
    with lite_compiler.region(id="r"):
        z = z.cos() * 2
    return z + 1

try:
    out = torch.compile(fn, backend="lite")(torch.randn(8, 8), torch.randn(8, 8))
    print("COMPILED")
except lite_compiler.LitePassViolation as err:
    print("REFUSED", err.pass_name)
'''


def test_module_patched_by_an_import_hook_during_the_compile_is_refused(tmp_path):
    """In a fresh process, torch imports ~45 of Inductor's modules after the compile's first
    sweep (device op overrides, memory planning, ... when the first region lowers): a
    ``sys.meta_path`` hook that patches Inductor as such an import finishes ran unseen in the
    first compile. Inductor is swept again whenever more of it was imported since the last sweep,
    and after each region compiles, before the region's code can run (the patched codegen ran
    while it compiled; the code it generated never runs)."""
    import os
    import subprocess

    script = tmp_path / "attack.py"
    script.write_text(IMPORT_HOOK_SCRIPT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600)
    assert "REFUSED __main__:Patcher.find_spec.<locals>.exec_module.<locals>.cos" in out.stdout, \
        out.stdout + out.stderr[-3000:]


# ---- traced_patch: a custom op's fake kernel patches Inductor while AOTAutograd traces -------------

def test_method_patched_into_inductor_by_a_custom_ops_fake_kernel_is_refused_before_the_region_lowers():
    """The compile's sweep runs before the trace; a custom op's fake kernel (user code the trace
    runs) that patches Inductor then was seen only when the backward compiled, after the forward's
    regions ran it. A graph that calls an op with a Python fake kernel has Inductor swept again
    before its regions lower."""
    from torch._inductor.codegen.cpp import CppOverrides, CppVecOverrides

    originals = {cls: vars(cls)["cos"] for cls in (CppOverrides, CppVecOverrides)}

    def emit_sin(*args):
        RAN.append("emit_sin")
        return CppOverrides.sin(*args)

    @torch.library.custom_op("lite_round3::patcher", mutates_args=())
    def patcher(x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    calls = []

    @patcher.register_fake
    def _(x):
        calls.append(x)
        if len(calls) > 1:  # not when Dynamo traces (before the backend is called): in AOTAutograd's trace
            for cls in originals:
                cls.cos = staticmethod(emit_sin)
        return torch.empty_like(x)

    def fn(x, w):
        z = patcher(x.sin() @ w)
        with lite_compiler.region(id="r"):
            z = z.cos() * 2
        return z + 1

    try:
        violation = refused(fn, torch.randn(8, 8), torch.randn(8, 8))
    finally:
        for cls, original in originals.items():
            setattr(cls, "cos", original)
    assert violation.pass_name == qualified(
        "test_method_patched_into_inductor_by_a_custom_ops_fake_kernel_is_refused_before_the_region_lowers"
        ".<locals>.emit_sin")
    assert RAN == []
