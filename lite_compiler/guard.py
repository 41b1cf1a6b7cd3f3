"""The runtime guard: every pass Inductor runs during a lite compile is checked against the registry.

Interception points are patched in only while a guard session is active (the outermost session
installs them, the last one out restores torch untouched), so a plain default-mode compile never
meets the guard. Sessions are either "lite" (enforce: unregistered or lite-unsafe passes raise
``LitePassViolation``) or "observe" (default mode under ``lite_guard trace``: record only).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from lite_compiler.errors import LiteConfigError, LitePassViolation
from lite_compiler.ledger import Ledger, LedgerEntry


@dataclass
class Session:
    mode: str  # "lite" | "observe"
    registry: Any  # lite_guard.registry.Registry, or None in observe mode
    ledger: Ledger
    graph: str = "graph"
    in_region: bool = False


_SESSIONS: list[Session] = []


def current_session() -> Session | None:
    return _SESSIONS[-1] if _SESSIONS else None


@contextlib.contextmanager
def session(mode: str, registry: Any, ledger: Ledger, graph: str = "graph") -> Iterator[Session]:
    new = Session(mode=mode, registry=registry, ledger=ledger, graph=graph)
    if mode == "lite":
        check_hooks(registry)  # fail closed: a lite session never runs with a hook missing
    with _pushed(new):
        yield new


@contextlib.contextmanager
def scope(graph: str, in_region: bool) -> Iterator[Session | None]:
    """Same session, narrower scope: a named graph, inside or outside an annotated region."""
    outer = current_session()
    if outer is None:
        yield None
        return
    inner = Session(outer.mode, outer.registry, outer.ledger, graph=graph, in_region=in_region)
    with _pushed(inner):
        yield inner


@contextlib.contextmanager
def _pushed(new: Session) -> Iterator[None]:
    if not _SESSIONS:
        _install()
    _SESSIONS.append(new)
    try:
        yield
    finally:
        _SESSIONS.pop()
        if not _SESSIONS:
            _uninstall()


# ---- the decision ---------------------------------------------------------------------------

def check(name: str, stage: str, kind: str = "function") -> LedgerEntry | None:
    """Record a pass about to run; raise ``LitePassViolation`` if lite mode must refuse it."""
    sess = current_session()
    if sess is None:
        return None
    if sess.mode == "observe":
        entry = sess.registry.match_pass(name) if sess.registry is not None else None
        return sess.ledger.add(LedgerEntry(
            name=name, stage=entry.stage if entry else stage, graph=sess.graph, allowed=True,
            lite=entry.lite if entry else "unregistered", kind=kind, reason="observed (default mode)"))
    entry = sess.registry.match_pass(name)
    if entry is None:
        allowed, lite, reason = False, "unregistered", "no registry names this pass (fail closed)"
    elif entry.lite == "always":
        allowed, lite, reason = True, entry.lite, ""
    elif entry.lite == "region":
        allowed, lite = sess.in_region, entry.lite
        reason = "" if allowed else "registered lite = \"region\" but it ran outside an annotated region"
    else:
        allowed, lite, reason = False, entry.lite, f"registered lite = \"never\" ({entry.origin}:{entry.line})"
    record = sess.ledger.add(LedgerEntry(
        name=name, stage=entry.stage if entry else stage, graph=sess.graph, allowed=allowed,
        lite=lite, kind=kind, reason=reason))
    if not allowed:
        raise LitePassViolation(name, record.stage, sess.graph, reason, kind=kind,
                                suggestions=tuple(s for s in sess.registry.suggest(name) if s != name))
    return record


@contextlib.contextmanager
def timed(name: str, stage: str, kind: str = "function") -> Iterator[None]:
    record = check(name, stage, kind)
    start = time.perf_counter()
    try:
        yield
    finally:
        if record is not None:
            record.seconds += time.perf_counter() - start


def guarded(fn: Callable[..., Any], name: str, stage: str, kind: str = "function",
            when: Callable[[], bool] | None = None) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if current_session() is None or (when is not None and not when()):
            return fn(*args, **kwargs)
        with timed(name, stage, kind):
            return fn(*args, **kwargs)

    wrapper.__lite_guarded__ = True  # type: ignore[attr-defined]
    return wrapper


def custom_pass_name(custom_pass: Any) -> str:
    """How a user's custom pass is named in registries: its function or class name."""
    return getattr(custom_pass, "__name__", None) or type(custom_pass).__name__


# ---- interception points ---------------------------------------------------------------------

def _inductor_config() -> Any:
    import torch._inductor.config as config

    return config


def _when_config(key: str) -> Callable[[], bool]:
    def enabled() -> bool:  # dotted keys are nested config classes, e.g. "triton.x"
        return bool(functools.reduce(getattr, key.split("."), _inductor_config()))

    return enabled


@dataclass(frozen=True)
class Hook:
    """One interception point: ``module:Qual.name`` runs as pass ``name`` in ``stage``."""

    target: str
    name: str
    stage: str
    kind: str = "function"
    when: Callable[[], bool] | None = field(default=None, compare=False)


