"""Red team, round 4 (docs/guard.md, "Red team: the attack matrix"): passes a real Inductor
developer or a third-party library might plant, through places the earlier rounds left open.
Each attack is a real compile on real torch: lite mode either refuses it (the exact message) or
computes bits equal to aot_eager (``torch.equal``), and the ledger says what happened. Every
patch is undone (monkeypatch); ``torch_untouched`` checks the guard left nothing patched."""

import os
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch

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




def user_registry(monkeypatch, tmp_path, *entries):
    path = tmp_path / "team.toml"
    path.write_text("\n".join(
        f'[[pass]]\nname = "{name}"\nstage = "{stage}"\nlite = "{lite}"\nkind = "function"\n'
        'why = "red-team test"\n' for name, stage, lite in entries))
    monkeypatch.setenv("LITE_GUARD_REGISTRIES", str(path))


def mul_to_add(graph):
    RAN.append("mul_to_add")
    for node in graph.nodes:
        if node.op == "call_function" and node.target is aten.mul.Tensor:
            node.target = aten.add.Tensor


def plain_fn(x, y):
    return (x * y).sin() * 3


def cos_region_fn(x, w):
    z = x.sin() @ w
    with lite_compiler.region(id="r"):
        z = z.cos() * 2
    return z + 1


# ---- call_swap: a registered callable pass whose __call__ is replaced after it was set ----------

class ShapeOnlyPass:
    """A team's registered pass (lite = "always"): it only reads the graph."""

    def __call__(self, graph):
        RAN.append("ShapeOnlyPass")

    def uuid(self):
        return "shape-only"


def _custom_graph_pass():
    from torch._inductor.custom_graph_pass import CustomGraphPass

    return type("ShapeOnlyGraphPass", (ShapeOnlyPass, CustomGraphPass),
                {"__module__": HERE, "__qualname__": "ShapeOnlyGraphPass"})


@pytest.mark.parametrize("kind", ["plain", "CustomGraphPass"])
def test_registered_pass_object_whose_call_is_swapped_runs_as_the_new_code(monkeypatch, tmp_path, kind):
    """The pass object was identified by its class; swapping ``__call__`` on the class (a library
    that "improves" a team's pass after it was set on the config) ran other code under the
    class's permission. The code a callable object runs is its class's ``__call__``: code not
    defined in the class (nor in a class it extends) runs as itself."""
    cls = ShapeOnlyPass if kind == "plain" else _custom_graph_pass()
    user_registry(monkeypatch, tmp_path, (f"{HERE}:{cls.__qualname__}", "post_grad", "always"))
    instance = cls()
    x, y = torch.randn(8), torch.randn(8)
    with torch._inductor.config.patch(post_grad_custom_post_pass=instance):
        assert torch.equal(compile_lite(plain_fn)(x, y), aot_eager(plain_fn, x, y))  # control
        assert RAN == ["ShapeOnlyPass"]
        RAN.clear()
        monkeypatch.setattr(cls, "__call__", lambda self, graph: mul_to_add(graph))
        violation = refused(plain_fn, x, y)
    assert violation.pass_name == qualified(
        "test_registered_pass_object_whose_call_is_swapped_runs_as_the_new_code.<locals>.<lambda>")
    assert "no registry names this pass" in violation.reason
    assert RAN == []


class DecoratedPass:
    @torch.no_grad()  # a decorator of torch's around the class's own __call__
    def __call__(self, graph):
        RAN.append("DecoratedPass")


def test_registered_pass_object_with_a_decorated_call_keeps_its_class_identity(monkeypatch, tmp_path):
    """A decorator on the class's own ``__call__`` (torch's ``no_grad``) is looked through: the
    code it wraps was defined in the class, so the object is still its class."""
    user_registry(monkeypatch, tmp_path, (f"{HERE}:DecoratedPass", "post_grad", "always"))
    x, y = torch.randn(8), torch.randn(8)
    with torch._inductor.config.patch(post_grad_custom_post_pass=DecoratedPass()):
        assert torch.equal(compile_lite(plain_fn)(x, y), aot_eager(plain_fn, x, y))
    assert RAN == ["DecoratedPass"]
    assert any(row.name == qualified("DecoratedPass") and row.allowed
               for row in lite_compiler.last_ledger().entries)


