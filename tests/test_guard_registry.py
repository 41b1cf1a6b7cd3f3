"""The guard is derived from the registry (both directions), owns no list of its own, and keeps
its promises about identity, functorch hooks, reloading, threads and the entry point."""

import os
import subprocess
import sys
import threading

import pytest
import torch

import lite_compiler
from compiler_models import compile_lite
from lite_compiler import effects, hooks
from lite_compiler.config import registry

HERE = __name__


def _region_fn(x):
    y = x.sin()
    with lite_compiler.region(id="r"):
        y = y.cos() * 2
    return y * 3


# ---- the hook table is the registry ------------------------------------------------------------

def test_hook_table_is_exactly_the_registry_hook_entries():
    reg = registry()
    table = hooks.hook_table(reg)
    assert {(h.name, h.target, h.stage) for h in table} == \
        {(e.name, e.hook, e.stage) for e in reg.hooked_passes()}
    assert len(table) >= 15  # pipelines, reorders, DCE, fusion, memory planning, layout, padding
    from lite_compiler import guard

    for module in (guard, hooks):  # the hand-kept tables are gone
        assert not hasattr(module, "HOOKS") and not hasattr(module, "CUSTOM_HOOK_STAGES")


def test_every_hook_entry_resolves_on_the_installed_torch():
    reg = registry()
    checked = 0
    for entry in reg.hooked_passes():
        if not entry.exists_in(torch.__version__):
            continue  # e.g. simple_overlap, new in torch 2.14
        owner, attr = hooks.resolve(entry.hook)  # raises if this torch renamed or moved it
        assert callable(getattr(owner, attr)), entry.hook
        checked += 1
    assert checked >= 15 and hooks.unresolved_hooks(reg) == []
    for entry in reg.custom_hooks():  # Inductor's and functorch's config attributes
        module, key = entry.hook.split(":")
        assert key in __import__(module, fromlist=["_"])._config, entry.hook
    keys = {e.hook for e in reg.custom_hooks()}
    assert {"torch._functorch.config:joint_custom_pass", "torch._inductor.config:custom_partitioner_fn",
            "torch._inductor.config:post_grad_custom_post_pass"} <= keys


def _when_on(entry):
    """A config patch that makes the hook's ``when`` condition true: the key itself, or an entry
    of a dict-valued option (``post_grad_fusion_options.activation_quantization_aten_pass``)."""
    if not entry.when:
        return {}
    module, key = entry.when_key
    if module != "inductor" or key in torch._inductor.config._config:
        return {key: True} if module == "inductor" else {}
    option, _, item = key.partition(".")
    return {option: {item: {"enabled": True}}}


def test_every_hooked_pass_the_registry_keeps_out_of_lite_is_refused_before_it_runs():
    """Each never/region hook, called inside a lite session outside regions, is refused under its
    registry name before torch's function runs (the arguments are never even looked at)."""
    from lite_compiler.ledger import Ledger
    from lite_compiler.session import session

    reg = registry()
    refused = []
    for entry in reg.hooked_passes():
        if entry.lite == "always" or not entry.exists_in(torch.__version__):
            continue
        with torch._inductor.config.patch(_when_on(entry)), session("lite", reg, Ledger()):
            owner, attr = hooks.resolve(entry.hook)
            patched = getattr(owner, attr)
            with pytest.raises(lite_compiler.LitePassViolation) as err:
                patched(object(), object()) if isinstance(owner, type) else patched(object())
        assert err.value.pass_name == entry.name and err.value.stage == entry.stage
        refused.append(entry.name)
    assert {"post_grad_passes", "fuse_nodes", "reorder_for_peak_memory", "ReuseLine",
            "enable_activation_quantization"} <= set(refused)


