"""The runtime guard: registry-allowed passes run, anything else raises LitePassViolation; ledgers."""

import pytest
import torch

import lite_compiler
from compiler_models import compile_lite

# A user pass's registry identity is its qualified name, "module:QualName" (lite_guard.identity).
HERE = __name__


def qualified(name):
    return f"{HERE}:{name}"


def _region_fn(x):
    y = x.sin()
    with lite_compiler.region(id="r"):
        y = y.cos() * 2
    return y


def test_new_observer_pass_injected_into_inductor_is_refused(monkeypatch):
    from torch.fx.passes.graph_transform_observer import GraphTransformObserver

    # A step outside Inductor's modules that no hook names (code put into Inductor's place is
    # refused as itself first: tests/test_guard_redteam.py), so the observer is what is seen.
    import torch.fx.passes.utils.fuser_utils as fuser_utils

    original = fuser_utils.fuse_by_partitions

    def view_to_reshape_with_new_pass(gm, *args, **kwargs):
        GraphTransformObserver(gm, "my_new_pass").apply_graph_pass(lambda graph: None)
        return original(gm, *args, **kwargs)

    monkeypatch.setattr(fuser_utils, "fuse_by_partitions", view_to_reshape_with_new_pass)
    with pytest.raises(lite_compiler.LitePassViolation) as refused:
        compile_lite(_region_fn, fullgraph=True)(torch.randn(8))
    message = str(refused.value)
    # Applied by code outside torch, the observed pass is qualified by that code's module.
    name = f"{view_to_reshape_with_new_pass.__module__}:my_new_pass"
    assert f"'{name}'" in message and "no registry names this pass" in message
    assert f'[[pass]]\nname = "{name}"' in message  # how to register it
    assert refused.value.stage == "lowering"


def test_region_config_re_enabling_a_forced_reorder_is_refused_with_the_registry_reason():
    def fn_with_region_config(x):
        with lite_compiler.region(id="r", reorder_for_peak_memory=True):
            return _region_fn(x)

    with pytest.raises(lite_compiler.LiteRegionConfigError) as refused:
        compile_lite(fn_with_region_config, fullgraph=True)(torch.randn(8))
    message = str(refused.value)
    assert "'reorder_for_peak_memory' = True" in message
    assert "the registry forces reorder_for_peak_memory = False in regions too" in message
    assert "torch_configs.toml:" in message  # where the policy is declared


def _count_cos(graph, seen):
    seen.append(sum(1 for n in graph.nodes if n.target is torch.ops.aten.cos.default))


SEEN = []


def my_unregistered_pass(graph):
    _count_cos(graph, SEEN)


def my_counting_pass(graph):
    _count_cos(graph, SEEN)


@pytest.fixture(autouse=True)
def _fresh_seen():
    SEEN.clear()
    yield
    SEEN.clear()


def test_unregistered_user_custom_pass_is_refused_by_its_qualified_name():
    with torch._inductor.config.patch(post_grad_custom_post_pass=my_unregistered_pass), \
            pytest.raises(lite_compiler.LitePassViolation) as refused:
        compile_lite(_region_fn, fullgraph=True)(torch.randn(8))
    assert refused.value.pass_name == qualified("my_unregistered_pass")
    assert f'name = "{qualified("my_unregistered_pass")}"' in str(refused.value)  # the entry to add
    assert SEEN == []


def test_user_custom_pass_registered_lite_safe_runs(tmp_path, monkeypatch):
    registry = tmp_path / "mine.toml"
    registry.write_text(f'[[pass]]\nname = "{qualified("my_counting_pass")}"\nstage = "post_grad"\n'
                        'lite = "region"\nkind = "custom_hook"\nwhy = "only counts nodes"\n')
    monkeypatch.setenv("LITE_GUARD_REGISTRIES", str(registry))
    with torch._inductor.config.patch(post_grad_custom_post_pass=my_counting_pass):
        compile_lite(_region_fn, fullgraph=True)(torch.randn(8))
    assert SEEN == [1]  # ran once, on the region's graph only
    (entry,) = [e for e in lite_compiler.last_ledger() if e.name == qualified("my_counting_pass")]
    assert entry.allowed and entry.stage == "post_grad" and "region[r]" in entry.graph