def test_transformer_subclass_as_functorch_joint_custom_pass_is_refused_by_its_class():
    """A torch.fx.Transformer subclass applied through AOTAutograd's joint hook (functorch's
    ``joint_custom_pass``, which AOTAutograd calls itself) is a user pass: named by its class."""
    class MulToAdd(torch.fx.Transformer):
        def call_function(self, target, args, kwargs):
            RAN.append("MulToAdd")
            return super().call_function(aten.add.Tensor if target is aten.mul.Tensor else target,
                                         args, kwargs)

    class ApplyTransformer:
        def __call__(self, graph, inputs=None):
            gm = torch.fx.GraphModule(torch.nn.Module(), graph)
            return MulToAdd(gm).transform().graph

    with torch._functorch.config.patch(joint_custom_pass=ApplyTransformer()):
        violation = refused(plain_fn, torch.randn(8, requires_grad=True), torch.randn(8))
    assert violation.pass_name == qualified(
        "test_transformer_subclass_as_functorch_joint_custom_pass_is_refused_by_its_class"
        ".<locals>.ApplyTransformer")
    assert RAN == []


# ---- config_decorator: torch._inductor.config.patch around user code -----------------------------

def test_inductor_config_patch_as_a_decorator_around_user_code_is_judged_like_any_setting():
    """``@torch._inductor.config.patch(...)`` on the user's step function: its pass is refused by
    name, and its optimization flags are overridden loudly (ledger rows), bits aot_eager's."""
    x, y = torch.randn(8), torch.randn(8)
    expected = aot_eager(plain_fn, x, y)
    compiled = compile_lite(plain_fn)

    @torch._inductor.config.patch(post_grad_custom_post_pass=mul_to_add)
    def step_with_pass():
        return compiled(x, y)

    with pytest.raises(lite_compiler.LitePassViolation) as err:
        step_with_pass()
    assert err.value.pass_name == qualified("mul_to_add") and RAN == []

    torch._dynamo.reset()

    @torch._inductor.config.patch(pattern_matcher=True, epilogue_fusion=True, freezing=True)
    def step_with_flags():
        return compile_lite(plain_fn)(x, y)

    with pytest.warns(lite_compiler.LiteSettingOverridden):
        out = step_with_flags()
    assert torch.equal(out, expected)
    rows = {row.name: row for row in lite_compiler.last_ledger().entries}
    assert "config freezing" in rows and not rows["config freezing"].allowed


# ---- dynamo_callback: Dynamo's compile callbacks -------------------------------------------------

@pytest.fixture
def dynamo_callbacks():
    from torch._dynamo.callback import callback_handler

    start, end = list(callback_handler.start_callbacks), list(callback_handler.end_callbacks)
    yield callback_handler
    callback_handler.start_callbacks[:] = start
    callback_handler.end_callbacks[:] = end


def test_dynamo_start_callback_that_patches_inductor_is_refused(monkeypatch, dynamo_callbacks):
    """``torch._dynamo.callback.on_compile_start``: code run at every compile's start, before the
    backend; a patch it puts into Inductor is found by the sweep before any region lowers."""
    from torch._inductor.codegen.cpp import CppOverrides, CppVecOverrides

    def cos_as_sin(x):
        RAN.append("cos_as_sin")
        return f"std::sin({x})"

    def patch_inductor(args):
        monkeypatch.setattr(CppOverrides, "cos", staticmethod(cos_as_sin))
        monkeypatch.setattr(CppVecOverrides, "cos", staticmethod(cos_as_sin))

    dynamo_callbacks.register_start_callback(patch_inductor)  # (torch._dynamo.reset() clears it)
    with pytest.raises(lite_compiler.LitePassViolation) as err:
        torch.compile(cos_region_fn, backend="lite")(torch.randn(8, 8), torch.randn(8, 8))
    violation = err.value
    assert violation.pass_name == qualified(
        "test_dynamo_start_callback_that_patches_inductor_is_refused.<locals>.cos_as_sin")
    assert RAN == []


