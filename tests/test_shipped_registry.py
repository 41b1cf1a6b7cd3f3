"""The shipped torch registry against the installed torch (real torch, no mocks)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lite_guard.registry import LITE_SAFE_FLAGS, Registry, shipped_registry_files

torch = pytest.importorskip("torch")
import torch._functorch.config as functorch_config  # noqa: E402
import torch._inductor as inductor  # noqa: E402
import torch._inductor.config as inductor_config  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SHIPPED = REPO / "lite_guard" / "registries" / "torch_inductor.toml"
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
    assert own.configs


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


def test_lite_values_have_the_config_type(registry: Registry) -> None:
    """A forced value must be assignable: same type as torch's default (bool stays bool)."""
    for entry in registry.configs:
        if not entry.exists_in(torch.__version__):
            continue
        default = CONFIG_MODULES[entry.module].get_config_copy()[entry.key]
        assert type(entry.lite_value) is type(default), (entry.key, entry.lite_value, default)


def test_derived_lite_config_applies_to_torch(registry: Registry) -> None:
    derived = registry.derive_lite_config(torch_version=torch.__version__)
    with inductor_config.patch(derived):
        for key, value in derived.items():
            owner, _, leaf = key.rpartition(".")
            target = getattr(inductor_config, owner) if owner else inductor_config
            assert getattr(target, leaf) == value, key


def test_gated_by_names_are_config_keys(registry: Registry) -> None:
    keys = _config_keys(inductor_config) | _config_keys(functorch_config)
    unknown = sorted({
        (entry.name, key)
        for entry in Registry.from_files([SHIPPED]).passes
        if entry.exists_in(torch.__version__)
        for key in entry.gated_by
        if key not in keys
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
