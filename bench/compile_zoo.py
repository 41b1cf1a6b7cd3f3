"""Compile time, step time and peak memory of the CPU model zoo, side by side in one run.

Usage: .venv/bin/python bench/compile_zoo.py [--write] [--json F] [--steps N] [--repeats R]
                                             [--guard-repeats K] [--models NAME ...]
       .venv/bin/python bench/compile_zoo.py --profile MODEL   (cProfile one cold lite first call)
With --write, replaces the "## Compile time and step time (CPU zoo)" section of BENCHMARKS.md
(other sections are left alone). About 5 minutes on 2 cores.

For every model of tests/compiler_models.py (training step: forward + backward, float32, the
zoo's own small sizes, unannotated, so ours runs every op as ATen like aot_eager) and every
variant -- eager, aot_eager, torch's own ``mode="lite"``, ours (``backend="lite"``), default
Inductor, and ours with the guard switched off -- one fresh process per measurement:

* cold first call: a fresh process and an empty TORCHINDUCTOR_CACHE_DIR (FX graph, AOTAutograd
  and C++ kernel caches all empty); the wall time of the first training step, which includes the
  compile and every module torch imports lazily on the way (what a user sees). aot_eager and
  ours (guard on and off) get R cold processes and the minimum is kept (noise only adds);
* warm-cache first call: a second fresh process on the cache dir the cold process filled;
* steady step: the median of N training steps in the warm process, after 5 warm-up steps;
* peak memory: ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` of the cold process, as a delta over
  the high-water mark just before the first call (so the torch import and model build are not
  counted). It is whole-process RSS: Python objects, imported code and the compiler's work,
  not only tensors. (In a quick try torch.profiler's CPU memory events for a training step were
  incomplete -- a few dozen events, net negative -- and tracemalloc does not see torch's
  allocator, so neither is used.)

Workers run with TORCHINDUCTOR_COMPILE_THREADS=1 and OMP_NUM_THREADS=1: on 2 shared cores,
spinning OpenMP threads turn sub-millisecond steps into 100 ms ones. The variants of one model
run interleaved so a load spike hits them alike; the load average and the code state (commit,
uncommitted compiler edits) are written into the section.

Guard: "guard off" is our lite compile with ``LiteCompiler.active`` (the only thing that opens
guard sessions) replaced by a no-op context in the benchmark process -- no hooks patched in, no
pass checked; the library has no switch for it. One extra process per model pays the lazy
imports with a warm-up compile, then alternates aot_eager / ours / ours without guard K times
(minimum of each), times the guard's own work directly (wrappers around hooks._install,
hooks._uninstall and guard.check), the registry load + config derivation, and finally times steady steps of
ours and aot_eager compiled in the same process, in alternating blocks of 10 (the run-time
overhead). The cold lite process also times guard hook installation, registry load and the
decomposition table with wrappers, to show where its first call goes.

Three modules, one job each: this driver spawns the processes and collects their JSON;
``compile_zoo_worker.py`` measures inside one process; ``compile_zoo_render.py`` turns the
results into the section, which ``markdown_section.py`` writes.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.compile_zoo_render import render  # noqa: E402
from bench.compile_zoo_worker import MODELS, VARIANTS  # noqa: E402
from bench.markdown_section import code_state, replace_section  # noqa: E402

SECTION = "Compile time and step time (CPU zoo)"  # the BENCHMARKS.md section it owns
WORKER = Path(__file__).resolve().parent / "compile_zoo_worker.py"


def _spawn(args: list[str], cache: Path | None) -> dict:
    env = {**os.environ, "TORCHINDUCTOR_COMPILE_THREADS": "1", "OMP_NUM_THREADS": "1",
           "PYTHONWARNINGS": "ignore"}
    if cache is not None:
        env["TORCHINDUCTOR_CACHE_DIR"] = str(cache)
        env["TRITON_CACHE_DIR"] = str(cache / "triton")  # (no Triton on CPU; fresh all the same)
    run = subprocess.run([sys.executable, str(WORKER), *args], capture_output=True, text=True,
                         env=env, cwd=REPO)
    if run.returncode != 0:
        if args[0] != "measure":
            raise SystemExit(f"worker {' '.join(args)} exited {run.returncode}:\n{run.stderr[-4000:]}")
        return {"variant": args[1], "model": args[2], "error": _error_summary(run.stderr)}
    return json.loads(run.stdout.strip().splitlines()[-1])


def _error_summary(stderr: str) -> str:
    """The exception line of a failed worker (plus Inductor's "Error in op" line, if any)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    exc = next((line for line in reversed(lines)
                if re.match(r"^[\w.]+(Error|Exception|Violation)\b", line)), lines[-1] if lines else "?")
    op = next((line for line in lines if line.startswith("Error in op:")), "")
    return (exc[:240] + (f" ({op})" if op else "")).replace("|", "/")


COLD_ONLY = ("eager", "lite_noguard")  # eager has no cache; guard-off is only for the guard table


GOAL_VARIANTS = ("aot_eager", "lite", "lite_noguard")  # the goals compare these: cold repeated


