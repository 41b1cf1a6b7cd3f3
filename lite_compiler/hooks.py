"""The guard's interception points, built from the registry, and patching them into torch.

Every ``[[pass]]`` entry with a ``hook = "module:Qual.name"`` (custom-hook entries aside: those
name config attributes, see lite_compiler.custom_passes) becomes one interception: while a guard
session is active the function or method is replaced by a wrapper that asks the guard before it
runs (``when``: only while that config key is truthy). Two generic interceptions catch the
passes torch names at run time (GraphTransformObserver and PatternMatcherPass), and the effect
probes (lite_compiler.effects.PROBES) watch stage boundaries for passes nobody named.
"""

from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.machinery
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from lite_compiler import custom_passes, effects, guard, provenance
from lite_compiler.errors import LiteConfigError
from lite_guard import SUPPORTED_TORCH_TEXT
from lite_guard.identity import is_qualified

_CONFIG_MODULES = {"inductor": "torch._inductor.config", "functorch": "torch._functorch.config"}


class Hook(NamedTuple):
    """One interception point: ``target`` (``module:Qual.name``) runs as pass ``name``.

    A NamedTuple, as the guard's other immutable records: a frozen dataclass costs ~1 ms of
    every process's import (its methods are generated from source text)."""

    target: str
    name: str
    stage: str
    kind: str = "function"
    when: tuple[str, str] | None = None  # (config module, dotted key)
    # Gated by a config the registry classifies as a reorder: when allowed to run, the schedule's
    # order is its to change (the effect check then checks nodes, not order).
    reorder: bool = False

    def enabled(self) -> bool:
        if self.when is None:
            return True
        module, key = self.when
        config = importlib.import_module(_CONFIG_MODULES.get(module, module))
        return bool(functools.reduce(_config_step, key.split("."), config))


def _config_step(owner: Any, part: str) -> Any:
    """One step of a dotted ``when`` key: a nested config class, or a key of a dict-valued option
    (``post_grad_fusion_options.activation_quantization_aten_pass``)."""
    return owner.get(part) if isinstance(owner, dict) else getattr(owner, part)


def hook_table(registry: Any) -> tuple[Hook, ...]:
    """The interceptions the registry declares (cached per registry object)."""
    if registry is None:
        return ()
    cached = _TABLES.get(id(registry))
    if cached is not None and cached[0] is registry:
        return cached[1]
    table = tuple(Hook(e.hook, e.name, e.stage, e.kind, e.when_key, _is_reorder(registry, e))
                  for e in registry.hooked_passes())
    if len(_TABLES) > 8:
        _TABLES.clear()
    _TABLES[id(registry)] = (registry, table)
    return table


_TABLES: dict[int, tuple[Any, tuple[Hook, ...]]] = {}


def _is_reorder(registry: Any, entry: Any) -> bool:
    """A pass gated by a ``kind = "reorder"`` config (reorder_for_peak_memory, ...)."""
    for key in entry.gated_by:
        module, _, name = key.rpartition(":")
        config = registry.get_config(name, module or "inductor")
        if config is not None and config.kind == "reorder":
            return True
    return False


class NotImportedYet(LookupError):
    """The hook's module is not imported yet: it is patched (and checked) when torch imports it."""


def resolve(target: str, imported_only: bool = False) -> tuple[Any, str]:
    """(owner, attribute) of a hook target; raises ImportError / AttributeError if torch lacks it.
    ``imported_only``: raise ``NotImportedYet`` instead of importing the module (lazy Inductor).

    A method must be defined on the class itself: patching one it inherits would shadow the
    base class's and restore it onto the wrong class."""
    module_name, qual = target.split(":")
    if imported_only and module_name not in sys.modules:
        raise NotImportedYet(module_name)
    owner: Any = importlib.import_module(module_name)
    *path, attr = qual.split(".")
    for part in path:
        owner = getattr(owner, part)
    if isinstance(owner, type) and attr not in owner.__dict__:
        raise AttributeError(f"{owner.__qualname__} defines no {attr!r}")
    if not isinstance(owner, type) and not hasattr(owner, attr):
        raise AttributeError(f"module {module_name!r} has no attribute {attr!r}")
    return owner, attr


