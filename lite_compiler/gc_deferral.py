"""Full garbage collections wait while lite mode imports torch's compiler stack or compiles.

The windows: a lite ``torch.compile(...)`` call (it imports our backend and, unless a model
library already did, torch._dynamo; ``import lite_compiler`` itself imports neither) and every
thread's outermost guard session (lite_compiler.session: Dynamo's graph handed over, AOTAutograd's trace and
partition, the forward and backward compiles, the guard's first hook install and its imports).

Why: a first ``torch.compile`` grows the process from ~100k to ~380k objects the cyclic
collector tracks (torch._dynamo, functorch, the pattern matcher: module dicts, functions,
classes), and CPython runs a *full* collection each time the long-lived objects grow by a
quarter: five or six traversals of the whole heap, ~0.5 s of a CPU first call, that find next
to nothing (imports and a compile's graphs are long-lived or freed by reference counting).
Inside these windows only full collections wait; the young generations are collected as usual,
so short-lived cycles are still freed. When the last window closes the thresholds are put back
and the next young collection does the full one that waited, once.

Nothing numeric or guard-related depends on this; it is bookkeeping of the interpreter.
``LITE_GUARD_DEFER_GC=0`` switches it off. CPython 3.11-3.13 honour the old generation's
threshold; where an interpreter ignores it (an incremental collector), this changes nothing.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

from lite_guard.env_switch import switch

_LOCK = threading.Lock()
_depth = 0  # open windows, all threads together
_saved: tuple[int, ...] | None = None  # the thresholds to put back; None: we changed nothing
_DEFERRED = 1 << 30  # the old generation's threshold while deferred: never reached in a window


def _enabled() -> bool:
    return switch("LITE_GUARD_DEFER_GC", True)


@contextlib.contextmanager
def full_collections_deferred() -> Iterator[None]:
    """Within this block (nested or in several threads: the outermost one decides) the old
    generation is not collected; afterwards the collector's thresholds are what they were."""
    global _depth, _saved
    with _LOCK:
        _depth += 1
        if _depth == 1 and _enabled():
            thresholds = gc.get_threshold()
            if len(thresholds) == 3 and thresholds[2] != _DEFERRED:
                _saved = thresholds
                gc.set_threshold(thresholds[0], thresholds[1], _DEFERRED)
    try:
        yield
    finally:
        with _LOCK:
            _depth -= 1
            if _depth == 0 and _saved is not None:
                # Put back only what we set: a threshold the user changed meanwhile is theirs.
                current = gc.get_threshold()
                if len(current) == 3 and current[2] == _DEFERRED:
                    gc.set_threshold(current[0], current[1], _saved[2])
                _saved = None


def deferring() -> bool:
    """Whether full collections are waiting right now (for tests and the benchmark)."""
    return _saved is not None
