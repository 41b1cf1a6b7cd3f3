"""User custom passes: the config attributes that hold them, their identity, and running them.

The attributes come from the registry's ``kind = "custom_hook"`` entries (``hook =
"torch._inductor.config:post_grad_custom_post_pass"``, ``"torch._functorch.config:joint_custom_pass"``,
...), never from a list kept here. A user pass is identified as the lint names it: its qualified
name ``module:QualName`` (an instance by its class), so ``def fx_graph_cse(graph)`` in a user
module can never borrow the permission of torch's own ``fx_graph_cse``.
"""

from __future__ import annotations

import functools
import importlib
import sys
import types
from collections.abc import Callable
from typing import Any, NamedTuple

from lite_compiler import effects, guard, provenance


class CustomHook(NamedTuple):
    """A config attribute that holds user passes: ``module`` (config module) . ``key``."""

    name: str  # the registry entry's name (the config key)
    module: str  # "torch._inductor.config" | "torch._functorch.config"
    key: str
    stage: str

    @property
    def config(self) -> Any:
        return importlib.import_module(self.module)


def custom_hooks(registry: Any) -> tuple[CustomHook, ...]:
    """The registry's custom hooks (asked several times a compile: kept per registry object)."""
    held = _HOOKS.get(id(registry))
    if held is not None and held[0] is registry:
        return held[1]
    hooks = []
    for entry in registry.custom_hooks():
        module, _, key = entry.hook.partition(":")
        hooks.append(CustomHook(entry.name, module, key, entry.stage))
    if len(_HOOKS) > 8:
        _HOOKS.clear()
    _HOOKS[id(registry)] = (registry, tuple(hooks))
    return _HOOKS[id(registry)][1]


_HOOKS: dict[int, tuple[Any, tuple[CustomHook, ...]]] = {}


def custom_hook(registry: Any, key: str) -> CustomHook | None:
    return next((h for h in custom_hooks(registry) if h.key == key), None)


def pass_identity(custom_pass: Any) -> str:
    """The registry identity of a user pass: torch's own name for a pass defined in torch, else
    ``module:QualName`` of the function (or of the class, for an instance)."""
    from lite_guard.identity import pass_identity as identity

    foreign = provenance.foreign_identity(custom_pass)
    if foreign is not None:  # code from outside torch is named by its code, whatever
        return foreign       # __module__ / __qualname__ claim (a spoofed torch name)
    while isinstance(custom_pass, functools.partial):  # the pass is the function it wraps
        custom_pass = custom_pass.func                  # (the lint names it so too)
    obj = custom_pass if callable(custom_pass) and hasattr(custom_pass, "__qualname__") \
        else type(custom_pass)
    module = getattr(obj, "__module__", None) or "<unknown>"
    return identity(module, obj.__qualname__)


def applied_identity(obj: Any, name: str | None, defining_module: str) -> str:
    """The identity of an observer or pattern pass at run time, the one the lint suggests:
    torch's own name when torch code applies it; else qualified by the module of the code that
    applies it, ``module:name``, so a third-party pass named like a torch pass cannot borrow its
    permission. An unnamed one is named by what holds it there, as the lint names it by the
    variable it is assigned to: ``module:Class.attr`` (``self.attr``), ``module:global`` (a
    module-level name or container), ``module:function.local``; inside torch the registry's
    spellings (``patterns``, ``joint_graph.patterns``)."""
    from lite_guard.identity import is_torch_module, qualified_name

    frame = sys._getframe(1)
    while frame is not None and _is_plumbing(frame.f_globals.get("__name__", ""), defining_module):
        frame = frame.f_back
    if frame is None:
        return name or _UNNAMED
    module = frame.f_globals.get("__name__", "")
    # Torch's code by where it was compiled, not by the module name it runs under.
    torch = is_torch_module(module) and provenance.compiled_in_torch(frame.f_code)
    if name:
        return name if torch else qualified_name(module, name)
    holder, module = _holder(obj, frame)
    torch = is_torch_module(module)
    if not torch:
        return qualified_name(module, holder)
    if holder == "<unnamed>":
        return _UNNAMED
    # Torch's unnamed pattern passes are registered by variable, with or without the module's
    # last name (lint_rules' LG001 accepts the same spellings and suggests the same default).
    stem = module.rsplit(".", 1)[-1]
    spellings = (holder, f"{stem}.{holder}")
    session = guard.current_session()
    registry = session.registry if session is not None else None
    for spelling in spellings:
        if registry is not None and registry.match_pass(spelling) is not None:
            return spelling
    return spellings[1] if "." in holder else holder


