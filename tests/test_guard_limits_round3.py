"""Red team, round 3: the limits docs/guard.md listed after round 2, and new attacks a hostile
Inductor developer might use to switch a pass on for lite users unseen. Each attack is a real
patch on real torch and a real compile; the controls (tests/test_guard_limits.py) compile the
same functions untouched, bitwise equal to aot_eager outside regions. Every patch is undone;
``torch_untouched`` checks the guard left nothing patched.
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
RAN = []  # what the attacking code did: a refused attack must never have computed a value


def qualified(qualname):
    return f"{HERE}:{qualname}"


@pytest.fixture(autouse=True)
def torch_untouched():
    RAN.clear()
    torch._dynamo.reset()
    yield
    RAN.clear()
    assert not hooks.installed() and not lite_compiler.guard_active()


def loss_region_fn(x, y):
    """mse_loss decomposes in the region (torch._decomp.decompositions.mse_loss, under
    pw_cast_for_opmath: type_casts calls torch._prims_common.elementwise_dtypes)."""
    z = x.sin()
    with lite_compiler.region(id="r"):
        loss = F.mse_loss(z, y)
    return loss * 3


def cos_region_fn(x, w):
    z = x.sin() @ w
    with lite_compiler.region(id="r"):
        z = z.cos() * 2
    return z + 1


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
    undefs = " ".join(f"-U{m}" for m in ("__FAST_MATH__", "__FINITE_MATH_ONLY__", "__NO_MATH_ERRNO__",
                                          "__NO_SIGNED_ZEROS__", "__ASSOCIATIVE_MATH__", "__RECIPROCAL_MATH__"))
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
