"""Red team, round 2 (/work/redteam/GUARD-REPORT.md): changes made in the windows between the
guard's checks, and checks that judged by names. Each attack is a real compile on real torch;
its control compiles the same function without the attack, bitwise equal to aot_eager.

The graph changes come from a ``sys.setprofile`` callback: no attribute of torch is patched, the
callback fires when the lite compiler calls a given function, as profilers and debuggers do.
"""

import contextlib
import sys

import pytest
import torch

import lite_compiler
from compiler_models import compile_lite
from lite_compiler import hooks

aten = torch.ops.aten


@pytest.fixture(autouse=True)
def torch_untouched():
    torch._dynamo.reset()
    profile = sys.getprofile()
    yield
    assert sys.getprofile() is profile  # the attack's callback is gone
    assert not hooks.installed() and not lite_compiler.guard_active()


def plain_fn(x):
    """No region: lite mode must be bitwise aot_eager."""
    return (x.sin() * 2).cos() * 3 + x


def region_fn(x):
    y = x.sin() * 2
    with lite_compiler.region(id="r"):
        y = (y * 2) - 1
    return y * 3


def aot_eager(fn, *args):
    torch._dynamo.reset()
    return torch.compile(fn, backend="aot_eager")(*args)


def refused(fn, *args):
    with pytest.raises(lite_compiler.LitePassViolation) as err:
        compile_lite(fn)(*args)
    return err.value


@contextlib.contextmanager
def rewrite_when_called(function_name, swap_to, graph_local="gm"):
    """While active: when a function named ``function_name`` is called, every aten.mul.Tensor of
    the graph module it is handed (its local ``graph_local``) becomes ``swap_to``."""
    done = []

    def profiler(frame, event, arg):
        if event == "call" and frame.f_code.co_name == function_name and not done:
            gm = frame.f_locals.get(graph_local)
            if isinstance(gm, torch.fx.GraphModule):
                for node in gm.graph.nodes:
                    if node.target is aten.mul.Tensor:
                        node.target = swap_to
                gm.recompile()
                done.append(function_name)

    previous = sys.getprofile()
    sys.setprofile(profiler)
    try:
        yield done
    finally:
        sys.setprofile(previous)


def test_plain_and_region_functions_compile_bitwise_aot_eager_with_no_attack():
    """The control of every attack below: the legit path is bitwise aot_eager."""
    x = torch.randn(8, 16)
    for fn in (plain_fn, region_fn):
        expected = aot_eager(fn, x)
        assert torch.equal(compile_lite(fn)(x), expected)


# ---- late_reference: the outside-regions reference is held to the entry fingerprint ----------

def test_change_before_the_outside_regions_reference_is_refused():
    """A change made after the lite compiler's entry fingerprint and before the outside-regions
    reference is taken (at the call of adopt_enclosed) would become part of the reference and
    pass check_outer_graph; the reference is verified against the entry fingerprint first."""
    x = torch.randn(8, 16)
    with rewrite_when_called("adopt_enclosed", aten.add.Tensor) as done:
        violation = refused(plain_fn, x)
    assert done == ["adopt_enclosed"]  # the attack ran
    assert violation.kind == "effect"
    assert "the outside-regions reference" in str(violation)
    assert "target aten.mul.Tensor -> aten.add.Tensor" in str(violation)


# ---- fingerprint_spoof: targets are compared by identity, not by name --------------------------

class LooksLikeMul:
    """Prints as aten.mul.Tensor (and carries its schema) but computes add."""

    _schema = aten.mul.Tensor._schema
    __name__ = "mul"

    def __call__(self, a, b):
        return aten.add.Tensor(a, b)

    def __str__(self):
        return "aten.mul.Tensor"

    def __eq__(self, other):  # claims to be whatever it is compared with
        return True

    __hash__ = object.__hash__


