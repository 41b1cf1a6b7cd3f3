"""The shipped torch registry against the installed torch (real torch, no mocks)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lite_guard.registry import (FORCED_CONFIG_KINDS, LITE_SAFE_FLAGS, Registry, shipped_registry_files,
                                 value_matches_type)

torch = pytest.importorskip("torch")
import torch._functorch.config as functorch_config  # noqa: E402
import torch._inductor as inductor  # noqa: E402
import torch._inductor.config as inductor_config  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SHIPPED = REPO / "lite_guard" / "registries" / "torch_inductor.toml"
INVENTORY = REPO / "lite_guard" / "registries" / "torch_configs.toml"
CONFIG_MODULES = {"inductor": inductor_config, "functorch": functorch_config}


@pytest.fixture(scope="module")
def registry() -> Registry:
    return Registry.load(include_project=False)


def _config_keys(module) -> set[str]:
    """Every key of a torch config module, nested-class keys dotted (``triton.cudagraphs``)."""
    return set(module._config) | set(module.get_config_copy())


def test_shipped_registry_loads(registry: Registry) -> None:
    assert SHIPPED in shipped_registry_files()
    assert SHIPPED in registry.files
    own = Registry.from_files([SHIPPED])
    assert len(own.passes) >= 150
    assert not own.configs, "config keys live in torch_configs.toml (one home per key)"
    assert INVENTORY in registry.files


def test_every_lite_safe_entry_says_why(registry: Registry) -> None:
    for entry in Registry.from_files([SHIPPED]).passes:
        assert entry.why.strip(), entry.name
        if entry.lite in LITE_SAFE_FLAGS:
            assert len(entry.why) > 20, entry.name


def test_derived_lite_config_covers_upstream_lite_mode(registry: Registry) -> None:
    derived = registry.derive_lite_config(torch_version=torch.__version__)
    for key, value in inductor.lite_mode_options.items():
        assert key in derived, f"upstream lite_mode_options[{key!r}] is not derived from the registry"
        assert derived[key] == value, f"{key}: registry forces {derived[key]!r}, upstream {value!r}"


def test_every_config_key_exists_in_torch(registry: Registry) -> None:
    keys = {module: _config_keys(mod) for module, mod in CONFIG_MODULES.items()}
    missing = [
        f"{entry.module}:{entry.key}"
        for entry in registry.configs
        if entry.exists_in(torch.__version__) and entry.key not in keys[entry.module]
    ]
    assert not missing, f"config keys not in this torch: {missing}"


@pytest.mark.parametrize("module", list(CONFIG_MODULES))
def test_every_config_key_of_this_torch_has_one_inventory_entry(registry: Registry, module) -> None:
    """The inventory is complete: every key torch's config module installs (nested classes
    dotted) is classified by exactly one shipped entry, and no entry names a key torch lacks."""
    keys = set(CONFIG_MODULES[module]._config)
    entries = [e.key for e in registry.configs if e.module == module and e.exists_in(torch.__version__)]
    assert len(entries) == len(set(entries))
    assert sorted(keys - set(entries)) == []
    assert sorted(set(entries) - keys) == []


def test_lite_values_have_the_config_type(registry: Registry) -> None:
    """A forced value must be assignable: it is of the key's declared type, and so is torch's
    default (bool stays bool; a key whose default is None may be forced to a value of its type)."""
    for entry in registry.configs:
        if not entry.exists_in(torch.__version__):
            continue
        config = CONFIG_MODULES[entry.module]._config[entry.key]
        if getattr(config, "alias", None):
            continue  # an alias of another module's key: torch keeps no default of its own
        default = config.default
        assert value_matches_type(default, entry.type), (entry.key, entry.type, default)
        if entry.forced:
            assert value_matches_type(entry.lite_value, entry.type), (entry.key, entry.lite_value)
            if default is not None:
                assert type(entry.lite_value) is type(default), (entry.key, entry.lite_value, default)


def test_new_forced_keys_are_pinned_at_torch_defaults(registry: Registry) -> None:
    """Forcing a key at torch's default changes nothing for a user who did not set it: every
    forced key whose lite value differs from this torch's default is a deliberate switch-off
    (listed here, each reviewed)."""
    deliberate = {
        "fallback_by_default", "selective_decompose", "reorder_for_peak_memory",
        "reorder_for_compute_comm_overlap", "triton.reorder_for_reducing_graph_partitions",
        "use_pre_grad_passes", "use_joint_graph_passes", "use_post_grad_passes", "use_dce",
        "allow_buffer_reuse", "reorder_for_locality", "pattern_matcher", "joint_graph_constant_folding",
        "split_cat_fx_passes", "group_fusion", "batch_fusion", "optimize_scatter_upon_const_tensor",
        "enable_linear_binary_folding", "inplace_buffers", "inplace_padding", "layout_optimization",
        "permute_fusion", "fallback_random", "emulate_precision_casts", "auto_chunker.enable",
        "aten_distributed_optimizations.collective_bucketing",
        "aten_distributed_optimizations.insert_overlap_deps",
        "aten_distributed_optimizations.pre_bucketing_fsdp_collectives", "memory_planning",
        "aten_distributed_optimizations.enable_simple_overlap", "apply_gumbel_max_trick",
        "partitioned_scatter_enabled", "keep_output_stride", "disable_padding_cpu",
        "comprehensive_padding", "shape_padding",
    }
    switched = sorted(e.key for e in registry.configs
                      if e.forced and e.exists_in(torch.__version__)
                      and CONFIG_MODULES[e.module]._config[e.key].default != e.lite_value)
    assert sorted(set(switched) - deliberate) == []


def test_every_gate_of_a_registered_pass_is_classified_as_able_to_run_it(registry: Registry) -> None:
    """A config key a pass entry is gated by can run or skip that pass: the inventory must not
    call it neutral or debug (tuning only for parameters whose own gate is forced)."""
    wrong = []
    for entry in registry.passes:
        for key in entry.gated_by:
            module, _, name = key.rpartition(":")
            config = registry.get_config(name, module or "inductor") \
                or registry.get_config(name, "functorch")
            assert config is not None, (entry.name, key)
            if config.kind in ("neutral", "debug"):
                wrong.append((entry.name, key, config.kind))
    assert wrong == []


def test_forced_kinds_carry_a_lite_value_and_free_kinds_do_not(registry: Registry) -> None:
    for entry in Registry.from_files([INVENTORY]).configs:
        assert entry.forced == (entry.kind in FORCED_CONFIG_KINDS), entry.key
        assert entry.why.strip(), entry.key


def test_derived_lite_config_applies_to_torch(registry: Registry) -> None:
    derived = registry.derive_lite_config(torch_version=torch.__version__)
    with inductor_config.patch(derived):
        for key, value in derived.items():
            owner, _, leaf = key.rpartition(".")
            target = getattr(inductor_config, owner) if owner else inductor_config
            assert getattr(target, leaf) == value, key


def test_gated_by_names_are_config_keys(registry: Registry) -> None:
    keys = {"inductor": _config_keys(inductor_config), "functorch": _config_keys(functorch_config)}
    unknown = sorted({
        (entry.name, gate)
        for entry in Registry.from_files([SHIPPED]).passes
        if entry.exists_in(torch.__version__)
        for gate in entry.gated_by
        # "functorch:key" is functorch's; a bare key is Inductor's (lite_guard.registry)
        if gate.rpartition(":")[2] not in keys[gate.rpartition(":")[0] or "inductor"]
    })
    assert not unknown, f"gated_by keys that are not torch config keys: {unknown}"


def test_scanner_check_passes_on_installed_torch() -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "tools" / "scan_torch_passes.py"), "--check"],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_scanner_never_imports_torch(tmp_path: Path) -> None:
    """The scanner reads sources only: a torch tree that cannot be imported still scans."""
    root = Path(torch.__file__).parent
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", str(REPO / "tools" / "scan_torch_passes.py"),
         "--list", "--torch-root", str(root)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
    assert "torch" not in imported
    assert "post_grad_custom_pre_pass" in proc.stdout


def test_scanner_only_proposes_config_kinds_and_says_so() -> None:
    """Against a registry without the inventory, every key of this torch is printed as a
    [[config]] entry whose kind is marked PROPOSED: the scanner proposes, a person decides."""
    proc = subprocess.run(
        [sys.executable, str(REPO / "tools" / "scan_torch_passes.py"), "--config-inventory",
         "--registry", str(SHIPPED)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    kinds = [line for line in proc.stdout.splitlines() if line.startswith("kind = ")]
    expected = len(inductor_config._config) + len(functorch_config._config)
    assert len(kinds) == expected
    assert all("# PROPOSED " in line for line in kinds)


def _scan_check_with(tmp_path: Path, extra: str) -> subprocess.CompletedProcess:
    """``scan --check`` of the installed torch against the shipped registries plus ``extra``."""
    path = tmp_path / "extra.toml"
    path.write_text(extra)
    registries = [arg for f in shipped_registry_files() for arg in ("--registry", str(f))]
    return subprocess.run([sys.executable, str(REPO / "tools" / "scan_torch_passes.py"), "--check",
                           *registries, "--registry", str(path)],
                          capture_output=True, text=True, timeout=600)


ABSENT_ROOT = ('[[pipeline]]\nroot = "torch._inductor.scheduler:Scheduler.reorder_for_2_99"\n'
               'stage = "scheduler"\ntorch = "{spec}"\nwhy = "a root of another release"\n')


def test_scanner_reports_a_missing_root_of_this_release_as_not_in_tree(tmp_path: Path) -> None:
    proc = _scan_check_with(tmp_path, ABSENT_ROOT.format(spec=">=2.11"))
    assert proc.returncode == 1
    assert ("not in tree:     pipeline torch._inductor.scheduler:Scheduler.reorder_for_2_99 not"
            " found in the tree") in proc.stdout


def test_scanner_leaves_a_root_ranged_out_of_this_release_alone(tmp_path: Path) -> None:
    proc = _scan_check_with(tmp_path, ABSENT_ROOT.format(spec=">=2.99"))
    assert proc.returncode == 0, proc.stdout
    assert "registry in sync" in proc.stderr  # the summary line goes to stderr


def test_scanner_reports_a_graph_type_member_torch_does_not_define(tmp_path: Path) -> None:
    # The lint's "takes an FX graph" evidence is registry data; a member torch's class lacks
    # would be evidence of nothing, so scan --check says so.
    proc = _scan_check_with(tmp_path, '[[base]]\nname = "torch.fx.graph_module:GraphModule"\n'
                            'role = "graph_type"\nmembers = ["graph", "graph_nodes_v2"]\n')
    assert proc.returncode == 1
    assert ("not in tree:     graph_type 'torch.fx.graph_module:GraphModule': member"
            " 'graph_nodes_v2' not defined by the class") in proc.stdout.splitlines()