def fx_graph_cse(graph):
    """A user pass that happens to share the name of torch's own (allowed) fx_graph_cse and
    changes numerics: cos(y) * 2 becomes cos(y) + 2."""
    for node in graph.nodes:
        if node.target is torch.ops.aten.mul.Tensor:
            node.target = torch.ops.aten.add.Tensor


def test_user_pass_named_like_a_torch_pass_cannot_borrow_its_permission():
    from lite_compiler.config import registry

    assert registry().get_pass("fx_graph_cse") is not None  # torch's pass of that name
    x = torch.randn(8)
    with torch._inductor.config.patch(post_grad_custom_post_pass=fx_graph_cse), \
            pytest.raises(lite_compiler.LitePassViolation) as refused:
        compile_lite(_region_fn, fullgraph=True)(x)
    assert refused.value.pass_name == qualified("fx_graph_cse")
    assert "no registry names this pass" in refused.value.reason


def test_ledger_records_every_pass_with_stage_graph_verdict_and_time():
    compile_lite(_region_fn, fullgraph=True)(torch.randn(8))
    ledger = lite_compiler.last_ledger()
    names = ledger.names()
    assert {"lite_selective_decomposition", "regional_inductor", "fuse_nodes"} <= set(names)
    assert all(e.allowed for e in ledger) and not ledger.refused
    fuse = next(e for e in ledger if e.name == "fuse_nodes")
    assert fuse.stage == "scheduler" and "region[r]" in fuse.graph and fuse.seconds >= 0
    assert ledger.to_dict()["passes"][0]["verdict"] == "allowed"


def _guard_patch_points():
    """Every attribute the guard patches while active: registry hooks, generic hooks, probes."""
    from torch._inductor.pattern_matcher import PatternMatcherPass
    from torch.fx.passes.graph_transform_observer import GraphTransformObserver

    from lite_compiler import effects, hooks
    from lite_compiler.config import registry

    points = [(GraphTransformObserver, "__enter__"), (GraphTransformObserver, "__exit__"),
              (PatternMatcherPass, "apply")]
    targets = [h.target for h in hooks.hook_table(registry())] + [p.target for p in effects.PROBES]
    for target in targets:
        try:
            points.append(hooks.resolve(target))
        except (ImportError, AttributeError):
            continue  # a pass this torch lacks (registry range): nothing is patched there
    return points


def _raw(owner, attr):
    return owner.__dict__[attr] if isinstance(owner, type) else getattr(owner, attr)


def test_guard_is_inactive_outside_lite_compiles():
    points = _guard_patch_points()
    before = [_raw(owner, attr) for owner, attr in points]
    compile_lite(_region_fn, fullgraph=True)(torch.randn(8))
    after = [_raw(owner, attr) for owner, attr in points]
    assert all(a is b for a, b in zip(after, before)), "torch is not restored after a lite compile"
    assert lite_compiler.guard_active() is False
    # ... and it really was patched while the compile ran
    from lite_compiler import hooks
    from lite_compiler.config import registry
    from lite_compiler.session import session
    from lite_compiler.ledger import Ledger

    with session("lite", registry(), Ledger()):
        during = [_raw(owner, attr) for owner, attr in points]
    assert all(d is not b for d, b in zip(during, before))
    assert not hooks.installed()


def test_default_mode_compile_under_observe_never_refuses():
    def fn(x):
        return torch.nn.functional.gelu(x @ x.T).sum(-1).relu()

    torch._dynamo.reset()
    with lite_compiler.observe("default") as ledger:
        torch.compile(fn)(torch.randn(8, 8))
    assert ledger.entries and all(e.allowed for e in ledger)
    names = set(ledger.names())
    assert "post_grad_passes" in names and "fuse_nodes" in names  # never-in-lite, yet not refused