_UNNAMED = "unnamed_pattern_matcher_pass"


def _is_plumbing(module: str, defining_module: str) -> bool:
    """Frames that only forward the call: the class's own module and the guard's wrappers."""
    return module == defining_module or module.startswith("lite_compiler.")


def _holds(value: Any, obj: Any) -> bool:
    if value is obj or getattr(value, "__self__", None) is obj:  # the pass, or its bound apply
        return True
    if isinstance(value, (list, tuple)):
        return any(v is obj for v in value)
    return isinstance(value, dict) and any(v is obj for v in value.values())


def _holder(obj: Any, frame: Any) -> tuple[str, str]:
    """(where the applying code keeps an unnamed pass, that code's module): an attribute of
    ``self`` (named by the class whose method applies it), a module-level name or container, else
    a local. A frame that only got the pass handed in (torch's ``apply_graph_pass(p.apply)``)
    does not hold it by a name of its own: its caller is asked, a few frames up at most."""
    applying = frame.f_globals.get("__name__", "")
    for _ in range(4):
        if frame is None:
            break
        code = frame.f_code
        qualname = getattr(code, "co_qualname", code.co_name)
        module = frame.f_globals.get("__name__", "")
        owner = frame.f_locals.get("self")
        if owner is not None and owner is not obj and "." in qualname:
            for attr, value in getattr(owner, "__dict__", {}).items():
                if _holds(value, obj):
                    return f"{qualname.rsplit('.', 1)[0]}.{attr}", module
            for klass in type(owner).__mro__:  # a class attribute: named by the class defining it
                for attr, value in vars(klass).items():
                    if _holds(value, obj):
                        return f"{klass.__qualname__}.{attr}", module
        for name, value in frame.f_globals.items():
            if _holds(value, obj) and not name.startswith("__"):
                return name, module
        for local, value in frame.f_locals.items():
            if local != "self" and value is obj:  # a parameter it was handed is not its name
                return (f"{qualname}.{local}" if qualname != "<module>" else local), module
        frame = frame.f_back
    return "<unnamed>", applying


def expand(value: Any) -> tuple[Any, ...]:
    """The passes one custom-pass config value holds: torch accepts a pass or a list of passes."""
    if value is None:
        return ()
    passes = tuple(value) if isinstance(value, (list, tuple)) else (value,)
    return tuple(p for p in passes if p is not None)


def configured(registry: Any, stages: tuple[str, ...] | None = None,
               keys: tuple[str, ...] | None = None) -> list[tuple[CustomHook, Any]]:
    """(hook, pass) for every user pass currently set on a custom-hook config attribute."""
    found = []
    for hook in custom_hooks(registry):
        if (stages is not None and hook.stage not in stages) or (keys is not None and hook.key not in keys):
            continue
        found += [(hook, p) for p in expand(getattr(hook.config, hook.key, None))]
    return found


def entry_of(registry: Any, custom_pass: Any) -> Any:
    return registry.match_pass(pass_identity(custom_pass))


def run(hook: CustomHook, custom_pass: Any, target: Any, *args: Any, **kwargs: Any) -> Any:
    """Check a user pass against the registry and, if allowed, run it on ``target`` (its change
    to the graph is recorded as the pass's effect)."""
    kind, cls, call, code = _call_parts(custom_pass)
    name = pass_identity(custom_pass)
    with guard.timed(name, hook.stage, "custom_hook") as record, \
            effects.registered_pass(name, hook.stage, (target,), record) as returned:
        # The code judged is the code called: a profile or trace function, a GC or signal
        # callback run by the checks above could swap the object's class, its class's __call__
        # or a function's __code__ in between. Compared inline, attribute reads only (a call
        # here would give such a callback another chance after the comparison).
        if kind == "function":
            same = custom_pass.__code__ is code
        elif kind == "method":
            same = custom_pass.__func__.__code__ is code
        elif kind == "partial":
            same = code is None or custom_pass.func.__code__ is code
        elif kind == "class":
            same = custom_pass.__class__ is cls
        else:
            same = custom_pass.__class__ is cls and cls.__call__ is call and call.__code__ is code
        if not same:
            _replaced(name, custom_pass, hook.stage)
        result = custom_pass(target, *args, **kwargs)
        returned(result)
        return result


