"""The C++ compiler a region's CPU kernels are built with, checked by what it does.

Inductor builds CPU kernels with the compiler ``cpp.cxx`` names (``CXX`` when torch imported
Inductor's config), passing math flags of its own that keep IEEE semantics (``-fno-finite-math-only``,
``-fmath-errno``, ``-ffp-contract=...``). A wrapper script in its place can add ``-ffast-math``
to every build, and the command line Inductor makes shows nothing. So the compiler is asked,
with Inductor's math flags, what it would compile under: the macros GCC and Clang predefine
for the math semantics in effect. Asked once per compiler (path, size, mtime) and flags.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import Any

from lite_compiler import guard

# What the compiler predefines when a flag relaxes IEEE semantics (GCC's and Clang's manuals,
# "Common Predefined Macros"): the effect, whatever flag or wrapper caused it; with the options
# that turn it on and off (umbrellas included: -ffast-math, -funsafe-math-optimizations), so a
# relaxation Inductor's own flags ask for (torch 2.11 passes -fno-math-errno; its config decides,
# and the registry governs that config) is Inductor's, and only one they do not ask for counts.
_FAST = ("-ffast-math",)
_UNSAFE = ("-funsafe-math-optimizations",)
_RELAXED_MATH = {
    "__FAST_MATH__": ("fast math", _FAST, ("-fno-fast-math",)),
    "__FINITE_MATH_ONLY__": ("finite math only", ("-ffinite-math-only", *_FAST), ("-fno-finite-math-only",)),
    "__NO_MATH_ERRNO__": ("no math errno", ("-fno-math-errno", *_FAST), ("-fmath-errno",)),
    "__NO_SIGNED_ZEROS__": ("no signed zeros", ("-fno-signed-zeros", *_UNSAFE, *_FAST),
                            ("-fsigned-zeros", "-fno-unsafe-math-optimizations")),
    "__ASSOCIATIVE_MATH__": ("reassociation", ("-fassociative-math", *_UNSAFE, *_FAST),
                             ("-fno-associative-math", "-fno-unsafe-math-optimizations")),
    "__RECIPROCAL_MATH__": ("reciprocals", ("-freciprocal-math", *_UNSAFE, *_FAST),
                            ("-fno-reciprocal-math", "-fno-unsafe-math-optimizations")),
}


def _asked_for(flags: list[str], on: tuple[str, ...], off: tuple[str, ...]) -> bool:
    """Whether ``flags`` turn the relaxation on (the last of its on and off options wins)."""
    last = None
    for flag in flags:
        if flag in on:
            last = True
        elif flag in off:
            last = False
    return bool(last)


_VERDICTS: dict[tuple[Any, ...], str | None] = {}


def _relaxed(compiler: str, flags: list[str]) -> str | None:
    """What the compiler's predefined macros say it relaxes under ``flags`` beyond what
    ``flags`` ask for (None: nothing), or why it could not be asked."""
    found = shutil.which(compiler) or compiler
    try:
        stat = os.stat(found)
        identity: tuple[Any, ...] = (os.path.realpath(found), stat.st_size, stat.st_mtime_ns)
    except OSError:
        identity = (found,)
    key = (compiler, identity, tuple(flags))
    if key in _VERDICTS:
        return _VERDICTS[key]
    try:
        out = subprocess.run([compiler, *flags, "-dM", "-E", "-x", "c++", os.devnull],
                             capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.SubprocessError) as err:
        return f"it could not be asked ({err})"  # not cached: the next compile asks again
    if out.returncode != 0:
        return f"it could not be asked (exit {out.returncode}: {out.stderr.strip()[:200]})"
    defined = {}
    for line in out.stdout.splitlines():
        parts = line.split(maxsplit=2)
        if len(parts) >= 2 and parts[0] == "#define":
            defined[parts[1]] = parts[2] if len(parts) > 2 else ""
    relaxed = [f"{macro} ({what})" for macro, (what, on, off) in _RELAXED_MATH.items()
               if macro in defined and defined[macro] != "0" and not _asked_for(flags, on, off)]
    _VERDICTS[key] = ", ".join(relaxed) or None
    return _VERDICTS[key]


def check_cpp_compiler(region_graph: str) -> None:
    """Before a region compiles for the CPU: refuse (by effect) a C++ compiler that, given
    Inductor's own math flags, compiles with relaxed IEEE semantics."""
    if not guard.enforcing() or sys.platform == "win32":  # (MSVC has no -dM; not supported)
        return
    from torch._inductor import cpp_builder

    compiler = cpp_builder.get_cpp_compiler()
    flags = ["-" + flag for flag in cpp_builder._get_ffast_math_flags()]
    relaxed = _relaxed(compiler, flags)
    if relaxed is None:
        return
    what = f"predefines {relaxed}" if not relaxed.startswith("it could not") else relaxed
    guard.refuse_effect("lowering", (
        f"the C++ compiler Inductor builds this region's kernels with ({compiler}, from cpp.cxx /"
        f" CXX), given Inductor's own math flags ({' '.join(flags)}): {what}; lite mode cannot"
        " vouch for the kernels' numerics (a wrapper or a compiler default relaxes IEEE math);"
        " point cpp.cxx (CXX) at the compiler itself for lite compiles"), graph=region_graph)
