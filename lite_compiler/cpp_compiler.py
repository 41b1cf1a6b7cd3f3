"""The C++ compiler a region's CPU kernels are built with, checked by what it does.

Inductor builds CPU kernels with the compiler ``cpp.cxx`` names (``CXX`` when torch imported
Inductor's config), passing math flags of its own that keep IEEE semantics (``-fno-finite-math-only``,
``-fmath-errno``, ``-ffp-contract=...``). A wrapper script in its place can add ``-ffast-math``
to every build, and the command line Inductor makes shows nothing. So the compiler builds a small
shared library, as it builds a region's kernels (Inductor's math and vector-ISA flags, ``-O3``,
``-shared``), and it is loaded and run: the macros GCC and Clang predefine for the math semantics
in effect are read from inside the build, and what the code computes shows the relaxations no
macro names (``-ffp-contract=fast``: a fused multiply-add) or whose macros were undefined. A
wrapper that adds flags only to real builds (not to a ``-dM -E`` probe) is seen. Built once per
compiler (path, size, mtime) and flags.
"""

from __future__ import annotations

import ctypes
import math
import os
import shutil
import subprocess
import sys
import tempfile
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


# The build: each relaxation's macro sets a bit (read from inside the build, so a wrapper that
# adds flags only when it builds is seen), and four functions whose results IEEE fixes, given
# their arguments at run time (nothing to fold): a*b+c rounds twice unless contracted into a
# fused multiply-add; NaN is NaN unless finite math is assumed; -0.0 + 0.0 is +0.0 unless signed
# zeros are ignored; (a + b) - a is 0 for a = 1e20, b = 1 unless additions are reassociated.
_PROBE = "\n".join([
    'extern "C" int macros(void) {', "  int m = 0;",
    *[f"#if defined({macro}) && ({macro} + 0)\n  m |= {1 << i};\n#endif"  # (GCC defines some as 0)
      for i, macro in enumerate(_RELAXED_MATH)],
    "  return m;", "}",
    'extern "C" double madd(double a, double b, double c) { return a * b + c; }',
    'extern "C" float maddf(float a, float b, float c) { return a * b + c; }',
    'extern "C" int isnan_(double x) { return __builtin_isnan(x); }',
    'extern "C" double addzero(double x) { return x + 0.0; }',
    'extern "C" double reassoc(double a, double b) { return (a + b) - a; }', ""])

# Behaviours no macro reports (or that a wrapper's -U hides): (what, on, off, IEEE holds?).
_CONTRACT_ON, _CONTRACT_OFF = ("-ffp-contract=fast", "-ffp-contract=on"), ("-ffp-contract=off",)


def _behaviours(lib: Any) -> list[tuple[str, tuple[str, ...], tuple[str, ...], bool]]:
    lib.madd.restype, lib.madd.argtypes = ctypes.c_double, [ctypes.c_double] * 3
    lib.maddf.restype, lib.maddf.argtypes = ctypes.c_float, [ctypes.c_float] * 3
    lib.isnan_.restype, lib.isnan_.argtypes = ctypes.c_int, [ctypes.c_double]
    lib.addzero.restype, lib.addzero.argtypes = ctypes.c_double, [ctypes.c_double]
    lib.reassoc.restype, lib.reassoc.argtypes = ctypes.c_double, [ctypes.c_double] * 2
    _, finite_on, finite_off = _RELAXED_MATH["__FINITE_MATH_ONLY__"]
    _, zeros_on, zeros_off = _RELAXED_MATH["__NO_SIGNED_ZEROS__"]
    _, assoc_on, assoc_off = _RELAXED_MATH["__ASSOCIATIVE_MATH__"]
    # (1 + 2^-27)(1 - 2^-27) = 1 - 2^-54 rounds to 1.0: minus 1 is 0, fused it is -2^-54.
    return [
        ("a*b+c as one fused multiply-add (contraction)", _CONTRACT_ON, _CONTRACT_OFF,
         lib.madd(1 + 2.0 ** -27, 1 - 2.0 ** -27, -1.0) == 0.0
         and lib.maddf(1 + 2.0 ** -13, 1 - 2.0 ** -13, -1.0) == 0.0),
        ("NaN tested as a number (finite math only)", finite_on, finite_off, lib.isnan_(math.nan) == 1),
        ("-0.0 + 0.0 as -0.0 (no signed zeros)", zeros_on, zeros_off,
         math.copysign(1.0, lib.addzero(-0.0)) == 1.0),
        ("(a + b) - a as b (reassociation)", assoc_on, assoc_off, lib.reassoc(1e20, 1.0) == 0.0),
    ]