def test_target_that_prints_as_the_traced_op_is_refused():
    """Swapped in inside the checked window (at the call of compile_regions, after the
    outside-regions reference): a fingerprint that names targets by str() sees no change."""
    x = torch.randn(8, 16)
    with rewrite_when_called("compile_regions", LooksLikeMul()) as done:
        violation = refused(plain_fn, x)
    assert done == ["compile_regions"]
    assert violation.kind == "effect"
    assert "target aten.mul.Tensor is another object of that name (LooksLikeMul" in str(violation)


def test_target_that_prints_as_the_joint_op_is_refused_by_the_partition_check():
    """The same stand-in put into the forward graph as the partitioner returns it (a profile
    callback at its return): value numbers name targets by identity too."""
    x = torch.randn(8, 16, requires_grad=True)
    done = []

    def profiler(frame, event, arg):
        if event == "return" and frame.f_code.co_name == "min_cut_rematerialization_partition" \
                and isinstance(arg, tuple) and not done:
            for node in arg[0].graph.nodes:
                if node.target is aten.mul.Tensor:
                    node.target = LooksLikeMul()
            done.append("partitioner")

    previous = sys.getprofile()
    sys.setprofile(profiler)
    try:
        violation = refused(plain_fn, x)
    finally:
        sys.setprofile(previous)
    assert done == ["partitioner"]
    assert violation.kind == "effect" and violation.stage == "aot"
    assert "the partitioner's forward graph has node 'mul'" in str(violation)
    assert "computes something else than the joint graph's node of that name" in str(violation)


# ---- setprofile: the graph handed to boxed_nop is checked again once it returns ----------------

def test_change_made_while_boxed_nop_compiles_the_graph_is_refused():
    """boxed_nop (torch's, checked by provenance) is called after the last effect check; a
    profile callback at its call rewrites and recompiles the graph it was handed."""
    x = torch.randn(8, 16)
    with rewrite_when_called("boxed_nop", aten.add.Tensor, graph_local="fx_g") as done:
        violation = refused(plain_fn, x)
    assert done == ["boxed_nop"]
    assert violation.kind == "effect"
    assert "inference graph boxed_nop compiled" in str(violation)
    assert "target aten.mul.Tensor -> aten.add.Tensor" in str(violation)


def test_change_made_while_boxed_nop_compiles_a_training_graph_is_refused():
    """The same for the forward graph of a training compile (a region in it: the region calls
    are left out of the check, the rest is held to what AOTAutograd produced)."""
    x = torch.randn(8, 16, requires_grad=True)
    with rewrite_when_called("boxed_nop", aten.add.Tensor, graph_local="fx_g") as done:
        violation = refused(region_fn, x)
    assert done == ["boxed_nop"]
    assert "fw graph boxed_nop compiled" in str(violation)


# ---- sweep_cache: the sweep's skip is keyed on the code that runs -------------------------------

def _emits_add(a, b):
    return f"{a} + {b}"


def test_code_swapped_into_an_inductor_method_after_a_sweep_is_refused():
    """The Inductor sweep skips a class whose namespace holds the same objects as at the last
    sweep; writing ``__code__`` in place keeps every object. After a warm-up compile (the class
    swept, found clean), CppVecOverrides.sub's function gets code that emits '+'."""
    from torch._inductor.codegen.cpp import CppVecOverrides

    x = torch.randn(8, 16)
    expected = aot_eager(region_fn, x)
    assert torch.equal(compile_lite(region_fn)(x), expected)  # warm-up: the sweep ran, clean
    function = CppVecOverrides.__dict__["sub"].__func__
    original = function.__code__
    function.__code__ = _emits_add.__code__
    try:
        violation = refused(region_fn, x)
    finally:
        function.__code__ = original
    assert violation.pass_name == f"{__name__}:_emits_add"
    assert "patched into torch._inductor.codegen.cpp:CppVecOverrides.sub" in str(violation)
    # torch's code back in place: the skip key changed again, the class is swept and clean
    assert torch.equal(compile_lite(region_fn)(x), expected)