# The function-level passes: whole pass pipelines, scheduler reorders, DCE, fusion, buffer
# reuse, layout and padding decisions. Observer and pattern passes are caught generically.
HOOKS: tuple[Hook, ...] = (
    Hook("torch._inductor.compile_fx:pre_grad_passes", "pre_grad_passes", "pre_grad"),
    Hook("torch._inductor.compile_fx:joint_graph_passes", "joint_graph_passes", "joint_graph"),
    Hook("torch._inductor.compile_fx:post_grad_passes", "post_grad_passes", "post_grad"),
    Hook("torch._inductor.compile_fx:view_to_reshape", "view_to_reshape", "post_grad"),
    Hook("torch._inductor.memory:reorder_for_peak_memory", "reorder_for_peak_memory", "scheduler", "scheduler"),
    Hook("torch._inductor.comms:reorder_compute_and_comm_for_overlap",
         "reorder_compute_and_comm_for_overlap", "scheduler", "scheduler"),
    # torch 2.14 adds a comm/compute overlap reorder, on by default (registry: torch >= 2.14).
    Hook("torch._inductor.comms:simple_overlap", "simple_overlap", "scheduler", "scheduler",
         _when_config("aten_distributed_optimizations.enable_simple_overlap")),
    Hook("torch._inductor.scheduler:Scheduler.maybe_reorder_for_minimizing_partition",
         "maybe_reorder_for_minimizing_partition", "scheduler", "scheduler"),
    Hook("torch._inductor.scheduler:Scheduler.reorder_for_partition_with_simple_dependency",
         "reorder_for_partition_with_simple_dependency", "scheduler", "scheduler"),
    Hook("torch._inductor.scheduler:Scheduler.dead_node_elimination", "dead_node_elimination",
         "scheduler", "scheduler", _when_config("use_dce")),
    Hook("torch._inductor.scheduler:Scheduler.fuse_nodes", "fuse_nodes", "scheduler", "scheduler"),
    Hook("torch._inductor.scheduler:Scheduler.create_combo_kernel_nodes", "create_combo_kernel_nodes",
         "scheduler", "scheduler"),
    # Buffer reuse and memory planning are wrapper-codegen decisions, named after their classes.
    Hook("torch._inductor.codegen.wrapper:PythonWrapperCodegen.memory_plan_reuse", "ReuseLine",
         "codegen", "class", _when_config("allow_buffer_reuse")),
    Hook("torch._inductor.codegen.wrapper:PythonWrapperCodegen.memory_plan", "MemoryPlanner",
         "codegen", "class"),
    Hook("torch._inductor.graph:GraphLowering.decide_layout_opt", "decide_layout_opt", "lowering",
         when=_when_config("layout_optimization")),
    # Inductor also calls _pad_strides as a probe (ir.py require_strides: "does this buffer
    # already have padded strides?") whatever the config says; only with comprehensive_padding
    # on does it pad a buffer (Layout.should_pad_strides), so that is when the pass runs.
    Hook("torch._inductor.ir:Layout._pad_strides", "pad_strides", "lowering",
         when=_when_config("comprehensive_padding")),
)

_saved: list[tuple[Any, str, Any]] = []


def _resolve(target: str) -> tuple[Any, str]:
    """(owner, attribute) of a hook target; raises ImportError / AttributeError if torch lacks it.

    A method must be defined on the class itself: patching one it inherits would shadow the
    base class's and restore it onto the wrong class."""
    module_name, qual = target.split(":")
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

    entry = registry.match_pass(hook.name) if registry is not None else None
    return entry is not None and not entry.exists_in(torch.__version__)


def unresolved_hooks(registry: Any) -> list[tuple[Hook, str]]:
    """(hook, why) for every hook whose target the installed torch lacks, except the hooks whose
    registry entry says the pass does not exist in this torch release."""
    missing = []
    for hook in HOOKS:
        try:
            _resolve(hook.target)
        except (ImportError, AttributeError) as exc:
            if not _absent_from_this_torch(hook, registry):
                missing.append((hook, f"{type(exc).__name__}: {exc}"))
    return missing


def check_hooks(registry: Any) -> None:
    """Fail closed: a hook the installed torch does not have is one clear ``LiteConfigError``,
    never a pass that silently runs unguarded."""
    import torch

    missing = unresolved_hooks(registry)
    if missing:
        hook, why = missing[0]
        raise LiteConfigError(
            f"lite_compiler cannot guard pass '{hook.name}': its hook {hook.target} does not resolve"
            f" on torch {torch.__version__} ({why}); install a supported torch (2.11-2.14) or"
            " upgrade lite-guard, or, if the pass is gone from this torch, give its registry entry"
            " a torch = \"...\" range that excludes this release")