def test_dynamo_end_callback_from_outside_torch_is_reported(dynamo_callbacks):
    """An end callback runs after the lite compiler returned, after every check: it can reach
    the compiled graph (the graph module stays reachable) and rewrite it unseen. Lite mode
    cannot refuse what has not run yet, nor check after it: it is reported (ledger row and a
    LiteGuardReport warning), and the bits are aot_eager's when it changes nothing."""
    from lite_compiler.errors import LiteGuardReport

    def after_compile(args):
        RAN.append("after_compile")

    x, y = torch.randn(8), torch.randn(8)
    expected = aot_eager(plain_fn, x, y)
    torch._dynamo.reset()
    dynamo_callbacks.register_end_callback(after_compile)  # (torch._dynamo.reset() clears it)
    with pytest.warns(LiteGuardReport, match="on_compile_end"):
        out = torch.compile(plain_fn, backend="lite")(x, y)
    assert torch.equal(out, expected)
    name = qualified("test_dynamo_end_callback_from_outside_torch_is_reported.<locals>.after_compile")
    row = next(row for row in lite_compiler.last_ledger().entries if row.name == name)
    assert row.kind == "callback" and "after every check" in row.reason


# ---- dynamo_config: Dynamo's own flags -----------------------------------------------------------

@pytest.mark.parametrize("flags", [{"cache_size_limit": 4},  # irrelevant to the graph
                                   {"assume_static_by_default": False},  # dynamic shapes
                                   {"specialize_float": True}],
                         ids=lambda f: next(iter(f)))
def test_dynamo_config_changes_reach_lite_and_aot_eager_alike(flags):
    """Dynamo's graph is the input of lite and of aot_eager alike: a Dynamo flag that changes
    it changes the reference too (no Dynamo flag runs an Inductor pass). Bits aot_eager's."""
    def fn(x, y, s):
        return (x * y).sin() * s

    import warnings

    from lite_compiler.errors import LiteGuardReport

    x, y = torch.randn(8), torch.randn(8)
    with torch._dynamo.config.patch(flags):
        expected = aot_eager(fn, x, y, 2.5)
        with warnings.catch_warnings():
            warnings.simplefilter("error", LiteGuardReport)  # nothing unexplained
            out = compile_lite(fn)(x, y, 2.5)
    assert torch.equal(out, expected)


def test_registered_pass_on_the_inference_graph_moves_its_reference_and_is_recorded():
    """With dynamic shapes a float input is a symbol: AOTAutograd's tensorify_python_scalars (a
    registered pass) rewrites the inference graph after its trace. That is the pass's effect
    (its ledger row), not an unexplained change reported between the trace and the compiler."""
    import warnings

    from lite_compiler.errors import LiteGuardReport

    def fn(x, y, s):
        return (x * y).sin() * s

    x, y = torch.randn(8), torch.randn(8)
    with torch._dynamo.config.patch(assume_static_by_default=False):
        with warnings.catch_warnings():
            warnings.simplefilter("error", LiteGuardReport)
            out = compile_lite(fn)(x, y, 2.5)
        assert torch.equal(out, aot_eager(fn, x, y, 2.5))
    row = next(r for r in lite_compiler.last_ledger().entries if r.name == "tensorify_python_scalars")
    assert row.allowed and "convert_element_type" in (row.effect or "")


# ---- library_kernels: torch.library registrations active while tracing ---------------------------

def test_composite_kernel_registered_for_a_custom_op_reaches_lite_and_aot_eager_alike():
    """``torch.library.impl(..., "CompositeImplicitAutograd")`` decides what the op decomposes
    into while AOTAutograd traces, outside regions: for lite and aot_eager alike (the graph both
    run). A Meta/fake kernel only computes metadata. Bits aot_eager's."""
    lib = torch.library.Library("liteguard_r4", "DEF")
    try:
        lib.define("scale(Tensor x) -> Tensor")

        def scale(x):
            RAN.append("scale")
            return x + x  # a "faster" composite that a library planted

        lib.impl("scale", scale, "CompositeImplicitAutograd")

        def fn(x):
            return torch.ops.liteguard_r4.scale(x.sin()) * 3

        x = torch.randn(8)
        assert torch.equal(compile_lite(fn)(x), aot_eager(fn, x))
    finally:
        lib._destroy()


