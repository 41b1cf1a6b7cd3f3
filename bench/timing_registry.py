"""Registers a benchmark's timing wrapper with the guard, for the benchmarks that time the lite
compiler's own steps (compile_zoo_worker, guard_overhead, first_call_breakdown).

A timer that stands in one of the guard's or the compiler's own functions is code the guard does
not know, and the guard refuses it unless the registry names it lite = "always" (instrumentation
that only measures). Each worker writes a registry file of its own and appends it to
LITE_GUARD_REGISTRIES before lite_compiler is imported.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import tomlkit


def register_timing_wrapper(name: str, why: str) -> Path:
    """Names ``name`` (``module:qualname`` of the wrapper) lite = "always" in a registry file of
    this process's own; returns the file."""
    entry = tomlkit.table()
    for key, value in (("name", name), ("stage", "lowering"), ("lite", "always"),
                       ("kind", "function"), ("why", why)):
        entry.add(key, value)
    passes = tomlkit.aot()
    passes.append(entry)
    document = tomlkit.document()
    document.add("pass", passes)
    path = Path(tempfile.mkdtemp(prefix="lite-bench-")) / "timing.toml"
    path.write_text(tomlkit.dumps(document))
    earlier = [p for p in os.environ.get("LITE_GUARD_REGISTRIES", "").split(os.pathsep) if p]
    os.environ["LITE_GUARD_REGISTRIES"] = os.pathsep.join(earlier + [str(path)])
    return path