def _patch(owner: Any, attr: str, new: Any) -> None:
    raw = owner.__dict__[attr] if isinstance(owner, type) else getattr(owner, attr)
    _saved.append((owner, attr, raw))
    setattr(owner, attr, new)


def _install() -> None:
    for hook in HOOKS:
        try:
            owner, attr = _resolve(hook.target)
        except (ImportError, AttributeError):
            # Only a hook the registry says this torch lacks gets here in a lite session: lite
            # sessions run check_hooks first (fail closed). Observe sessions only record.
            continue
        raw = owner.__dict__[attr] if isinstance(owner, type) else getattr(owner, attr)
        if isinstance(raw, staticmethod):
            new: Any = staticmethod(guarded(raw.__func__, hook.name, hook.stage, hook.kind, hook.when))
        else:
            new = guarded(raw, hook.name, hook.stage, hook.kind, hook.when)
        _patch(owner, attr, new)
    _install_observer_hook()
    _install_pattern_hook()


def _install_observer_hook() -> None:
    from torch.fx.passes.graph_transform_observer import GraphTransformObserver

    original_enter = GraphTransformObserver.__enter__
    original_exit = GraphTransformObserver.__exit__

    def __enter__(self: Any) -> Any:
        record = check(self.passname, _observer_stage(self), "observer")
        self._lite_record, self._lite_start = record, time.perf_counter()
        return original_enter(self)

    def __exit__(self: Any, *exc: Any) -> Any:
        record = getattr(self, "_lite_record", None)
        if record is not None:
            record.seconds += time.perf_counter() - self._lite_start
        return original_exit(self, *exc)

    _patch(GraphTransformObserver, "__enter__", __enter__)
    _patch(GraphTransformObserver, "__exit__", __exit__)


def _observer_stage(observer: Any) -> str:
    subsystem = getattr(observer, "subsystem", None) or ""
    for stage in ("pre_grad", "joint_graph", "post_grad"):
        if stage in subsystem:
            return stage
    return "lowering"


def _install_pattern_hook() -> None:
    from torch._inductor.pattern_matcher import PatternMatcherPass

    original_apply = PatternMatcherPass.apply

    @functools.wraps(original_apply)
    def apply(self: Any, gm: Any) -> int:
        if current_session() is None:
            return original_apply(self, gm)
        with timed(self.pass_name or "unnamed_pattern_matcher_pass", "post_grad", "pattern"):
            return original_apply(self, gm)

    _patch(PatternMatcherPass, "apply", apply)


def _uninstall() -> None:
    while _saved:
        owner, attr, raw = _saved.pop()
        setattr(owner, attr, raw)


# ---- user custom passes ------------------------------------------------------------------------

CUSTOM_HOOK_STAGES = {
    "pre_grad_custom_pass": "pre_grad",
    "joint_custom_pre_pass": "joint_graph",
    "joint_custom_post_pass": "joint_graph",
    "post_grad_custom_pre_pass": "post_grad",
    "post_grad_custom_post_pass": "post_grad",
    "_pre_fusion_custom_pass": "scheduler",
    "_post_fusion_custom_pass": "scheduler",
}


def expand_custom_passes(value: Any) -> tuple[Any, ...]:
    """The passes one custom-pass config value holds: torch accepts a pass or a list of passes."""
    try:
        from torch._inductor.custom_graph_pass import get_custom_graph_passes
    except ImportError:  # a torch without list support: the same rule, written out
        get_custom_graph_passes = None
    if get_custom_graph_passes is not None:
        passes = tuple(get_custom_graph_passes(value))
    elif value is None:
        passes = ()
    else:
        passes = tuple(value) if isinstance(value, (list, tuple)) else (value,)
    return tuple(p for p in passes if p is not None)


def configured_custom_passes() -> list[tuple[str, Any]]:
    """(config key, pass) for every user custom pass currently wired into Inductor config; a
    list of passes under one key is one (key, pass) per pass, in order."""
    config = _inductor_config()
    return [(key, p) for key in CUSTOM_HOOK_STAGES
            for p in expand_custom_passes(getattr(config, key, None))]


def custom_pass_entry(registry: Any, custom_pass: Any) -> Any:
    """The registry entry of a user custom pass (exact name, then wildcard entries)."""
    return registry.match_pass(custom_pass_name(custom_pass))


def run_custom_pass(key: str, custom_pass: Any, graph_target: Any) -> None:
    """Check a user custom pass against the registry and, if allowed, run it on ``graph_target``."""
    with timed(custom_pass_name(custom_pass), CUSTOM_HOOK_STAGES[key], "custom_hook"):
        custom_pass(graph_target)


def guard_scheduler_custom_pass(key: str, custom_pass: Any) -> Any:
    """Wrap a scheduler-level custom pass so the guard sees it when Inductor calls it."""
    @functools.wraps(custom_pass)
    def wrapper(nodes: Any) -> Any:
        with timed(custom_pass_name(custom_pass), CUSTOM_HOOK_STAGES[key], "custom_hook"):
            return custom_pass(nodes)

    return wrapper