def test_every_pipeline_a_lite_compile_runs_is_covered_by_a_hook_or_an_effect_check():
    """Record which registry [[pipeline]] roots a lite training compile with a region really
    calls; each must be intercepted (a hook on it or on what it calls) or checked by effect."""
    reg = registry()
    roots = {}
    for pipeline in reg.pipelines:
        try:
            owner, attr = hooks.resolve(pipeline.root)
        except (ImportError, AttributeError):
            continue
        roots[getattr(owner, attr).__code__] = pipeline.root
    called = set()

    def profiler(frame, event, arg):
        if event == "call" and frame.f_code in roots:
            called.add(roots[frame.f_code])

    x = torch.randn(8, requires_grad=True)
    sys.setprofile(profiler)
    try:
        compile_lite(_region_fn, fullgraph=True)(x).sum().backward()
    finally:
        sys.setprofile(None)
    assert {"torch._inductor.scheduler:Scheduler._init",
            "torch._functorch.partitioners:min_cut_rematerialization_partition"} <= called

    hooked = {}
    for hook in hooks.hook_table(reg):
        try:
            owner, attr = hooks.resolve(hook.target)
            hooked[getattr(owner, attr)] = hook.name
        except (ImportError, AttributeError):
            continue
    hooked_names = {getattr(fn, "__name__", "") for fn in hooked}
    probed = {p.target for p in effects.PROBES} | set(effects.CHECKED_PIPELINES)
    probes = [hooks.resolve(target) for target in probed]

    def runs_a_probed_step(owner, names):
        """A root that only runs a probed step is covered by that step's effect check: it calls
        a probed function, or a probed method of its own class (Scheduler.__init__ runs
        Scheduler._init), or constructs the class whose __init__ runs it (GraphLowering builds
        the Scheduler)."""
        for probe_owner, probe_attr in probes:
            if not isinstance(probe_owner, type):
                if probe_attr in names:
                    return True
            elif probe_owner is owner and probe_attr in names:
                return True
            elif probe_owner.__name__ in names and probe_attr in probe_owner.__init__.__code__.co_names:
                return True
        return False

    resolved = {root: hooks.resolve(root) for root in called}
    names = {root: set(getattr(owner, attr).__code__.co_names) for root, (owner, attr) in resolved.items()}
    covered = {root for root, (owner, attr) in resolved.items()
               if getattr(owner, attr) in hooked or root in probed
               or hooked_names & names[root] or runs_a_probed_step(owner, names[root])}
    # A root that runs another covered root (GraphLowering.codegen runs _update_scheduler;
    # fx_codegen_and_compile builds an _InProcessFxCompile and runs its codegen_and_compile) is
    # covered through it, as LG005 counts it.
    grew = True
    while grew:
        grew = False
        for root in set(called) - covered:
            owner = resolved[root][0]
            if any(attr in names[root] and (other_owner is owner or not isinstance(other_owner, type)
                                            or other_owner.__name__ in names[root])
                   for other_owner, attr in (resolved[c] for c in covered)):
                covered.add(root)
                grew = True
    for root in called:
        assert root in covered, f"{root} runs unguarded"


# ---- identity, functorch and Inductor custom hooks ------------------------------------------------

SEEN = []


def my_joint_pass(gm, joint_inputs):
    SEEN.append("joint")
    return gm


@pytest.fixture
def user_registry(tmp_path, monkeypatch):
    def write(text):
        path = tmp_path / "team.toml"
        path.write_text(text)
        monkeypatch.setenv("LITE_GUARD_REGISTRIES", str(path))
        return path

    SEEN.clear()
    return write


def test_functorch_joint_custom_pass_registered_never_is_refused_and_recorded(user_registry):
    user_registry(f'[[pass]]\nname = "{HERE}:my_joint_pass"\nstage = "aot"\nlite = "never"\n'
                  'kind = "custom_hook"\n')
    # (config.patch, not monkeypatch: monkeypatch's undo deletes, which hides a torch config key)
    with torch._functorch.config.patch(joint_custom_pass=my_joint_pass), \
            pytest.raises(lite_compiler.LitePassViolation) as refused:
        compile_lite(_region_fn, fullgraph=True)(torch.randn(8, requires_grad=True))
    assert refused.value.pass_name == f"{HERE}:my_joint_pass" and "registered lite = \"never\"" in str(refused.value)
    assert SEEN == []  # it never ran
    (row,) = [e for e in lite_compiler.last_ledger() if e.name == f"{HERE}:my_joint_pass"]
    assert not row.allowed and row.kind == "custom_hook" and row.stage == "aot"


def test_functorch_joint_custom_pass_registered_always_runs_once_under_the_guard(user_registry):
    user_registry(f'[[pass]]\nname = "{HERE}:my_joint_pass"\nstage = "aot"\nlite = "always"\n'
                  'kind = "custom_hook"\nwhy = "returns the graph untouched"\n')
    x = torch.randn(8, requires_grad=True)
    with torch._functorch.config.patch(joint_custom_pass=my_joint_pass):
        out = compile_lite(_region_fn, fullgraph=True)(x)
    assert SEEN == ["joint"]
    (row,) = [e for e in lite_compiler.last_ledger() if e.name == f"{HERE}:my_joint_pass"]
    assert row.allowed and row.effect == ""  # ran, and changed nothing
    torch.testing.assert_close(out, _region_fn(x))


class MyPartitioner:
    def __call__(self, *args, **kwargs):
        raise AssertionError("never called")


def test_inductor_custom_partitioner_is_identified_by_its_class_and_refused(user_registry):
    user_registry("")  # the shipped registries only
    with torch._inductor.config.patch(custom_partitioner_fn=MyPartitioner()), \
            pytest.raises(lite_compiler.LitePassViolation) as refused:
        compile_lite(_region_fn, fullgraph=True)(torch.randn(8, requires_grad=True))
    assert refused.value.pass_name == f"{HERE}:MyPartitioner"


