"""The ledger: one row per pass the guard saw during one compile."""

from __future__ import annotations

import json
import threading
from typing import Any


class _Record:
    """Equal and shown by its fields' values. Plain classes, not dataclasses: a dataclass's
    methods are generated from source text and compiled at import, ~0.7 ms a class of every
    ``import lite_compiler``."""

    __slots__ = ()
    FIELDS: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.FIELDS}

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.FIELDS)

    __hash__ = None  # type: ignore[assignment]  (mutable)

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.FIELDS)
        return f"{type(self).__name__}({shown})"


class LedgerEntry(_Record):
    """One pass the guard saw: allowed or refused, and why."""

    FIELDS = ("name", "stage", "graph", "allowed", "lite", "kind", "reason", "seconds", "effect")
    __slots__ = FIELDS

    def __init__(self, name: str, stage: str, graph: str, allowed: bool,
                 lite: str,  # the registry's flag, or "unregistered"
                 kind: str = "function", reason: str = "", seconds: float = 0.0,
                 # What the pass did to the graph it ran on, as the effect check measured it
                 # ("" = unchanged or not measured): the registered cause of a change the effect
                 # check would otherwise refuse.
                 effect: str = "") -> None:
        self.name, self.stage, self.graph, self.allowed, self.lite = name, stage, graph, allowed, lite
        self.kind, self.reason, self.seconds, self.effect = kind, reason, seconds, effect

    @property
    def verdict(self) -> str:
        return "allowed" if self.allowed else "refused"


class Ledger(_Record):
    """What one ``torch.compile`` frame ran: lite (enforced) or default (observed only)."""

    FIELDS = ("mode", "graph_name", "entries", "graph_code", "region_code", "region_modules")
    __slots__ = FIELDS

    def __init__(self, mode: str = "lite",  # "lite" (guard enforces) or "observe" (records only)
                 graph_name: str = "", entries: list[LedgerEntry] | None = None,
                 # Python code of each graph the lite compiler handed back (fw/bw/inference,
                 # regions called).
                 graph_code: dict[str, str] | None = None,
                 # Inductor output code of each compiled region, by region graph name.
                 region_code: dict[str, str] | None = None,
                 # Qualified names of the modules whose ops each region graph holds
                 # (lite_compiler.module_regions).
                 region_modules: dict[str, list[str]] | None = None) -> None:
        self.mode, self.graph_name = mode, graph_name
        self.entries: list[LedgerEntry] = [] if entries is None else entries
        self.graph_code: dict[str, str] = {} if graph_code is None else graph_code
        self.region_code: dict[str, str] = {} if region_code is None else region_code
        self.region_modules: dict[str, list[str]] = {} if region_modules is None else region_modules

    def add(self, entry: LedgerEntry) -> LedgerEntry:
        self.entries.append(entry)
        return entry

    @property
    def refused(self) -> list[LedgerEntry]:
        return [e for e in self.entries if not e.allowed]

    def names(self) -> list[str]:
        return [e.name for e in self.entries]

    def to_dict(self) -> dict:
        return {"mode": self.mode, "graph": self.graph_name,
                "passes": [e.as_dict() | {"verdict": e.verdict} for e in self.entries]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self):
        return iter(self.entries)


# Every ledger, in creation order (``lite_guard trace`` reads the ones its script produced), and
# each thread's own: two threads compiling at once each get their own ledger from last_ledger().
_ALL: list[Ledger] = []
_MAX_KEPT = 64
_LOCK = threading.Lock()
_THREAD = threading.local()


def _mine() -> list[Ledger]:
    if not hasattr(_THREAD, "ledgers"):
        _THREAD.ledgers = []
    return _THREAD.ledgers


def new_ledger(mode: str, graph_name: str = "") -> Ledger:
    ledger = Ledger(mode=mode, graph_name=graph_name)
    with _LOCK:
        _ALL.append(ledger)
        del _ALL[:-_MAX_KEPT]
    mine = _mine()
    mine.append(ledger)
    del mine[:-_MAX_KEPT]
    return ledger


def last_ledger(mode: str | None = "lite") -> Ledger | None:
    """This thread's most recent lite compile's ledger (``mode=None``: of any guarded compile)."""
    for ledger in reversed(_mine()):
        if mode is None or ledger.mode == mode:
            return ledger
    return None


def all_ledgers(mode: str | None = None) -> list[Ledger]:
    """Every thread's ledgers, oldest first."""
    with _LOCK:
        return [ledger for ledger in _ALL if mode is None or ledger.mode == mode]


def clear_ledgers() -> None:
    """Forget every ledger: this thread's and the process-wide list (other threads keep theirs)."""
    with _LOCK:
        _ALL.clear()
    _mine().clear()