def _relaxed(compiler: str, flags: list[str]) -> str | None:
    """How the compiler relaxes IEEE math when it builds under ``flags`` beyond what ``flags``
    ask for (None: it does not), by its predefined macros and by what its code computes; or why
    it could not be asked."""
    found = shutil.which(compiler) or compiler
    try:
        stat = os.stat(found)
        identity: tuple[Any, ...] = (os.path.realpath(found), stat.st_size, stat.st_mtime_ns)
    except OSError:
        identity = (found,)
    key = (compiler, identity, tuple(flags))
    if key in _VERDICTS:
        return _VERDICTS[key]
    with tempfile.TemporaryDirectory(prefix="lite-guard-cxx-") as tmp:
        source, library = os.path.join(tmp, "kernel.cpp"), os.path.join(tmp, "kernel.so")
        with open(source, "w") as f:
            f.write(_PROBE)
        try:
            out = subprocess.run([compiler, *flags, "-shared", "-fPIC", source, "-o", library],
                                 capture_output=True, text=True, timeout=120, check=False)
        except (OSError, subprocess.SubprocessError) as err:
            return f"it could not be asked ({err})"  # not cached: the next compile asks again
        if out.returncode != 0 or not os.path.isfile(library):
            return f"it could not be asked (exit {out.returncode}: {out.stderr.strip()[:200]})"
        try:
            lib = ctypes.CDLL(library)
            bits, behaviours = lib.macros(), _behaviours(lib)
        except (OSError, AttributeError) as err:
            return f"it could not be asked (its build does not load: {err})"
    relaxed = [f"{macro} ({what})" for i, (macro, (what, on, off)) in enumerate(_RELAXED_MATH.items())
               if bits & (1 << i) and not _asked_for(flags, on, off)]
    relaxed += [f"computes {what}" for what, on, off, ieee in behaviours
                if not ieee and not _asked_for(flags, on, off)]
    _VERDICTS[key] = ", ".join(relaxed) or None
    return _VERDICTS[key]


def _isa_flags() -> list[str]:
    """The vector-ISA flags Inductor builds CPU kernels with (``-mavx2 -mfma``, ...): what makes
    contraction into a fused multiply-add possible at all."""
    try:
        from torch._inductor.cpu_vec_isa import pick_vec_isa

        return pick_vec_isa().build_arch_flags().split()
    except Exception:  # (no vector ISA: the scalar build)
        return []


def check_cpp_compiler(region_graph: str) -> None:
    """Before a region compiles for the CPU: refuse (by effect) a C++ compiler that, given
    Inductor's own math flags, compiles with relaxed IEEE semantics."""
    if not guard.enforcing() or sys.platform == "win32":  # (MSVC has no -dM; not supported)
        return
    from torch._inductor import cpp_builder

    compiler = cpp_builder.get_cpp_compiler()
    flags = ["-O3", *["-" + flag for flag in cpp_builder._get_ffast_math_flags()], *_isa_flags()]
    relaxed = _relaxed(compiler, flags)
    if relaxed is None:
        return
    what = f"builds with {relaxed}" if not relaxed.startswith("it could not") else relaxed
    guard.refuse_effect("lowering", (
        f"the C++ compiler Inductor builds this region's kernels with ({compiler}, from cpp.cxx /"
        f" CXX), given Inductor's own math flags ({' '.join(flags)}): {what}; lite mode cannot"
        " vouch for the kernels' numerics (a wrapper or a compiler default relaxes IEEE math);"
        " point cpp.cxx (CXX) at the compiler itself for lite compiles"), graph=region_graph)
