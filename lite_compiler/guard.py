"""The runtime guard's core: the per-thread session stack and the allow/refuse decision.

A session is "lite" (enforce: unregistered or lite-unsafe passes raise ``LitePassViolation``) or
"observe" (default mode under ``lite_guard trace``: record only). Sessions stack per thread, so
two threads compiling at once never judge or record each other's passes. Opening a session
(which patches the interception points into torch) is lite_compiler.session's job; what the guard
checks by effect lives in lite_compiler.effects; where it intercepts, in lite_compiler.hooks.
"""

from __future__ import annotations

import contextlib
import fnmatch
import threading
import time
from collections.abc import Iterator
from typing import Any

from lite_compiler.errors import LitePassViolation
from lite_compiler.ledger import Ledger, LedgerEntry


class Session:
    # A plain class: a dataclass costs ~0.7 ms of every process's import (its methods are
    # generated from source text), and sessions need none of its methods.
    __slots__ = ("mode", "registry", "ledger", "graph", "in_region", "effects")

    def __init__(self, mode: str, registry: Any, ledger: Ledger, graph: str = "graph",
                 in_region: bool = False, effects: Any = None):
        self.mode = mode  # "lite" | "observe"
        # lite_guard.registry.Registry, or None in observe mode with a broken registry
        self.registry = registry
        self.ledger = ledger
        self.graph = graph
        self.in_region = in_region
        # Graph fingerprints the effect check expects next (lite_compiler.effects), shared by
        # every scope of one compile.
        self.effects = effects


_LOCAL = threading.local()


def _stack() -> list[Session]:
    if not hasattr(_LOCAL, "sessions"):
        _LOCAL.sessions = []
    return _LOCAL.sessions


def current_session() -> Session | None:
    """This thread's innermost guard session (another thread's compile is not ours to judge)."""
    stack = _stack()
    return stack[-1] if stack else None


def push(new: Session) -> bool:
    """Put ``new`` on this thread's stack; True if it is the thread's first (outermost) one."""
    stack = _stack()
    stack.append(new)
    if len(stack) == 1:
        _LOCAL.started = time.time()  # files written since belong to this compile (kernel_libraries)
        return True
    return False


def started() -> float:
    """When this thread's outermost session opened (0.0 if none has)."""
    return getattr(_LOCAL, "started", 0.0) if _stack() else 0.0


def pop() -> bool:
    """Take this thread's innermost session off; True if the thread has none left."""
    stack = _stack()
    stack.pop()
    return not stack


# ---- the decision ---------------------------------------------------------------------------

def check(name: str, stage: str, kind: str = "function", where: str = "") -> LedgerEntry | None:
    """Record a pass about to run; raise ``LitePassViolation`` if lite mode must refuse it.
    ``where``: how the code got there, for people (foreign code standing in torch's place:
    lite_compiler.provenance); appended to a refusal's reason."""
    sess = current_session()
    if sess is None:
        return None
    if sess.mode == "observe":
        entry = sess.registry.match_pass(name) if sess.registry is not None else None
        return sess.ledger.add(LedgerEntry(
            name=name, stage=entry.stage if entry else stage, graph=sess.graph, allowed=True,
            lite=entry.lite if entry else "unregistered", kind=kind, reason="observed (default mode)"))
    entry, out_of_range = _match_in_range(sess.registry, name)
    if entry is None:
        allowed, lite, reason = False, "unregistered", "no registry names this pass (fail closed)"
        if out_of_range is not None:
            reason = (f"the registry names it only for torch {out_of_range.torch}"
                      f" ({out_of_range.origin}:{out_of_range.line}), not this torch (fail closed)")
    elif entry.lite == "always":
        allowed, lite, reason = True, entry.lite, ""
    elif entry.lite == "region":
        allowed, lite = sess.in_region, entry.lite
        reason = "" if allowed else "registered lite = \"region\" but it ran outside an annotated region"
    else:
        allowed, lite, reason = False, entry.lite, f"registered lite = \"never\" ({entry.origin}:{entry.line})"
    if where and not allowed:
        reason = f"{reason}; {where}"
    record = sess.ledger.add(LedgerEntry(
        name=name, stage=entry.stage if entry else stage, graph=sess.graph, allowed=allowed,
        lite=lite, kind=kind, reason=reason))
    if not allowed:
        raise LitePassViolation(name, record.stage, sess.graph, reason, kind=kind,
                                suggestions=tuple(s for s in sess.registry.suggest(name) if s != name))
    return record


def _match_in_range(registry: Any, name: str) -> tuple[Any, Any]:
    """(the entry for ``name`` that exists in the installed torch, or None; an entry that matched
    but whose ``torch`` range excludes this release): an entry for other torch releases grants
    nothing here, as the lint reads it (lint_rules.versions)."""
    entry = registry.match_pass(name)
    if entry is None or not entry.torch:
        return entry, None
    import sys

    version = sys.modules["torch"].__version__
    if entry.exists_in(version):
        return entry, None
    for pattern, other in registry._wildcards().items():  # a wildcard in range still counts
        if other is not entry and other.exists_in(version) and fnmatch.fnmatchcase(name, pattern):
            return other, None
    return None, entry


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