def _call_parts(custom_pass: Any) -> tuple[str, Any, Any, Any]:
    """(kind, class, __call__, code object) of what a call of ``custom_pass`` runs, read before it
    is judged (run compares them again right before the call)."""
    if isinstance(custom_pass, types.FunctionType):
        return "function", None, None, custom_pass.__code__
    if isinstance(custom_pass, types.MethodType):
        return "method", None, None, getattr(custom_pass.__func__, "__code__", None)
    if isinstance(custom_pass, functools.partial):
        return "partial", None, None, getattr(custom_pass.func, "__code__", None)
    cls = custom_pass.__class__
    call = getattr(cls, "__call__", None)
    if not isinstance(call, types.FunctionType):  # a classmethod binds anew at each read: the
        return "class", cls, None, None            # class is compared (what it runs, by identity)
    return "object", cls, call, call.__code__


def _replaced(name: str, custom_pass: Any, stage: str) -> None:
    """The pass changed between its check and its call: it runs as what it is now, and even
    then not (a swap after a check is no way to install a pass)."""
    now = pass_identity(custom_pass)
    guard.check(now, stage, "custom_hook", where=f"it replaced '{name}' after the guard judged it")
    guard.refuse_effect(stage, f"custom pass '{name}' became '{now}' between the guard's check"
                        " and its call")


def guarded_value(hook: CustomHook, value: Any) -> Any:
    """The config value with each pass it holds wrapped so the guard sees it when torch itself
    calls it (functorch's joint_custom_pass, the scheduler's fusion passes). Keeps its shape."""
    def wrap(custom_pass: Any) -> Callable[..., Any]:
        @functools.wraps(custom_pass)
        def guarded_pass(target: Any, *args: Any, **kwargs: Any) -> Any:
            return run(hook, custom_pass, target, *args, **kwargs)

        guarded_pass.__lite_guarded__ = True  # type: ignore[attr-defined]
        return guarded_pass

    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return type(value)(wrap(p) for p in value)
    return wrap(value)


def refuse_disallowed(registry: Any) -> None:
    """Before anything compiles: every configured user pass that lite mode would refuse wherever
    it ran (unregistered or lite = "never") is refused now, with its ledger row, whichever hook
    holds it, including hooks the lite compiler never calls (custom_partitioner_fn); and so is
    foreign code held by any other config key lite mode leaves as the user set it."""
    for hook, custom_pass in configured(registry):
        entry = entry_of(registry, custom_pass)
        if entry is None or entry.lite == "never":
            guard.check(pass_identity(custom_pass), hook.stage, "custom_hook")
    refuse_foreign_config_code(registry)


# Where the config's user code would run: Inductor's in regions, functorch's in AOTAutograd.
_CONFIG_STAGES = {"torch._inductor.config": "lowering", "torch._functorch.config": "aot"}


def refuse_foreign_config_code(registry: Any) -> None:
    """By value, not by key: any Inductor/functorch config key that lite mode does not force
    (lite_compiler.config.derive_configs) and that is not a custom hook, set to something holding
    code from outside torch (``inductor_choices_class = MyChoices``, a runtime estimator, a
    bucket-size callback), is that code running in lite mode: registered by its identity, or
    refused. Only keys away from their default are read (~0.2 ms a compile)."""
    for module_name, stage in _CONFIG_STAGES.items():
        config = sys.modules.get(module_name)
        if config is None:
            continue  # never imported: nobody set it
        is_default = getattr(config, "_is_default", None)
        for key in _unforced_keys(registry, module_name, config):
            try:
                if is_default is not None and is_default(key):
                    continue
                value = functools.reduce(getattr, key.split("."), config)
            except (AttributeError, KeyError):
                continue
            for code in provenance.code_in(value):
                # Inductor's config is read only by region compiles: lite = "region" allows it.
                provenance.check_code(code, stage, (
                    f"it is set as {module_name}.{key}, which lite mode neither forces nor calls"
                    " as a custom pass; register it under this name, or leave the key at its"
                    " default for lite compiles"), in_region=stage == "lowering")


def _unforced_keys(registry: Any, module_name: str, config: Any) -> tuple[str, ...]:
    """The keys of one config module that the lite config leaves alone, minus custom hooks
    (checked pass by pass above); kept per registry object."""
    held = _UNFORCED.get((id(registry), module_name))
    if held is not None and held[0] is registry:
        return held[1]
    from lite_compiler.config import derive_configs

    inductor, functorch = derive_configs(registry)
    forced = inductor if "inductor" in module_name else functorch
    hooked = {h.key for h in custom_hooks(registry) if h.module == module_name}
    keys = tuple(k for k in getattr(config, "_config", {}) if k not in forced and k not in hooked)
    if len(_UNFORCED) > 16:
        _UNFORCED.clear()
    _UNFORCED[(id(registry), module_name)] = (registry, keys)
    return keys


_UNFORCED: dict[tuple[int, str], tuple[Any, tuple[str, ...]]] = {}
