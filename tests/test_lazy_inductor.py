"""Lazy Inductor: importing lite_compiler loads no Dynamo and no Inductor; compiling without
regions loads no more of torch._inductor than aot_eager does; a region compile imports
Inductor's compiler then, and the guard's hooks in the modules it brings in are patched on
import, exactly as if imported before.

Each case runs in a fresh interpreter, so sys.modules is the measurement.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

PRELUDE = """
import json, os, sys
import torch

def inductor_modules():
    return sorted(m for m in sys.modules if m.startswith("torch._inductor"))

def f(x):
    return (x.sin() * 2).cos()

def train(backend):
    x = torch.randn(8, 8, requires_grad=True)
    torch.compile(f, backend=backend)(x).sum().backward()
"""


def _run(body: str, env: dict[str, str] | None = None) -> dict:
    script = PRELUDE + textwrap.dedent(body)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                            env={**os.environ, **(env or {})})
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_import_loads_neither_dynamo_nor_inductor_nor_triton():
    """`import lite_compiler` costs only the package's own modules: Dynamo (and the 17 Inductor
    modules and, where installed, Triton, that its import brings) comes with the first
    torch.compile, as for aot_eager, or earlier with a model library that imports it."""
    ours = _run("""
        os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        import lite_compiler
        print(json.dumps({"modules": inductor_modules(), "dynamo": "torch._dynamo" in sys.modules,
                          "triton": sorted(m for m in sys.modules if m.split(".")[0] == "triton"),
                          "cuda": torch.cuda.is_initialized(),
                          "cache_dir_set": "TORCHINDUCTOR_CACHE_DIR" in os.environ,
                          "routed": getattr(torch.compile, "__lite_mode__", False)}))
    """)
    # (Dynamo's import sets TORCHINDUCTOR_CACHE_DIR in the environment: not ours to do.)
    assert ours == {"modules": [], "dynamo": False, "triton": [], "cuda": False,
                    "cache_dir_set": False, "routed": True}


def test_errors_come_with_dynamo_at_first_use_and_pass_through_it():
    seen = _run("""
        import lite_compiler
        before = "torch._dynamo" in sys.modules
        error = lite_compiler.LitePassViolation
        from torch._dynamo.exc import ShortenTraceback
        from lite_compiler import LiteConfigError
        print(json.dumps({"before": before, "after": "torch._dynamo" in sys.modules,
                          "passthrough": issubclass(error, ShortenTraceback)
                                         and issubclass(LiteConfigError, ShortenTraceback),
                          "listed": "LitePassViolation" in dir(lite_compiler)}))
    """)
    assert seen == {"before": False, "after": True, "passthrough": True, "listed": True}


def test_module_regions_stays_the_function_when_its_module_is_imported_by_name():
    seen = _run("""
        import lite_compiler.module_regions
        from lite_compiler.module_regions import RegionRule
        import lite_compiler
        print(json.dumps({"function": callable(lite_compiler.module_regions)
                                      and not isinstance(lite_compiler.module_regions, type(sys)),
                          "dynamo": "torch._dynamo" in sys.modules}))
    """)
    assert seen == {"function": True, "dynamo": False}


def test_compile_without_regions_loads_no_more_inductor_than_aot_eager():
    ours = _run("""
        import lite_compiler
        train("lite")
        print(json.dumps({"modules": inductor_modules(), "ledger": len(lite_compiler.last_ledger().entries)}))
    """)
    aot = _run("""
        train("aot_eager")
        print(json.dumps({"modules": inductor_modules()}))
    """)
    extra = sorted(set(ours["modules"]) - set(aot["modules"]))
    assert extra == [], extra
    assert ours["ledger"] > 0  # the guard did run


_REGION = """
    import lite_compiler

    def g(x):
        y = x.sin()
        with lite_compiler.region(id="r"):
            y = y.cos() * 2 + 1
        return y.tanh()

    x = torch.randn(8, 8, requires_grad=True)
    torch.compile(g, backend="lite")(x).sum().backward()
    ledger = lite_compiler.last_ledger("lite")
    print(json.dumps({"entries": [[e.name, e.stage, e.graph, e.allowed] for e in ledger.entries],
                      "regions": sorted(ledger.region_code),
                      "compile_fx": "torch._inductor.compile_fx" in sys.modules}))
"""


def _fresh_caches(path) -> dict[str, str]:
    # Each run compiles from empty caches: what an earlier test's kernels left in a shared
    # Inductor cache would add the guard's kernel-library rows to one run and not the other.
    return {"TORCHINDUCTOR_CACHE_DIR": str(path / "inductor"), "LITE_GUARD_CACHE_DIR": str(path / "lg")}


def test_region_compile_imports_inductor_and_guards_it_as_if_imported_before(tmp_path):
    lazy = _run(_REGION, _fresh_caches(tmp_path / "lazy"))
    eager = _run("import torch._inductor.compile_fx\n" + textwrap.dedent(_REGION),
                 _fresh_caches(tmp_path / "eager"))
    assert lazy["compile_fx"] and lazy["regions"] == ["graph0/bw/region[r]/0", "graph0/fw/region[r]/0"]
    # Same passes seen, same verdicts, same graphs: the hooks patched on import did their job.
    assert lazy["entries"] == eager["entries"] and lazy["entries"]


def test_compile_without_regions_or_options_loads_only_what_it_uses(tmp_path):
    """Nothing a plain lite compile does not run is imported: no fusion or CUDA-graph code (off
    by default), no region partitioner, and, once the registry cache holds the registry for this
    torch, neither packaging (version ranges) nor the TOML parser (no pyproject.toml here)."""
    import os

    body = """
        import lite_compiler
        train("lite")
        print(json.dumps({"ours": sorted(m for m in sys.modules if m.startswith("lite_compiler")),
                          "others": [m for m in ("packaging", "tomllib",
                                                 "torch.fx.passes.infra.partitioner")
                                     if m in sys.modules]}))
    """
    env = {**os.environ, "LITE_GUARD_CACHE_DIR": str(tmp_path)}
    script = PRELUDE + textwrap.dedent(body)
    for _ in range(2):  # the first process fills the registry cache, the second reads it
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                timeout=600, env=env, cwd=tmp_path)
        assert result.returncode == 0, result.stderr[-2000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["others"] == []
    for optional in ("options", "cudagraphs", "bitwise_fusion", "bitwise_check", "fusion_regions",
                     "bits", "verdict_cache", "observing", "testing", "fuzz"):
        assert f"lite_compiler.{optional}" not in seen["ours"], optional