def _absent_from_this_torch(hook: Hook, registry: Any) -> bool:
    """Whether the registry says the hooked pass does not exist in the installed torch."""
    import torch

    entry = registry.get_pass(hook.name) if registry is not None else None
    return entry is not None and not entry.exists_in(torch.__version__)


def unresolved_hooks(registry: Any) -> list[tuple[Hook, str]]:
    """(hook, why) for every hook whose target the installed torch lacks, except the hooks whose
    registry entry says the pass does not exist in this torch release."""
    missing = []
    for hook in hook_table(registry):
        try:
            hook.enabled()  # a `when` key torch lacks would fail at the pass's first call
        except (ImportError, AttributeError, KeyError) as exc:
            if not _absent_from_this_torch(hook, registry):
                missing.append((hook, f"its when key {hook.when[1]!r} is not a torch config key"
                                f" ({type(exc).__name__}: {exc})"))
            continue
        try:
            resolve(hook.target, imported_only=True)
        except NotImportedYet:
            continue  # checked when torch imports its module (_PatchOnImport): still fail closed
        except (ImportError, AttributeError) as exc:
            if not _absent_from_this_torch(hook, registry):
                missing.append((hook, f"{type(exc).__name__}: {exc}"))
    return missing


def check_hooks(registry: Any) -> None:
    """Fail closed: a hook the installed torch does not have is one clear ``LiteConfigError``,
    never a pass that silently runs unguarded."""
    missing = unresolved_hooks(registry)
    if missing:
        raise _unresolved_error(*missing[0])


def _unresolved_error(hook: Hook, why: str) -> LiteConfigError:
    import torch

    return LiteConfigError(
        f"lite_compiler cannot guard pass '{hook.name}': its hook {hook.target} does not resolve"
        f" on torch {torch.__version__} ({why}); install a supported torch ({SUPPORTED_TORCH_TEXT}) or"
        " upgrade lite-guard, or, if the pass is gone from this torch, give its registry entry"
        " a torch = \"...\" range that excludes this release")


# ---- the wrappers ------------------------------------------------------------------------------

def guarded(fn: Callable[..., Any], hook: Hook) -> Callable[..., Any]:
    """``fn`` asking the guard first; an allowed pass's effect on its graph is recorded."""
    is_scheduler_method = hook.target.split(":")[1].startswith("Scheduler.")
    # A torch pass's permission is for torch's code: foreign code at its hook (a monkeypatch,
    # functools.wraps or not) runs as itself and must be registered (lite_compiler.provenance).
    torch_pass = not is_qualified(hook.name)
    replaced = (f"it stands in for torch's '{hook.name}' at {hook.target} (a monkeypatch): register"
                " it under this name, or remove the patch for lite compiles")

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if guard.current_session() is None:
            return fn(*args, **kwargs)
        foreign = provenance.foreign_identity(fn) if torch_pass else None  # asked at each call:
        if foreign is not None:  # a __code__ swapped in place changes no attribute
            guard.check(foreign, hook.stage, "function", where=replaced)  # whether enabled or not
        elif torch_pass:
            provenance.check_callees(fn, hook.name, hook.stage)
        if not hook.enabled():
            return fn(*args, **kwargs)
        with guard.timed(hook.name, hook.stage, hook.kind) as record:
            if hook.reorder:
                effects.note_reorder(hook.name)
            if is_scheduler_method and args:
                after = effects.scheduler_pass_effect(hook.name, args[0], record)
                result = fn(*args, **kwargs)
                after()
                return result
            with effects.registered_pass(hook.name, hook.stage, args, record) as returned:
                result = fn(*args, **kwargs)
                returned(result)
                return result

    wrapper.__lite_guarded__ = True  # type: ignore[attr-defined]
    return wrapper


def _observer_stage(observer: Any) -> str:
    subsystem = getattr(observer, "subsystem", None) or ""
    for stage in ("pre_grad", "joint_graph", "post_grad"):
        if stage in subsystem:
            return stage
    return "lowering"


_OBSERVER_MODULE = "torch.fx.passes.graph_transform_observer"
_PATTERN_MODULE = "torch._inductor.pattern_matcher"