def test_allowed_custom_partitioner_is_a_clear_error_since_lite_never_calls_it(user_registry):
    user_registry(f'[[pass]]\nname = "{HERE}:MyPartitioner"\nstage = "aot"\nlite = "always"\n'
                  'kind = "custom_hook"\nwhy = "a partitioner"\n')
    with torch._inductor.config.patch(custom_partitioner_fn=MyPartitioner()), \
            pytest.raises(lite_compiler.LiteConfigError,
                          match="custom_partitioner_fn is set, but lite mode never calls it"):
        compile_lite(_region_fn, fullgraph=True)(torch.randn(8, requires_grad=True))


def test_activation_quantization_in_the_partitioner_is_refused():
    options = {"activation_quantization_aten_pass": {"allowed_dtypes": "torch.float32", "size_in_mb": 0}}
    x = torch.randn(8, requires_grad=True)
    with torch._inductor.config.patch(post_grad_fusion_options=options), \
            pytest.warns(lite_compiler.LiteSettingOverridden, match="post_grad_fusion_options"), \
            pytest.raises(lite_compiler.LitePassViolation) as refused:
        compile_lite(_region_fn, fullgraph=True)(x).sum().backward()
    assert refused.value.pass_name == "enable_activation_quantization" and refused.value.stage == "aot"


# ---- registry hygiene at run time ------------------------------------------------------------

def test_registry_reload_is_decided_by_content_even_when_mtime_and_size_are_kept(tmp_path, monkeypatch):
    from lite_compiler.config import REGISTRY_ENV

    team = tmp_path / "team.toml"
    team.write_text('[[pass]]\nname = "myproj.passes:team_pass"\nstage = "post_grad"\nlite = "always"\n'
                    'why = "ok"\n')
    monkeypatch.setenv(REGISTRY_ENV, str(team))
    first = registry()
    assert registry() is first and first.get_pass("myproj.passes:team_pass").lite == "always"
    stamp = os.stat(team)
    team.write_text('[[pass]]\nname = "myproj.passes:team_pass"\nstage = "post_grad"\nlite = "never"\n'
                    'why = "no!"\n')  # same size: "always" and "never"+"!" ...
    assert os.stat(team).st_size == stamp.st_size
    os.utime(team, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))  # ... and the old mtime (cp -p)
    assert registry().get_pass("myproj.passes:team_pass").lite == "never"


# ---- threads and the entry point -----------------------------------------------------------------

def test_two_threads_compiling_each_get_their_own_ledger():
    results = {}

    def compile_in_thread(name, fn):
        compiled = torch.compile(fn, backend="lite")
        compiled(torch.randn(8))
        results[name] = lite_compiler.last_ledger()

    def fn_a(x):
        with lite_compiler.region(id="a"):
            return x.cos() * 2

    def fn_b(x):
        with lite_compiler.region(id="b"):
            return x.exp() + 1

    torch._dynamo.reset()
    threads = [threading.Thread(target=compile_in_thread, args=(n, f)) for n, f in (("a", fn_a), ("b", fn_b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert results["a"] is not results["b"]
    assert all("region[a]" in g for g in results["a"].region_code)
    assert all("region[b]" in g for g in results["b"].region_code)
    assert lite_compiler.last_ledger() not in (results["a"], results["b"])  # this thread's own
    assert not hooks.installed()


def test_backend_lite_works_in_a_fresh_process_without_importing_lite_compiler(tmp_path):
    code = ("import sys, torch\n"
            "def fn(x):\n    return x.sin() * 2\n"
            "x = torch.randn(8)\n"
            "out = torch.compile(fn, backend='lite')(x)\n"
            "assert torch.equal(out, fn(x)), 'not bitwise equal'\n"
            "assert 'lite_compiler' in sys.modules\n"
            "print('ok')\n")
    env = {k: v for k, v in os.environ.items() if k != "LITE_GUARD_REGISTRIES"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                            timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "ok"


def test_forced_value_of_the_wrong_type_for_torch_is_one_clear_error(tmp_path):
    """A registry without a ``type`` for the key cannot be checked by the loader; the compiler
    checks the value against torch's own config type before anything compiles."""
    from lite_guard.registry import Registry

    from lite_compiler.config import derive_configs

    bad = tmp_path / "bad.toml"
    bad.write_text('[[config]]\nkey = "epilogue_fusion"\nkind = "optimization"\nlite_value = "false"\n'
                   'why = "a string, not a bool"\n')
    with pytest.raises(lite_compiler.LiteConfigError) as err:
        derive_configs(Registry.from_files([bad]))
    message = str(err.value)
    assert len(message.splitlines()) == 1 and f"{bad}:1:" in message
    assert "lite_value = 'false' for torch._inductor.config.epilogue_fusion" in message and "bool" in message
