"""The lite config, derived from the registry, and the torch support check."""

from __future__ import annotations

import os
import stat
import sys
from typing import Any

from lite_guard import SUPPORTED_TORCH_MINORS, SUPPORTED_TORCH_TEXT

SUPPORTED = SUPPORTED_TORCH_MINORS  # inclusive range of torch minor releases (one home: lite_guard)


def torch_release() -> tuple[int, int]:
    import torch

    parts = torch.__version__.split("+")[0].split(".")
    return int(parts[0]), int("".join(ch for ch in parts[1] if ch.isdigit()) or 0)


def _config_error(message: str) -> Exception:
    # lite_compiler.errors imports torch._dynamo (its classes subclass Dynamo's): only when raising,
    # so `import lite_compiler` stays free of Dynamo.
    from lite_compiler.errors import LiteConfigError

    return LiteConfigError(message)


def check_torch_supported() -> None:
    import torch

    low, high = SUPPORTED
    if not low <= torch_release() <= high:
        raise _config_error(
            f"lite_compiler supports torch {low[0]}.{low[1]} to {high[0]}.{high[1]}, but torch"
            f" {torch.__version__} is installed; install a supported torch or use backend='aot_eager'")


REGISTRY_ENV = "LITE_GUARD_REGISTRIES"  # read by lite_guard.registry.registry_paths, as for check


# The registry in use: [(each file's path and bytes, registry)].
_loaded: list[tuple[list[tuple], Any]] = []


def registry(extra_paths: tuple[str, ...] = ()) -> Any:
    """The registry for one compile. Loaded once per set of files and their contents: the files
    are read at every compile and compared byte for byte with the ones in use, so an edit takes
    effect at the next compile even when it keeps the file's mtime and size (cp -p, tar, rsync
    -t), and an unchanged registry is never re-parsed."""
    from lite_guard.registry import registry_paths
    from lite_guard.registry_cache import cached_registry

    paths = registry_paths(extra_paths=extra_paths,  # LITE_GUARD_REGISTRIES included
                           extra_source=("given to the lite backend's registry_paths",
                                         "fix the path"))
    key = [_content_key(path) for path in paths]
    if not _loaded or _loaded[0][0] != key:  # bytes compared, not hashed: ~0.3 ms a compile
        # Registry.from_files, or its validated form cached per user by content hash and
        # authenticated (lite_guard.registry_cache): parsing 4 TOML files was ~50 ms of every
        # process's first compile. Raises on bad input: nothing is cached then.
        import torch

        loaded = cached_registry(paths, torch_version=torch.__version__)
        _loaded[:] = [(key, loaded)]
    return _loaded[0][1]


def _content_key(path: Any) -> tuple:
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return (str(path), "not a regular file")  # a FIFO would hang here: from_files reports it
        with open(path, "rb") as file:
            data = file.read()
    except OSError:
        return (str(path), None)  # missing or unreadable: from_files reports it
    return (str(path), data)


def check_torch_and_registry(reg: Any) -> None:
    """What ``import lite_compiler`` checks: a supported torch, and a registry whose lite config
    derives for it (version ranges resolved). Imports neither torch._dynamo nor torch._inductor:
    whether torch's config has every forced key, and its type, is derive_configs' check."""
    import torch

    check_torch_supported()
    for module in ("inductor", "functorch"):
        reg.derive_lite_config(module=module, torch_version=torch.__version__)