def test_registry_config_key_missing_from_torch_is_one_clear_error(tmp_path, monkeypatch):
    registry = tmp_path / "bad.toml"
    registry.write_text('[[config]]\nkey = "no_such_inductor_key"\nlite_value = false\n')
    monkeypatch.setenv("LITE_GUARD_REGISTRIES", str(registry))
    with pytest.raises(lite_compiler.LiteConfigError, match="no_such_inductor_key") as err:
        compile_lite(_region_fn, fullgraph=True)(torch.randn(8))
    first_line = str(err.value).splitlines()[0]
    assert "no_such_inductor_key" in first_line and "install a supported torch" in first_line


def test_unsupported_torch_version_is_one_clear_error(monkeypatch):
    from lite_compiler.config import check_torch_supported

    monkeypatch.setattr(torch, "__version__", "2.10.0")
    with pytest.raises(lite_compiler.LiteConfigError, match="supports torch 2.11 to 2.14.*2.10.0"):
        check_torch_supported()


def test_lite_torch_compile_checks_registry_keys_with_one_line(tmp_path):
    """A registry forcing a key this torch lacks fails at the lite `torch.compile` call, in one
    line (`import lite_compiler` imports no Inductor config to check it against: lazy import)."""
    import subprocess
    import sys

    bad = tmp_path / "bad.toml"
    bad.write_text('[[config]]\nkey = "no_such_inductor_key"\nlite_value = false\n')
    env = {**__import__("os").environ, "LITE_GUARD_REGISTRIES": str(bad)}
    script = "import torch, lite_compiler\ntorch.compile(lambda x: x, backend='lite')"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True,
                            text=True, env=env, timeout=300, cwd=tmp_path)
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert "no_such_inductor_key" in last and "install a supported torch" in last


def test_registry_is_parsed_once_and_reloaded_when_a_file_changes(tmp_path, monkeypatch):
    from lite_compiler.config import REGISTRY_ENV, registry

    team = tmp_path / "team.toml"
    team.write_text('[[pass]]\nname = "team_pass"\nstage = "post_grad"\nlite = "never"\n')
    monkeypatch.setenv(REGISTRY_ENV, str(team))
    first = registry()
    assert registry() is first and first.get_pass("team_pass").lite == "never"
    team.write_text('[[pass]]\nname = "team_pass"\nstage = "post_grad"\nlite = "always"\n'
                    'why = "now allowed"\n')
    assert registry().get_pass("team_pass").lite == "always"


def test_global_lite_off_setting_is_overridden_loudly_not_silently():
    def fn(x):
        return torch.relu(x) * 2

    x = torch.randn(8)
    torch._dynamo.reset()
    with torch._inductor.config.patch(freezing=True), \
            pytest.warns(lite_compiler.LiteSettingOverridden, match="freezing = True"):
        out = torch.compile(fn, backend="lite")(x)
    assert torch.equal(out, fn(x))
    (entry,) = [e for e in lite_compiler.last_ledger() if e.kind == "config"]
    assert entry.name == "config freezing" and not entry.allowed


def test_global_functorch_setting_is_overridden_loudly_not_silently():
    """AOTAutograd's settings reach aot_eager too: overriding one is the one way lite mode can
    differ from the user's aot_eager, so it is never silent."""
    def fn(x):
        return torch.relu(x) * 2

    x = torch.randn(8, requires_grad=True)
    torch._dynamo.reset()
    with torch._functorch.config.patch(activation_memory_budget=0.5), \
            pytest.warns(lite_compiler.LiteSettingOverridden,
                         match=r"torch\._functorch\.config\.activation_memory_budget = 0\.5 is overridden"):
        out = torch.compile(fn, backend="lite")(x)
    assert torch.equal(out, fn(x))
    (entry,) = [e for e in lite_compiler.last_ledger() if e.kind == "config"]
    assert entry.name == "config activation_memory_budget" and not entry.allowed