def _observer_enter(original_enter: Callable[..., Any]) -> Callable[..., Any]:
    def __enter__(self: Any) -> Any:
        if guard.current_session() is None:
            return original_enter(self)
        name = custom_passes.applied_identity(self, self.passname, _OBSERVER_MODULE)
        record = guard.check(name, _observer_stage(self), "observer")
        self._lite_effect = effects.registered_pass(name, _observer_stage(self),
                                                    (getattr(self, "gm", None),), record)
        self._lite_effect.__enter__()
        self._lite_record, self._lite_start = record, time.perf_counter()
        return original_enter(self)

    return __enter__


def _observer_exit(original_exit: Callable[..., Any]) -> Callable[..., Any]:
    def __exit__(self: Any, *exc: Any) -> Any:
        record = getattr(self, "_lite_record", None)
        if record is not None:
            record.seconds += time.perf_counter() - self._lite_start
        result = original_exit(self, *exc)
        effect = getattr(self, "_lite_effect", None)
        if effect is not None:
            self._lite_effect = None
            effect.__exit__(None, None, None)
        return result

    return __exit__


def _pattern_apply(original_apply: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original_apply)
    def apply(self: Any, gm: Any) -> int:
        if guard.current_session() is None:
            return original_apply(self, gm)
        # Torch's name when torch applies it, else qualified (custom_passes.applied_identity).
        name = custom_passes.applied_identity(self, self.pass_name, _PATTERN_MODULE)
        with guard.timed(name, "post_grad", "pattern") as record, \
                effects.registered_pass(name, "post_grad", (gm,), record):
            return original_apply(self, gm)

    return apply


# ---- installing and restoring -----------------------------------------------------------------

_saved: list[tuple[Any, str, Any]] = []
_LOCK = threading.RLock()
_users = 0


def acquire(registry: Any) -> None:
    """A thread's first session starts: patch torch if no other thread has."""
    global _users
    with _LOCK:
        if _users == 0:
            try:
                _install(registry)
            except BaseException:
                _uninstall()
                raise
        _users += 1


def release() -> None:
    """A thread's last session ended: restore torch once no thread has a session."""
    global _users
    with _LOCK:
        _users -= 1
        if _users == 0:
            _uninstall()


def installed() -> bool:
    return bool(_saved)


def _patch(owner: Any, attr: str, new: Any) -> None:
    raw = owner.__dict__[attr] if isinstance(owner, type) else getattr(owner, attr)
    _saved.append((owner, attr, raw))
    setattr(owner, attr, new)


def _wrap(owner: Any, attr: str, make: Callable[[Callable[..., Any]], Callable[..., Any]],
          key: Any = None) -> None:
    """Patch ``owner.attr`` with ``make(original)``. The wrapper made for an original is kept
    (by ``key``) and reused at the next install: every compile opens sessions, and building
    ~30 wrappers each time was most of the guard's install cost."""
    raw = owner.__dict__[attr] if isinstance(owner, type) else getattr(owner, attr)
    cache_key = (owner, attr, key)
    cached = _WRAPPERS.get(cache_key)
    if cached is not None and cached[0] is raw:
        _patch(owner, attr, cached[1])
        return
    new = staticmethod(make(raw.__func__)) if isinstance(raw, staticmethod) else make(raw)
    _WRAPPERS[cache_key] = (raw, new)
    _patch(owner, attr, new)


_WRAPPERS: dict[tuple[Any, str, Any], tuple[Any, Any]] = {}