def derive_configs(reg: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(inductor patch, functorch patch); every key must exist in the installed torch.

    Derived and checked once per loaded registry (every compile asks; the registry object is
    replaced whenever a registry file's bytes change, see registry()); callers get copies."""
    import torch

    held = _DERIVED.get(id(reg))
    if held is None or held[0] is not reg or held[1] != torch.__version__:
        _DERIVED.clear()  # one registry in use at a time; the old one may be gone
        held = _DERIVED[id(reg)] = (reg, torch.__version__, _derive_configs(reg))
    inductor, functorch = held[2]
    return dict(inductor), dict(functorch)


_DERIVED: dict[int, tuple[Any, str, tuple[dict[str, Any], dict[str, Any]]]] = {}


def _derive_configs(reg: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    import torch
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config

    check_torch_supported()
    inductor = reg.derive_lite_config(module="inductor", torch_version=torch.__version__)
    functorch = reg.derive_lite_config(module="functorch", torch_version=torch.__version__)
    for module_name, module, patch in (("torch._inductor.config", inductor_config, inductor),
                                       ("torch._functorch.config", functorch_config, functorch)):
        known = module.get_config_copy()
        missing = sorted(key for key in patch if key not in known)
        if missing:
            raise _config_error(
                f"torch {torch.__version__} has no {module_name} key(s) {', '.join(missing)}, which"
                f" the lite-guard registry needs; install a supported torch ({SUPPORTED_TORCH_TEXT}) or mark the"
                " config entry with a torch = \"...\" range in the registry")
        _check_lite_value_types(reg, module_name, module, patch)
    return inductor, functorch


_TYPES_CHECKED: dict[int, Any] = {}


def _check_lite_value_types(reg: Any, module_name: str, module: Any, patch: dict[str, Any]) -> None:
    """Every forced value has the type of torch's own config key (``lite_value = "false"`` for a
    bool key would switch it on): one clear error, checked once per loaded registry."""
    if _TYPES_CHECKED.get(id(reg), (None, ()))[0] is reg and module_name in _TYPES_CHECKED[id(reg)][1]:
        return
    for key, value in patch.items():
        value_type = getattr(module._config.get(key), "value_type", None)
        if value_type is not None and not value_has_type(value, value_type):
            short = "functorch" if "functorch" in module_name else "inductor"
            entry = reg.get_config(key, short)
            where = f"{entry.origin}:{entry.line}: " if entry is not None else ""
            raise _config_error(
                f"{where}lite_value = {value!r} for {module_name}.{key}, which torch types as"
                f" {type_name(value_type)}; write a {type_name(value_type)} value in the registry")
    held = _TYPES_CHECKED.setdefault(id(reg), (reg, set()))
    if held[0] is not reg:
        _TYPES_CHECKED[id(reg)] = held = (reg, set())
    held[1].add(module_name)


def value_has_type(value: Any, expected: Any) -> bool:
    """Whether ``value`` fits torch's annotated config type (bool is not an int here)."""
    import types
    import typing

    if expected is Any or expected is typing.Any:
        return True
    if expected is None or expected is type(None):
        return value is None
    origin = typing.get_origin(expected)
    if origin in (typing.Union, types.UnionType):
        return any(value_has_type(value, arg) for arg in typing.get_args(expected))
    if origin is typing.Literal:
        return value in typing.get_args(expected)
    if origin is not None:
        expected = origin  # list[str] -> list, Callable[...] -> collections.abc.Callable
    if not isinstance(expected, type):
        return True  # a type torch wrote in a form we cannot check: no claim either way
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        return True
    if expected is int and isinstance(value, bool):
        return False
    try:
        return isinstance(value, expected)
    except TypeError:
        return True


def type_name(expected: Any) -> str:
    """``bool``, ``int | None``, ``Optional[Literal['assert', 'log']]``: how torch wrote it."""
    import typing

    if typing.get_origin(expected) is None and isinstance(expected, type):
        return expected.__name__
    return str(expected).replace("typing.", "")


def user_settings_overridden(patch: dict[str, Any], module: str = "inductor") -> list[tuple[str, Any, Any]]:
    """(key, the user's value, the lite value) for every config in ``patch`` that the user set
    away from torch's default: lite mode overrides them, and says so instead of ignoring them.
    ``module``: "inductor" or "functorch" (AOTAutograd's settings, which aot_eager reads too:
    overriding one of those is the one way lite mode can differ from the user's aot_eager)."""
    import importlib

    config = importlib.import_module(f"torch._{module}.config")
    current = config.get_config_copy()
    overridden = []
    for key, lite_value in patch.items():
        entry = config._config.get(key)
        if entry is None or key not in current:
            continue
        user_value = current[key]
        if user_value != lite_value and user_value != entry.default:
            overridden.append((key, user_value, lite_value))
    return overridden


def forced_by_environment(patch: dict[str, Any], module: str = "inductor") -> list[tuple[str, Any, Any]]:
    """(key, the value lite mode sets, the value torch forces) for each key of ``patch`` that
    torch's config takes from an environment variable whatever a ``config.patch`` sets
    (``Config(env_name_force=...)``, read when torch imported the config: its entry's
    ``env_value_force``). Lite mode cannot set such a key: its patch would be silently void."""
    import importlib

    entries = importlib.import_module(f"torch._{module}.config")._config
    unset = getattr(sys.modules.get("torch.utils._config_module"), "_UNSET_SENTINEL", None)
    forced = []
    for key, value in patch.items():  # (a lookup per key lite sets, ~300 a compile)
        entry = entries.get(key)
        now = getattr(entry, "env_value_force", unset) if entry is not None else unset
        if now is not unset and now != value:
            forced.append((key, value, now))
    return forced


def config_drift(patch: dict[str, Any], module: str = "inductor") -> list[tuple[str, Any, Any]]:
    """(key, the value lite mode set, the value now) for each key of ``patch`` whose live value
    in torch's config module differs. Torch's configs are one per process: code a compile runs
    (a custom op's fake kernel while a region lowers) or another thread (its own compile's
    ``config.patch``) can change a key lite mode set, after it was set, unseen by the hooks."""
    import importlib

    config = importlib.import_module(f"torch._{module}.config")
    drift = []
    for key, value in patch.items():
        now: Any = config
        try:
            for part in key.split("."):
                now = getattr(now, part)
        except AttributeError:
            continue  # a key this torch lacks was refused when the configs were derived
        if now is value:
            continue
        try:
            same = type(now) is type(value) and bool(now == value)
        except Exception:  # (a value whose == fails: not the value lite set)
            same = False
        if not same:
            drift.append((key, value, now))
    return drift