def _register(tmp_path, monkeypatch, *entries):
    """A user registry file holding ``(name, lite)`` custom-hook passes (post_grad), named by
    their qualified identity in this module."""
    text = "".join(f'[[pass]]\nname = "{qualified(name)}"\nstage = "post_grad"\nlite = "{lite}"\n'
                   'kind = "custom_hook"\nwhy = "only counts nodes"\n\n' for name, lite in entries)
    registry = tmp_path / "mine.toml"
    registry.write_text(text)
    monkeypatch.setenv("LITE_GUARD_REGISTRIES", str(registry))


def my_always_pass(graph):
    _count_cos(graph, SEEN)


def list_pass_always(graph):
    SEEN.append("always")


def list_pass_region(graph):
    SEEN.append("region")


def my_listed_unregistered_pass(graph):
    SEEN.append("unregistered")


def test_always_custom_pass_runs_exactly_once_per_fw_and_bw_graph(tmp_path, monkeypatch):
    # It runs on the whole graph, region nodes included; the regions must not run it again.
    _register(tmp_path, monkeypatch, ("my_always_pass", "always"))
    x = torch.randn(8, requires_grad=True)
    with torch._inductor.config.patch(post_grad_custom_post_pass=my_always_pass):
        compile_lite(_region_fn, fullgraph=True)(x).sum().backward()
    runs = [e.graph.rsplit("/", 1)[-1] for e in lite_compiler.last_ledger()
            if e.name == qualified("my_always_pass")]
    assert sorted(runs) == ["bw", "fw"]  # never on a region[...] graph
    assert len(SEEN) == 2 and SEEN[0] == 1  # the fw graph, with its region's cos still in it


def test_custom_passes_given_as_a_list_run_each_under_its_own_name(tmp_path, monkeypatch):
    _register(tmp_path, monkeypatch, ("list_pass_always", "always"), ("list_pass_region", "region"))
    with torch._inductor.config.patch(post_grad_custom_post_pass=[list_pass_always, list_pass_region]):
        compile_lite(_region_fn, fullgraph=True)(torch.randn(8))
    assert SEEN == ["always", "region"]  # whole inference graph, then the region, once each
    ledger = lite_compiler.last_ledger()
    assert "list" not in ledger.names() and not ledger.refused
    (region_run,) = [e for e in ledger if e.name == qualified("list_pass_region")]
    assert "region[r]" in region_run.graph


def test_unregistered_pass_in_a_list_is_refused_by_its_own_name(tmp_path, monkeypatch):
    _register(tmp_path, monkeypatch, ("list_pass_always", "always"))
    with torch._inductor.config.patch(
            post_grad_custom_pre_pass=[list_pass_always, my_listed_unregistered_pass]), \
            pytest.raises(lite_compiler.LitePassViolation) as refused:
        compile_lite(_region_fn, fullgraph=True)(torch.randn(8))
    assert refused.value.pass_name == qualified("my_listed_unregistered_pass")
    assert SEEN == []  # refused before anything ran


_GONE_HOOK_TARGET = "torch._inductor.scheduler:Scheduler.my_renamed_reorder"
_GONE_ENTRY = ('[[pass]]\nname = "my_renamed_reorder"\nstage = "scheduler"\nlite = "never"\n'
               f'kind = "scheduler"\nhook = "{_GONE_HOOK_TARGET}"\n')


def test_hook_missing_from_torch_fails_closed(tmp_path, monkeypatch):
    from lite_compiler import hooks

    registry = tmp_path / "gone.toml"
    registry.write_text(_GONE_ENTRY)
    monkeypatch.setenv("LITE_GUARD_REGISTRIES", str(registry))
    # Import does not check hooks (lazy Inductor: it imports no hooked module); the compile
    # does, before any pass runs, whether the hook's module was imported already or only while
    # the region compiles (lite_compiler.hooks patches and checks it on import).
    lite_compiler._install()
    with pytest.raises(lite_compiler.LiteConfigError) as at_compile:
        compile_lite(_region_fn, fullgraph=True)(torch.randn(8))
    message = str(at_compile.value).splitlines()[0]  # Dynamo appends its own hint lines
    assert "'my_renamed_reorder'" in message and _GONE_HOOK_TARGET in message
    assert torch.__version__ in message and "torch = " in message
    assert not lite_compiler.guard_active() and not hooks.installed()