def _install(registry: Any) -> None:
    if registry is None:  # observe mode with a broken project registry: torch's own passes
        registry = _shipped_registry()
    _PATCH_ON_IMPORT.registry = registry
    for hook in hook_table(registry):
        patch = functools.partial(_wrap, make=lambda fn, hook=hook: guarded(fn, hook), key=hook)
        try:
            owner, attr = resolve(hook.target, imported_only=True)
        except NotImportedYet:
            _defer(hook.target, patch, hook)
            continue
        except (ImportError, AttributeError):
            # Only a hook the registry says this torch lacks gets here in a lite session: lite
            # sessions run check_hooks first (fail closed). Observe sessions only record.
            continue
        patch(owner, attr)
    from torch._inductor.pattern_matcher import PatternMatcherPass
    from torch.fx.passes.graph_transform_observer import GraphTransformObserver

    _wrap(GraphTransformObserver, "__enter__", _observer_enter)
    _wrap(GraphTransformObserver, "__exit__", _observer_exit)
    _wrap(PatternMatcherPass, "apply", _pattern_apply)
    for probe in effects.PROBES:
        patch = functools.partial(_wrap, make=probe.make, key=probe.target)
        try:
            owner, attr = resolve(probe.target, imported_only=True)
        except NotImportedYet:
            _defer(probe.target, patch, None)
            continue
        except (ImportError, AttributeError):
            continue  # a torch without this boundary: the checks on either side still run
        patch(owner, attr)
    if _DEFERRED:
        sys.meta_path.insert(0, _PATCH_ON_IMPORT)


# ---- lazy Inductor ------------------------------------------------------------------------------
# A compile without regions must not import Inductor modules aot_eager does not import (most hook
# targets live in torch._inductor.compile_fx and fx_passes, which only a region compile needs).
# Hooks in modules not imported yet are deferred: while a session is open, the import that
# brings such a module in patches its hooks as soon as the outermost of them has executed, so
# every name is bound exactly as if it had been imported before the session (compile_fx's
# ``from ...post_grad import post_grad_passes`` keeps the original; compile_fx's own attribute
# is the one wrapped). Nothing runs unguarded: a pass cannot run before its module is imported.

_DEFERRED: list[tuple[str, Callable[[Any, str], None], Hook | None]] = []
_DEFERRED_MODULES: set[str] = set()  # the modules of _DEFERRED's targets (kept in step with it)


def _defer(target: str, patch: Callable[[Any, str], None], hook: Hook | None) -> None:
    _DEFERRED.append((target, patch, hook))
    _DEFERRED_MODULES.add(target.split(":")[0])


class _PatchOnImport(importlib.abc.MetaPathFinder):
    registry: Any = None
    depth = 0

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        # Asked for every module imported while a session is open (hundreds in a first compile).
        if fullname not in _DEFERRED_MODULES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or not hasattr(spec.loader, "exec_module"):
            return None
        original = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            self.depth += 1
            try:
                original(module)
            finally:
                self.depth -= 1
            if self.depth == 0:
                _install_deferred(self.registry)

        spec.loader.exec_module = exec_module  # this module's own loader instance
        return spec


_PATCH_ON_IMPORT = _PatchOnImport()


def _install_deferred(registry: Any) -> None:
    """Patch every deferred hook whose module is imported now; a target the imported module
    lacks is the same LiteConfigError check_hooks gives (unless the registry says it is gone)."""
    with _LOCK:
        if not _saved:  # the sessions ended while the import ran
            return
        waiting = []
        for target, patch, hook in _DEFERRED:
            if target.split(":")[0] not in sys.modules:
                waiting.append((target, patch, hook))
                continue
            try:
                owner, attr = resolve(target)
            except (ImportError, AttributeError) as exc:
                if hook is not None and not _absent_from_this_torch(hook, registry):
                    raise _unresolved_error(hook, f"{type(exc).__name__}: {exc}") from None
                continue
            patch(owner, attr)
        _DEFERRED[:] = waiting
        _DEFERRED_MODULES.clear()
        _DEFERRED_MODULES.update(target.split(":")[0] for target, _, _ in waiting)


def _shipped_registry() -> Any:
    try:
        from lite_guard.registry import Registry

        return Registry.load(include_project=False)
    except Exception:  # observing must work even when nothing can be loaded
        return None


def _uninstall() -> None:
    if _PATCH_ON_IMPORT in sys.meta_path:
        sys.meta_path.remove(_PATCH_ON_IMPORT)
    _DEFERRED.clear()
    _DEFERRED_MODULES.clear()
    while _saved:
        owner, attr, raw = _saved.pop()
        setattr(owner, attr, raw)


def originals() -> dict[tuple[Any, str], Any]:
    """What torch had before the guard patched it (empty when not installed): for tests."""
    return {(owner, attr): raw for owner, attr, raw in _saved}
