"""The runtime guard's core: guard sessions and the allow/refuse decision for one pass.

A session is "lite" (enforce: unregistered or lite-unsafe passes raise ``LitePassViolation``) or
"observe" (default mode under ``lite_guard trace``: record only). Sessions stack per thread; the
interception points (lite_compiler.hooks, built from the registry) are patched into torch while
any thread has a session and restored when the last one ends, so a plain default-mode compile
never meets the guard. What the guard checks by effect lives in lite_compiler.effects.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from lite_compiler.errors import LitePassViolation
from lite_compiler.ledger import Ledger, LedgerEntry


@dataclass
class Session:
    mode: str  # "lite" | "observe"
    registry: Any  # lite_guard.registry.Registry, or None in observe mode with a broken registry
    ledger: Ledger
    graph: str = "graph"
    in_region: bool = False
    # Graph fingerprints the effect check expects next (lite_compiler.effects), shared by every
    # scope of one compile.
    effects: Any = field(default=None)


_LOCAL = threading.local()


def _stack() -> list[Session]:
    if not hasattr(_LOCAL, "sessions"):
        _LOCAL.sessions = []
    return _LOCAL.sessions


def current_session() -> Session | None:
    """This thread's innermost guard session (another thread's compile is not ours to judge)."""
    stack = _stack()
    return stack[-1] if stack else None


@contextlib.contextmanager
def session(mode: str, registry: Any, ledger: Ledger, graph: str = "graph",
            effects: Any = None) -> Iterator[Session]:
    """``effects``: the compile's lite_compiler.effects.EffectState (one per compile, shared by
    its sessions); a new one by default."""
    from lite_compiler import hooks
    from lite_compiler.effects import EffectState

    if mode == "lite":
        hooks.check_hooks(registry)  # fail closed: a lite session never runs with a hook missing
    effects = effects if effects is not None else EffectState()
    new = Session(mode=mode, registry=registry, ledger=ledger, graph=graph, effects=effects)
    with _pushed(new):
        yield new


@contextlib.contextmanager
def scope(graph: str, in_region: bool) -> Iterator[Session | None]:
    """Same session, narrower scope: a named graph, inside or outside an annotated region."""
    outer = current_session()
    if outer is None:
        yield None
        return
    inner = Session(outer.mode, outer.registry, outer.ledger, graph=graph, in_region=in_region,
                    effects=outer.effects)
    with _pushed(inner):
        yield inner


@contextlib.contextmanager
def _pushed(new: Session) -> Iterator[None]:
    from lite_compiler import hooks

    stack = _stack()
    if not stack:
        hooks.acquire(new.registry)
    stack.append(new)
    try:
        yield
    finally:
        stack.pop()
        if not stack:
            hooks.release()


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


def refuse_effect(stage: str, what: str, graph: str | None = None) -> None:
    """A change no registered pass explains: one ledger row, then ``LitePassViolation``."""
    sess = current_session()
    graph = graph or (sess.graph if sess is not None else "graph")
    if sess is not None:
        sess.ledger.add(LedgerEntry(name="<unregistered change>", stage=stage, graph=graph,
                                    allowed=False, lite="unregistered", kind="effect", reason=what))
    raise LitePassViolation("<unregistered change>", stage, graph, what, kind="effect")


@contextlib.contextmanager
def timed(name: str, stage: str, kind: str = "function") -> Iterator[LedgerEntry | None]:
    record = check(name, stage, kind)
    start = time.perf_counter()
    try:
        yield record
    finally:
        if record is not None:
            record.seconds += time.perf_counter() - start


def enforcing() -> bool:
    """Whether this thread is inside a lite (enforcing) session: effect checks run only there."""
    sess = current_session()
    return sess is not None and sess.mode == "lite"