def measure_all(models, steps: int, repeats: int, guard_repeats: int, log) -> dict:
    results: dict = {"cold": {}, "warm": {}, "guard": {}}
    variants = (*VARIANTS, "lite_noguard")
    with tempfile.TemporaryDirectory(prefix="compile_zoo_") as tmp:
        for model in models:
            caches = {v: Path(tmp) / f"{model}-{v}" for v in variants}
            for phase in ("cold", "warm"):
                for variant in variants:
                    if phase == "warm" and variant in COLD_ONLY:
                        continue
                    row = _spawn(["measure", variant, model, "--steps", str(steps)], caches[variant])
                    results[phase].setdefault((model, variant), []).append(row)
                    if "error" in row:
                        log(f"{phase:4} {model:8} {variant:14} FAILED: {row['error']}")
                        continue
                    log(f"{phase:4} {model:8} {variant:14} first {row['first_call_s']:7.3f} s"
                        f"  step {row['step_ms']:7.3f} ms  rss +{row['rss_compile_mib']:.0f} MiB")
            for rep in range(1, repeats):  # more cold samples of the goal variants, fresh caches
                for variant in GOAL_VARIANTS:
                    row = _spawn(["measure", variant, model, "--steps", str(steps)],
                                 Path(tmp) / f"{model}-{variant}-{rep}")
                    results["cold"][(model, variant)].append(row)
                    log(f"cold {model:8} {variant:14} "
                        + (f"FAILED: {row['error']}" if "error" in row else
                           f"first {row['first_call_s']:7.3f} s (repeat {rep})"))
                    if (model, variant) not in results["warm"]:
                        continue  # a cold-only variant
                    # and one more warm sample on the cache the first cold process filled
                    row = _spawn(["measure", variant, model, "--steps", str(steps)], caches[variant])
                    results["warm"][(model, variant)].append(row)
                    log(f"warm {model:8} {variant:14} "
                        + (f"FAILED: {row['error']}" if "error" in row else
                           f"first {row['first_call_s']:7.3f} s (repeat {rep})"))
            row = _spawn(["guard", model, "--repeats", str(guard_repeats), "--steps", str(steps)],
                         Path(tmp) / f"{model}-guard")
            results["guard"][model] = row
            log(f"guard {model:8} aot_eager {row['aot_eager_s']:.3f} s lite {row['lite_s']:.3f} s"
                f" noguard {row['lite_noguard_s']:.3f} s registry {row['registry_s'] * 1e3:.1f} ms"
                f"  step aot_eager {row['step_aot_eager_ms']:.3f} ms lite {row['step_lite_ms']:.3f} ms")
        for (model, variant), rows in results["cold"].items():
            if variant in COLD_ONLY:
                results["warm"][(model, variant)] = rows
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="timed steady steps per variant")
    parser.add_argument("--repeats", type=int, default=2,
                        help="cold processes of aot_eager and ours (the goal variants) per model")
    parser.add_argument("--guard-repeats", type=int, default=4)
    parser.add_argument("--write", action="store_true", help="update BENCHMARKS.md")
    parser.add_argument("--json", default=None, help="also write the raw results here")
    parser.add_argument("--render-from", help="re-render a saved run (a pickle) without measuring")
    parser.add_argument("--models", nargs="+", choices=MODELS, help="a subset (for a quick look)")
    parser.add_argument("--profile", metavar="MODEL", help="cProfile one cold lite first call and exit")
    args = parser.parse_args()
    if args.profile:
        return subprocess.run([sys.executable, str(WORKER), "profile", args.profile]).returncode

    started, load_before = time.perf_counter(), os.getloadavg()[0]
    if args.render_from:
        with open(args.render_from, "rb") as handle:
            results, meta = pickle.load(handle)
    else:
        models = tuple(args.models or MODELS)
        results = measure_all(models, args.steps, args.repeats, args.guard_repeats,
                              lambda line: print(line, file=sys.stderr, flush=True))
        meta = {"elapsed_s": time.perf_counter() - started, "load_before": load_before,
                "load_after": os.getloadavg()[0], "machine": platform.machine(),
                "cpus": os.cpu_count(), "python": platform.python_version(),
                "torch": _torch_version(), "steps": args.steps, "repeats": args.repeats,
                "guard_repeats": args.guard_repeats, "models": list(models), "code": code_state(REPO)}
        with open(Path(tempfile.gettempdir()) / "compile_zoo_last.pickle", "wb") as handle:
            pickle.dump((results, meta), handle)  # to re-render without re-measuring
    body, summary = render(results, meta)
    print(f"## {SECTION}\n\n{body}")
    if args.json:
        raw = {"meta": meta, "summary": summary, "guard": results["guard"],
               **{phase: [r for rows in results[phase].values() for r in rows] for phase in ("cold", "warm")}}
        Path(args.json).write_text(json.dumps(raw, indent=2))
    if args.write:
        replace_section(REPO / "BENCHMARKS.md", SECTION, body)
    return 0


def _torch_version() -> str:
    # Asked of a child process: the driver itself never imports torch (its workers do).
    return subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__)"],
                          capture_output=True, text=True).stdout.strip()


if __name__ == "__main__":
    sys.exit(main())