def test_dispatch_mode_active_during_the_compile_reaches_lite_and_aot_eager_alike():
    """A TorchDispatchMode active around the compiled call (a library's op rewriting mode) is
    seen by both traces the same way (Dynamo and AOTAutograd run under it alike)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class MulToAddMode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func is aten.mul.Tensor:
                func = aten.add.Tensor
            return func(*args, **(kwargs or {}))

    x, y = torch.randn(8), torch.randn(8)
    with MulToAddMode():
        expected = aot_eager(plain_fn, x, y)
        out = compile_lite(plain_fn)(x, y)
    assert torch.equal(out, expected)
    assert not torch.equal(out, plain_fn(x, y))  # the mode did rewrite: for both alike


# ---- planted_so: a compiled kernel library planted in Inductor's C++ cache ------------------------

PLANTED = textwrap.dedent("""
    import sys, torch, lite_compiler
    sys.path.insert(0, {tests!r})
    from test_guard_round4 import cos_region_fn, sin_region_fn
    x, w = torch.load({inputs!r})
    try:
        out = torch.compile(cos_region_fn, backend="lite")(x, w)
    except lite_compiler.LitePassViolation as exc:
        print("REFUSED", exc)
    else:
        torch.save(out, {result!r})
        rows = [row.reason for row in lite_compiler.last_ledger().entries
                if row.name == "<kernel library rebuilt>"]
        print("RAN", *rows, sep="\\n")