def test_hook_of_a_pass_the_registry_says_this_torch_lacks_is_skipped(tmp_path, monkeypatch):
    registry = tmp_path / "gone.toml"
    registry.write_text(_GONE_ENTRY + 'torch = "<2.11"\n')
    monkeypatch.setenv("LITE_GUARD_REGISTRIES", str(registry))
    lite_compiler._install()
    x = torch.randn(8)
    torch.testing.assert_close(compile_lite(_region_fn, fullgraph=True)(x), _region_fn(x))
    assert not lite_compiler.last_ledger().refused


def my_fusion_1(graph):
    _count_cos(graph, SEEN)


def my_fusion_2(graph):
    _count_cos(graph, SEEN)


def test_scoped_wildcard_registry_entry_lets_a_matching_custom_pass_run(tmp_path, monkeypatch):
    _register(tmp_path, monkeypatch, ("my_fusion_*", "always"))
    with torch._inductor.config.patch(post_grad_custom_post_pass=my_fusion_1):
        compile_lite(_region_fn, fullgraph=True)(torch.randn(8))
    assert SEEN == [1]
    (entry,) = [e for e in lite_compiler.last_ledger() if e.name == qualified("my_fusion_1")]
    assert entry.allowed and entry.lite == "always" and entry.stage == "post_grad"


def test_scoped_wildcard_region_entry_runs_the_pass_in_regions_only(tmp_path, monkeypatch):
    _register(tmp_path, monkeypatch, ("my_fusion_*", "region"))
    with torch._inductor.config.patch(post_grad_custom_pre_pass=my_fusion_2):
        compile_lite(_region_fn, fullgraph=True)(torch.randn(8))
    assert SEEN == [1]
    (entry,) = [e for e in lite_compiler.last_ledger() if e.name == qualified("my_fusion_2")]
    assert entry.allowed and "region[r]" in entry.graph


def my_region_only_pass(graph):
    return None


def test_region_pass_installed_on_a_joint_hook_is_a_clear_error(tmp_path, monkeypatch):
    """A lite = "region" pass on a hook regions never run would silently do nothing: refuse it."""
    registry = tmp_path / "team.toml"
    registry.write_text(f'[[pass]]\nname = "{qualified("my_region_only_pass")}"\nstage = "joint_graph"\n'
                        'lite = "region"\nwhy = "only touches annotated nodes"\n')
    monkeypatch.setenv("LITE_GUARD_REGISTRIES", str(registry))
    x = torch.randn(8, requires_grad=True)
    with torch._inductor.config.patch(joint_custom_pre_pass=my_region_only_pass), \
            pytest.raises(lite_compiler.LiteConfigError, match="never runs inside regions"):
        compile_lite(_region_fn, fullgraph=True)(x)


def test_a_number_output_losing_its_recorded_value_is_not_a_graph_change():
    """torch 2.11's Inductor drops the recorded int outputs of cuDNN attention when it re-runs
    fake propagation in a region (int -> None): nothing that runs changed, so the effect check
    must not refuse it; a tensor output whose shape changed still is a change."""
    from lite_compiler.effects import fingerprint, same

    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    node = graph.call_function(torch.ops.aten.sin.default, (x,))
    graph.output(node)
    node.meta["val"] = (torch.empty(2, 3, device="meta"), 1024)
    before = fingerprint(graph)
    node.meta["val"] = (torch.empty(2, 3, device="meta"), None)
    assert same(before, fingerprint(graph))
    node.meta["val"] = (torch.empty(3, 2, device="meta"), None)
    assert not same(before, fingerprint(graph))
