"""Opening a guard session: the interception points go into torch while any thread has one.

The outermost session of the process patches the registry's hooks and the effect probes in
(lite_compiler.hooks); the last one to close restores torch untouched, so a plain default-mode
compile never meets the guard. Sessions themselves and the decision live in lite_compiler.guard.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from lite_compiler import guard, hooks, provenance
from lite_compiler.effects import EffectState
from lite_compiler.gc_deferral import full_collections_deferred
from lite_compiler.guard import Session
from lite_compiler.ledger import Ledger


@contextlib.contextmanager
def session(mode: str, registry: Any, ledger: Ledger, graph: str = "graph",
            effects: EffectState | None = None) -> Iterator[Session]:
    """A guard session. ``effects``: the compile's EffectState (one per compile, shared by its
    sessions); a new one by default."""
    outer = guard.current_session()
    if mode == "lite" and not (outer is not None and outer.mode == "lite" and outer.registry is registry):
        # Fail closed: a lite session never runs with a hook missing. A session nested in a lite
        # session of the same registry was checked there (a hook module imported since is
        # checked as it is imported: lite_compiler.hooks._PatchOnImport).
        hooks.check_hooks(registry)
        # ...and never with the guard's own deciding code replaced (lite_compiler.provenance).
        provenance.check_own_code(graph, registry, ledger)
    new = Session(mode=mode, registry=registry, ledger=ledger, graph=graph,
                  effects=effects if effects is not None else EffectState())
    with _pushed(new):
        yield new


@contextlib.contextmanager
def scope(graph: str, in_region: bool) -> Iterator[Session | None]:
    """Same session, narrower scope: a named graph, inside or outside an annotated region."""
    outer = guard.current_session()
    if outer is None:
        yield None
        return
    inner = Session(outer.mode, outer.registry, outer.ledger, graph=graph, in_region=in_region,
                    effects=outer.effects)
    with _pushed(inner):
        yield inner


@contextlib.contextmanager
def _pushed(new: Session) -> Iterator[None]:
    outermost = guard.current_session() is None
    # The thread's outermost session is a compile (or a stage of it) running: full garbage
    # collections wait meanwhile (lite_compiler.gc_deferral says why).
    with full_collections_deferred() if outermost else contextlib.nullcontext():
        if outermost:
            hooks.acquire(new.registry)
        guard.push(new)
        try:
            yield
        finally:
            if guard.pop():
                hooks.release()
