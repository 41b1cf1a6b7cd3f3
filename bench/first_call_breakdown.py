"""Where ours' first call spends what aot_eager's does not: the import and the guard's own work.

Usage: .venv/bin/python bench/first_call_breakdown.py [--repeats N]

bench/compile_zoo_first_call.py measures the totals; this splits ours' extra into its parts, in
fresh processes (bytecode written, the registry cache filled by one uncounted process first, as
in that benchmark), median of N:

* ``import lite_compiler`` after ``import torch._dynamo`` (every torch.compile imports that),
  per module, from ``python -X importtime`` (self time; the package's own line is
  ``lite_compiler/__init__``'s body: loading the registry and deriving the lite config);
* the first compile of the llama block (forward + backward), the wall time spent inside each of
  the lite compiler's own steps (perf_counter around them). Steps that import torch modules
  (the guard's first hook install imports the pattern matcher, which aot_eager's partitioner
  imports too) are shown apart: those imports are not extra.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# The lite compiler's own steps, timed in the worker: (module, attribute) of functions and methods.
STEPS = [
    ("backend", "LiteCompiler.__init__"), ("backend", "graph_has_regions"),
    ("backend", "check_unannotated"), ("backend", "selective_decomposition_table"),
    ("backend", "adopt_enclosed"), ("backend", "outer_fingerprint"), ("backend", "check_outer_graph"),
    ("backend", "compile_regions"), ("backend", "joint_before_partition"),
    ("backend", "check_partition"), ("backend", "LiteCompiler._record_overridden_settings"),
    ("backend", "LiteCompiler._torch_called_custom_passes"),
    ("backend", "LiteCompiler._run_always_custom_passes"),
    ("effects", "EffectState.expect"), ("effects", "EffectState.verify"), ("effects", "traced_joint"),
    ("hooks", "check_hooks"), ("hooks", "_install"), ("hooks", "_uninstall"),
]
IMPORTING_STEPS = {"hooks._install"}  # its first call imports what aot_eager imports later


def worker() -> dict:
    import functools
    import time

    import torch

    sys.path.insert(0, str(REPO))
    from lite_compiler import backend, effects, hooks

    # The timers stand in the lite compiler's own functions: the guard refuses that unless the
    # registry names them lite = "always" (instrumentation that only measures).
    from bench.timing_registry import register_timing_wrapper

    register_timing_wrapper(f"{__name__}:worker.<locals>.timed",
                            "bench/first_call_breakdown.py times the lite compiler's steps")
    spent: dict[str, float] = {}
    modules = {"backend": backend, "effects": effects, "hooks": hooks}
    for module_name, dotted in STEPS:
        owner = modules[module_name]
        *path, attr = dotted.split(".")
        for part in path:
            owner = getattr(owner, part)
        original = getattr(owner, attr, None)
        if original is None:
            continue
        label = f"{module_name}.{dotted}"

        def timed(*args, _original=original, _label=label, **kwargs):
            start = time.perf_counter()
            try:
                return _original(*args, **kwargs)
            finally:
                spent[_label] = spent.get(_label, 0.0) + time.perf_counter() - start

        setattr(owner, attr, functools.wraps(original)(timed))
    from tests.compiler_models import build, run_step

    model, inputs = build("llama")
    start = time.perf_counter()
    run_step(model, inputs, torch.compile(model, backend="lite"), train=True)
    return {"first_call_s": time.perf_counter() - start, "steps": spent}


def _env(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "LITE_GUARD_CACHE_DIR": str(cache), "OMP_NUM_THREADS": "1",
            "TORCHINDUCTOR_COMPILE_THREADS": "1", "PYTHONWARNINGS": "ignore"}


def import_times(env: dict[str, str]) -> dict[str, float]:
    """Self time (ms) of every module ``import lite_compiler`` brings in after torch._dynamo."""
    run = subprocess.run([sys.executable, "-X", "importtime", "-c",
                          "import torch, torch._dynamo; import lite_compiler"],
                         capture_output=True, text=True, env=env, cwd=REPO, check=True)
    lines = run.stderr.splitlines()
    start = next(i for i, line in enumerate(lines) if line.rstrip().endswith("| torch._dynamo"))
    out = {}
    for line in lines[start + 1:]:
        match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|\s*(\S+)", line)
        if match:
            out[match[3]] = int(match[1]) / 1000
            if match[3] == "lite_compiler":
                break
    return out


REGISTRY_LOAD = """
import time, torch, torch._dynamo
# The modules first (the import split above counts them): the steps' own work only.
import tomllib, lite_guard.project_config
from lite_guard.registry import registry_paths
from lite_guard.registry_cache import cached_registry
imported = time.perf_counter()
paths = registry_paths()
found = time.perf_counter()
cached_registry(paths, torch_version=torch.__version__)
done = time.perf_counter()
print(json.dumps({"registry_paths (pyproject.toml, shipped files)": (found - imported) * 1e3,
                  "cached_registry (read, HMAC, unpickle)": (done - found) * 1e3}))
"""


def registry_load(env: dict[str, str]) -> dict[str, float]:
    """The two registry steps lite_compiler/__init__ runs, timed alone in a fresh process."""
    run = subprocess.run([sys.executable, "-c", "import json\n" + REGISTRY_LOAD], capture_output=True,
                         text=True, env=env, cwd=REPO, check=True)
    return json.loads(run.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker()))
        return 0
    with tempfile.TemporaryDirectory(prefix="first_call_breakdown_") as tmp:
        env = _env(Path(tmp) / "lite-guard-cache")
        import_times(env)  # uncounted: fills the registry cache, writes bytecode
        imports = [import_times(env) for _ in range(args.repeats)]
        loads = [registry_load(env) for _ in range(args.repeats)]
        steps = []
        for i in range(args.repeats):
            run = subprocess.run([sys.executable, __file__, "--worker"], capture_output=True,
                                 text=True, cwd=REPO, env={**env, "TORCHINDUCTOR_CACHE_DIR":
                                                           str(Path(tmp) / f"inductor-{i}")})
            if run.returncode != 0:
                print(run.stderr[-2000:], file=sys.stderr)
                return 1
            steps.append(json.loads(run.stdout.strip().splitlines()[-1]))
    total = statistics.median(sum(t.values()) for t in imports)
    print(f"import lite_compiler after torch._dynamo: {total:.1f} ms (median of {args.repeats};"
          f" load {os.getloadavg()[0]:.1f})")
    names = sorted({n for t in imports for n in t}, key=lambda n: -statistics.median(
        t.get(n, 0.0) for t in imports))
    for name in names:
        print(f"  {statistics.median(t.get(n, 0.0) for t in imports for n in [name]):6.2f} ms  {name}")
    print("  of lite_compiler's own line (its __init__: load the registry, derive the lite config,"
          " route mode='lite'), timed alone (their modules imported first):")
    for step in loads[0]:
        print(f"    {statistics.median(load[step] for load in loads):6.2f} ms  {step}")
    labels = sorted({label for s in steps for label in s["steps"]})
    own = {label: statistics.median(s["steps"].get(label, 0.0) for s in steps) * 1e3
           for label in labels}
    extra = sum(v for k, v in own.items() if k not in IMPORTING_STEPS)
    print(f"first compile (llama, training step), the lite compiler's own steps: {extra:.1f} ms"
          f" (median; first call {statistics.median(s['first_call_s'] for s in steps):.2f} s)")
    for label in sorted(own, key=lambda k: -own[k]):
        note = "  (imports torch modules aot_eager imports too; not extra)" \
            if label in IMPORTING_STEPS else ""
        print(f"  {own[label]:7.2f} ms  {label}{note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