""")


def sin_region_fn(x, w):
    z = x.sin() @ w
    with lite_compiler.region(id="r"):
        z = z.sin() * 2
    return z + 1


def _kernel_libraries(fn, x, w):
    """The .so files the lite compile of ``fn`` loaded (new kernel modules), and its result.
    Inductor puts each kernel module it loads in sys.modules (every supported torch)."""
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    def libraries():
        files = {str(getattr(module, "__file__", "")) for module in list(sys.modules.values())}
        return {f for f in files if f.endswith(".so") and f.startswith(cache_dir())}

    before = libraries()
    out = compile_lite(fn)(x, w)
    return sorted(libraries() - before), out


def test_kernel_library_planted_in_inductors_cpp_cache_is_not_loaded(tmp_path):
    """Inductor's C++ cache files each kernel's shared object under the hash of its source and
    command, and loads whatever file is there (it never rebuilds one that exists). A library
    planted under the name of the region's cos kernel (here: the sin kernel's, which exports
    the same entry point) ran as the region in the next process. A library lite mode did not
    see built (no authentic record beside it) is built again before it is loaded."""
    import shutil

    x, w = torch.randn(13, 11), torch.randn(11, 11)  # shapes of this test's own: its own keys
    cos_libs, cos_out = _kernel_libraries(cos_region_fn, x, w)
    sin_libs, sin_out = _kernel_libraries(sin_region_fn, x, w)
    assert len(cos_libs) == 1 and len(sin_libs) == 1 and not torch.equal(cos_out, sin_out)
    (target,), (planted,) = cos_libs, sin_libs
    backup = tmp_path / "cos.so"
    shutil.copy2(target, backup)
    inputs, result = tmp_path / "inputs.pt", tmp_path / "out.pt"
    torch.save((x, w), inputs)
    script = PLANTED.format(tests=os.path.dirname(__file__), inputs=str(inputs), result=str(result))
    try:
        shutil.copy(planted, target + ".tmp")
        os.replace(target + ".tmp", target)
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=300, env={**os.environ, "PYTHONPATH": os.getcwd()})
    finally:
        with open(target, "rb") as now, open(planted, "rb") as plant:
            if now.read() == plant.read():  # not rebuilt: put the real one back
                shutil.copy(backup, target + ".tmp")
                os.replace(target + ".tmp", target)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ran, *rebuilt = proc.stdout.strip().splitlines()
    assert ran == "RAN" and len(rebuilt) == 1, proc.stdout
    assert rebuilt[0].startswith(f"{target} in Inductor's C++ cache was not built by a lite compile")
    assert torch.equal(torch.load(result), cos_out)  # rebuilt from its source: cos, not sin


def test_kernel_library_loaded_earlier_without_an_authentic_record_is_reported(monkeypatch):
    """A kernel Inductor loaded earlier in the process (outside lite mode: a default-mode compile
    of the same kernel) is reused from its memory cache: no build step runs, so it is verified
    when the region compiles; with no authentic record of its bytes (simulated: the records
    forgotten) the code already loaded cannot be rebuilt: reported, ledger row and warning."""
    from lite_compiler import kernel_libraries
    from lite_compiler.errors import LiteGuardReport

    # Shapes no other test compiles: the planted-library test's kernel (13 x 11) must not be
    # built or rebuilt here while that test runs beside it (pytest -n: seen on the H200).
    x, w = torch.randn(17, 7), torch.randn(7, 7)
    clean = compile_lite(cos_region_fn)(x, w)  # built (or verified) and loaded: in memory now
    monkeypatch.setattr(kernel_libraries, "_SEEN", {})
    monkeypatch.setattr(kernel_libraries, "_STORE", [None])  # no authentic record anywhere
    monkeypatch.setattr(kernel_libraries, "_REPORTED", set())
    with pytest.warns(LiteGuardReport, match="cannot verify the code already loaded"):
        assert torch.equal(compile_lite(cos_region_fn)(x, w), clean)
    (row,) = [r for r in lite_compiler.last_ledger().entries if r.name == "<kernel library unverified>"]
    assert row.kind == "cache" and "outside a lite compile" in row.reason


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_cuda_region_binding_torchs_own_extension_is_not_reported(monkeypatch):
    """A CUDA region's module binds torch._C's functions (the raw-stream getter): torch's own
    extension, not a kernel library of Inductor's cache. Seen on the H200 before the fix: every
    CUDA region reported torch/_C.so as "loaded from Inductor's C++ cache ... no authentic
    record". Even with no record anywhere, nothing outside the cache is reported."""
    from lite_compiler import kernel_libraries

    monkeypatch.setattr(kernel_libraries, "_SEEN", {})
    monkeypatch.setattr(kernel_libraries, "_STORE", [None])
    monkeypatch.setattr(kernel_libraries, "_REPORTED", set())
    x, w = torch.randn(13, 11, device="cuda"), torch.randn(11, 11, device="cuda")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compile_lite(cos_region_fn)(x, w)
    assert [r for r in lite_compiler.last_ledger().entries if r.name == "<kernel library unverified>"] == []
    assert [str(c.message) for c in caught if "kernel library" in str(c.message)] == []


# ---- open: the lowering table's records rewritten together --------------------------------------

@pytest.mark.xfail(strict=True, reason="open (docs/guard.md, Limits): every record torch keeps of"
                   " what a lowering is for lives in writable objects")
def test_lowering_cell_rewritten_with_its_wrapped_record_is_refused():
    """The ``decomp_fn`` cell of aten.cos's lowering wrapper set to torch's sin lowering, with
    ``__wrapped__`` rewritten to agree; its ``aten_fn`` record still says cos (the key it is
    under): every record agrees, and the region computes sin."""
    import torch._inductor.compile_fx  # noqa: F401
    from torch._inductor import lowering

    cos, sin = lowering.lowerings[aten.cos.default], lowering.lowerings[aten.sin.default]
    cells = dict(zip(cos.__code__.co_freevars, cos.__closure__))
    saved = ({k: c.cell_contents for k, c in cells.items()}, cos.__wrapped__)
    try:
        cells["decomp_fn"].cell_contents = sin.__wrapped__
        cos.__wrapped__ = sin.__wrapped__
        with pytest.raises(lite_compiler.LitePassViolation):
            compile_lite(cos_region_fn)(torch.randn(8, 8), torch.randn(8, 8))
    finally:
        for k, c in cells.items():
            c.cell_contents = saved[0][k]
        cos.__wrapped__ = saved[1]
