"""Full garbage collections wait while lite mode imports torch's compiler stack or compiles
(lite_compiler.gc_deferral): only the old generation waits, the young ones are collected as usual, the collector's
thresholds are what they were afterwards, and LITE_GUARD_DEFER_GC=0 switches it off.

Import cases run in a fresh interpreter (what is imported there is the measurement)."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys

import torch

import lite_compiler  # noqa: F401  (routes backend="lite" as users do)
from lite_compiler import gc_deferral


def _f(x):
    return (x.sin() * 2).cos().sum()


def _compile_watching_collections(backend: str = "lite") -> list[tuple[int, tuple[int, ...]]]:
    """(generation, thresholds) of every collection during one compile + backward."""
    seen: list[tuple[int, tuple[int, ...]]] = []

    def watch(phase: str, info: dict) -> None:
        if phase == "start":
            seen.append((info["generation"], gc.get_threshold()))

    torch._dynamo.reset()
    x = torch.randn(16, 16, requires_grad=True)
    gc.callbacks.append(watch)
    try:
        torch.compile(_f, backend=backend)(x).backward()
    finally:
        gc.callbacks.remove(watch)
    return seen


def test_a_lite_compile_defers_full_collections_only_and_restores_the_thresholds():
    before = gc.get_threshold()
    seen = _compile_watching_collections()
    deferred = [(gen, thresholds) for gen, thresholds in seen if thresholds[2] == gc_deferral._DEFERRED]
    assert deferred, "no collection ran while the lite compile deferred full ones"
    assert all(gen < 2 for gen, _ in deferred)  # young generations still collected, never the old
    assert gc.get_threshold() == before and not gc_deferral.deferring()


def test_aot_eager_compiles_are_left_alone():
    seen = _compile_watching_collections("aot_eager")
    assert seen and all(thresholds[2] != gc_deferral._DEFERRED for _, thresholds in seen)


def test_a_threshold_the_user_set_is_kept():
    before = gc.get_threshold()
    gc.set_threshold(500, 7, 13)
    try:
        seen = _compile_watching_collections()
        assert any(t == (500, 7, gc_deferral._DEFERRED) for _, t in seen)
        assert gc.get_threshold() == (500, 7, 13)
        # Changed by the user while deferred: theirs stays.
        with gc_deferral.full_collections_deferred():
            gc.set_threshold(600, 7, 20)
        assert gc.get_threshold() == (600, 7, 20)
    finally:
        gc.set_threshold(*before)


def test_nested_windows_restore_once_at_the_outermost():
    before = gc.get_threshold()
    with gc_deferral.full_collections_deferred():
        with gc_deferral.full_collections_deferred():
            pass
        assert gc.get_threshold()[2] == gc_deferral._DEFERRED  # the outer one still open
    assert gc.get_threshold() == before


def test_an_error_inside_the_window_restores_the_thresholds():
    before = gc.get_threshold()
    try:
        with gc_deferral.full_collections_deferred():
            raise KeyError("boom")
    except KeyError:
        pass
    assert gc.get_threshold() == before and not gc_deferral.deferring()


_IMPORT = """
import gc, json, sys
import torch
full = []
gc.callbacks.append(lambda phase, info: full.append(1)
                    if phase == "start" and info["generation"] == 2 else None)
before = gc.get_threshold()
import lite_compiler
imported = len(full)
dynamo_at_import = "torch._dynamo" in sys.modules
compiled = torch.compile(lambda x: x.sin(), backend="lite")
print(json.dumps({"full": len(full), "at_import": imported, "dynamo_at_import": dynamo_at_import,
                  "dynamo": "torch._dynamo" in sys.modules, "restored": gc.get_threshold() == before}))
"""


def _import(defer: str) -> dict:
    env = {**os.environ, "LITE_GUARD_DEFER_GC": defer}
    result = subprocess.run([sys.executable, "-c", _IMPORT], capture_output=True, text=True,
                            env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_a_lite_torch_compile_that_imports_dynamo_runs_no_full_collection_and_the_switch_turns_that_off():
    # `import lite_compiler` imports no Dynamo; the first lite torch.compile does (torch._dynamo
    # and our backend: ~100k new objects, over a quarter of the heap), so CPython would run full
    # collections meanwhile (LITE_GUARD_DEFER_GC=0 shows it).
    on = _import("1")
    assert on == {"full": 0, "at_import": 0, "dynamo_at_import": False, "dynamo": True, "restored": True}
    off = _import("0")
    assert off["full"] >= 1 and off["dynamo"] and off["restored"]
