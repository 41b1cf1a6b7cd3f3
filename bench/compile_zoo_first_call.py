"""First call including import, CPU: aot_eager vs ours vs torch's own lite mode, side by side.

Usage: .venv/bin/python bench/compile_zoo_first_call.py [--repeats R] [--models NAME ...]
                                                        [--variants NAME ...] [--write] [--json F]
With --write, replaces the "## First call including import (CPU)" section of BENCHMARKS.md.

Every sample is its own fresh process with fresh compile caches: TORCHINDUCTOR_CACHE_DIR and
TRITON_CACHE_DIR point at new empty temporary directories. The clock starts before
``import torch`` (the first statement of the worker, before any other import); what is timed
is ``import torch``, then the import of the package under test (ours: ``import lite_compiler``,
which routes ``backend="lite"`` as the README says; aot_eager and torch's mode="lite" import
nothing more), then the first training step (forward + backward of tests/compiler_models.py's
model, float32, unannotated), which includes ``torch.compile`` and every module torch imports
lazily on the way. *Total* is their sum: what a user waits for from ``import torch`` to the
first result. Interpreter start-up (before the first statement) is the same for every variant
and not counted.

Variants (one process each):

* ``aot_eager``: ``torch.compile(model, backend="aot_eager")``;
* ``ours``: ``import lite_compiler`` then ``torch.compile(model, backend="lite")``;
* ``ours_gc_not_deferred``: ``ours`` with ``LITE_GUARD_DEFER_GC=0``: the interpreter's full
  garbage collections run where CPython's thresholds put them, as they do for aot_eager (by
  default lite mode defers them while it imports and compiles: lite_compiler/gc_deferral.py),
  so the row shows what the rest of ours costs against aot_eager;
* ``ours_entry_point``: ``torch.compile(model, backend="lite")`` with no import: Dynamo loads our
  backend through its ``torch_dynamo_backends`` entry point inside the first call;
* ``ours_cold_registry``: ``ours`` with ``LITE_GUARD_CACHE_DIR`` pointed at a new empty
  directory, so the registry is parsed and validated from its TOML files (see
  docs/first-call.md: the validated registry is cached per user, authenticated, like the lint
  cache; after the first process on a machine every process reads it);
* ``upstream_lite``: torch's own ``torch.compile(model, mode="lite")``.

Bytecode: the worker processes may write ``__pycache__`` (PYTHONDONTWRITEBYTECODE is removed
from their environment), and one uncounted warm-up process per variant runs first. torch's
modules come precompiled with the wheel and pip compiles an installed lite-guard's modules at
install time; without this the editable checkout's ~25 modules would be compiled from source
in every process (about 40 ms on this machine), a cost no installed package pays.

The other variants of ours use one registry cache directory of the run's own, filled by the
warm-up (in the user cache, other sessions' processes on the shared machine could push the
entry out).

Samples are interleaved (round r runs every variant of every model once, in an order rotated
each round) so a load spike on the shared machine hits all variants alike; the load average is
recorded before every sample. Minimum and median over the rounds; the ratios use the minimum
(noise only adds) and the median is shown beside it. Workers run with OMP_NUM_THREADS=1 and
TORCHINDUCTOR_COMPILE_THREADS=1, as bench/compile_zoo.py's do.
"""

import time

_T0 = time.perf_counter()  # the worker's clock: before any other import (torch's above all)
_CPU0 = time.process_time()  # and its CPU time (less sensitive to other sessions' load)

import gc  # noqa: E402

_FULL_GC: list[float] = []  # seconds of each full (oldest-generation) collection in this process


def _watch_full_collections(phase: str, info: dict) -> None:
    if info["generation"] == 2:
        _FULL_GC.append(-time.perf_counter() if phase == "start" else time.perf_counter() + _FULL_GC.pop())


gc.callbacks.append(_watch_full_collections)

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SECTION = "First call including import (CPU)"  # the BENCHMARKS.md section it owns
VARIANTS = ("aot_eager", "ours", "ours_gc_not_deferred", "ours_entry_point", "ours_cold_registry",
            "upstream_lite")
MODELS = ("llama", "mlp", "convnet", "moe")
LABELS = {
    "aot_eager": "aot_eager",
    "ours": "ours `backend=\"lite\"` (after `import lite_compiler`)",
    "ours_entry_point": "ours `backend=\"lite\"`, no import (entry point)",
    "ours_gc_not_deferred": "ours, full collections not deferred (`LITE_GUARD_DEFER_GC=0`)",
    "ours_cold_registry": "ours, registry cache empty too",
    "upstream_lite": "torch `mode=\"lite\"`",
}


# ---- the worker: one variant, one model, this fresh process ------------------------------------

def worker(variant: str, model_name: str) -> dict:
    import torch

    after_torch, cpu_after_torch = time.perf_counter(), time.process_time()
    sys.path.insert(0, str(REPO))
    if variant in ("ours", "ours_cold_registry", "ours_gc_not_deferred"):
        import lite_compiler  # noqa: F401
    after_package, cpu_after_package = time.perf_counter(), time.process_time()
    from tests.compiler_models import build, run_step

    model, inputs = build(model_name)
    # building the model is not compile work: left out of the total
    built, cpu_built = time.perf_counter(), time.process_time()
    if variant == "aot_eager":
        compiled = torch.compile(model, backend="aot_eager")
    elif variant == "upstream_lite":
        compiled = torch.compile(model, mode="lite")
    else:
        compiled = torch.compile(model, backend="lite")
    run_step(model, inputs, compiled, train=True)
    done, cpu_done = time.perf_counter(), time.process_time()
    cpu = cpu_done - _CPU0  # the model build is inside this one (same for all variants)
    ledger = None
    if variant.startswith("ours"):
        last = sys.modules["lite_compiler"].last_ledger()
        ledger = len(last) if last is not None else None
    return {
        "variant": variant, "model": model_name,
        "torch_import_s": after_torch - _T0, "package_import_s": after_package - after_torch,
        "first_call_s": done - built,
        "total_s": (after_package - _T0) + (done - built), "cpu_s": cpu,
        # The clock: from before the import of the package under test (torch's own
        # import is the same work for every variant, and only adds its noise).
        "from_package_s": (after_package - after_torch) + (done - built),
        "cpu_from_package_s": (cpu_after_package - cpu_after_torch) + (cpu_done - cpu_built),
        "inductor_modules": sum(1 for m in sys.modules if m.startswith("torch._inductor")),
        "ledger_rows": ledger,
        "full_gc": len(_FULL_GC), "full_gc_s": sum(_FULL_GC),
    }


def worker_import() -> dict:
    """``import lite_compiler`` alone, after what aot_eager imports too (torch, torch._dynamo)."""
    import torch
    import torch._dynamo  # noqa: F401  (every torch.compile imports it: not ours to count)

    sys.path.insert(0, os.environ.get("FIRST_CALL_SOURCE", str(REPO)))
    start = time.perf_counter()
    import lite_compiler  # noqa: F401

    return {"import_s": time.perf_counter() - start}


IMPORT_CASES = {
    "bytecode + registry cache (as installed, after first use)": {},
    "registry cache empty": {"cold_registry": True},
    "no bytecode (compiled from source), registry cache warm": {"no_bytecode": True},
}


def measure_import(repeats: int, log) -> dict:
    """Min and median of ``import lite_compiler`` in fresh processes, per IMPORT_CASES entry."""
    import shutil

    out: dict = {case: [] for case in IMPORT_CASES}
    with tempfile.TemporaryDirectory(prefix="first_call_import_") as tmp:
        # A copy of the two packages with no __pycache__, imported first with
        # PYTHONDONTWRITEBYTECODE: only lite-guard is compiled from source, torch keeps its .pyc.
        source = Path(tmp) / "source"
        for package in ("lite_guard", "lite_compiler"):
            shutil.copytree(REPO / package, source / package,
                            ignore=shutil.ignore_patterns("__pycache__"))
        for rnd in range(-1, repeats):  # round -1: warm-up (bytecode, registry cache), not counted
            for case, how in IMPORT_CASES.items():
                env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
                if how.get("no_bytecode"):
                    env["FIRST_CALL_SOURCE"] = str(source)
                    env["PYTHONDONTWRITEBYTECODE"] = "1"
                env["LITE_GUARD_CACHE_DIR"] = str(Path(tmp) / (f"lg-{rnd}" if how.get("cold_registry")
                                                                else "lite-guard-cache"))
                run = subprocess.run([sys.executable, __file__, "--worker-import"], capture_output=True,
                                     text=True, env=env, cwd=REPO)
                if run.returncode != 0 or rnd < 0:
                    continue
                value = json.loads(run.stdout.strip().splitlines()[-1])["import_s"]
                out[case].append(value)
                log(f"import round {rnd} {case}: {value * 1e3:.0f} ms")
    return {case: {"min": min(v), "median": statistics.median(v), "n": len(v)}
            for case, v in out.items() if v}


# ---- the driver --------------------------------------------------------------------------------

def _spawn(variant: str, model: str, tmp: Path, sample: int) -> dict:
    fresh = tmp / f"{model}-{variant}-{sample}"
    # Bytecode is written and read as for any installed package (pip compiles it at install);
    # PYTHONDONTWRITEBYTECODE, which this environment sets, would make every process compile
    # lite-guard's modules from source again while torch's come precompiled (see the docstring).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env = {**env, "TORCHINDUCTOR_CACHE_DIR": str(fresh / "inductor"),
           "TRITON_CACHE_DIR": str(fresh / "triton"), "OMP_NUM_THREADS": "1",
           "TORCHINDUCTOR_COMPILE_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    # The run's own registry cache, filled by the warm-up (other sessions' processes on the
    # shared machine write entries to the user cache too); empty for ours_cold_registry.
    env["LITE_GUARD_CACHE_DIR"] = str(fresh / "lite-guard") if variant == "ours_cold_registry" \
        else str(tmp / "lite-guard-cache")
    if variant == "ours_gc_not_deferred":
        env["LITE_GUARD_DEFER_GC"] = "0"
    load = os.getloadavg()[0]
    run = subprocess.run([sys.executable, __file__, "--worker", variant, model],
                         capture_output=True, text=True, env=env, cwd=REPO)
    if run.returncode != 0:
        lines = [line for line in run.stderr.splitlines() if line.strip()]
        return {"variant": variant, "model": model, "error": lines[-1] if lines else "?", "load": load}
    return {**json.loads(run.stdout.strip().splitlines()[-1]), "load": load}


def measure(models: tuple[str, ...], repeats: int, log,
            variants: tuple[str, ...] = VARIANTS) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="first_call_") as tmp:
        # One process of each variant first, not counted: it fills the per-user registry cache
        # and writes the bytecode of the modules it imports, as installing lite-guard and any
        # earlier use on the machine would have.
        for variant in variants:
            _spawn(variant, models[0], Path(tmp), -1)
        for rnd in range(repeats):
            for model in models:
                shift = rnd % len(variants)
                for variant in variants[shift:] + variants[:shift]:
                    row = _spawn(variant, model, Path(tmp), rnd)
                    rows.append(row)
                    log(f"round {rnd} {model:8} {variant:18} " + (
                        f"FAILED: {row['error']}" if "error" in row else
                        f"total {row['total_s']:6.2f} s (torch {row['torch_import_s']:.2f},"
                        f" package {row['package_import_s']:.2f}, first call"
                        f" {row['first_call_s']:.2f})  load {row['load']:.1f}"))
    return rows


def summarize(rows: list[dict]) -> dict:
    out: dict = {}
    for row in rows:
        if "error" in row:
            out.setdefault((row["model"], row["variant"]), {"error": row["error"]})
            continue
        cell = out.setdefault((row["model"], row["variant"]), {"samples": []})
        if "samples" in cell:
            cell["samples"].append(row)
    for cell in out.values():
        if "samples" not in cell:
            continue
        samples = cell.pop("samples")
        for key in ("total_s", "cpu_s", "torch_import_s", "package_import_s", "first_call_s",
                    "from_package_s", "cpu_from_package_s", "full_gc", "full_gc_s"):
            values = [s[key] for s in samples if key in s]
            if not values:
                continue
            cell[key] = {"min": min(values), "median": statistics.median(values), "n": len(values)}
        cell["inductor_modules"] = samples[0]["inductor_modules"]
    return out


def render(rows: list[dict], meta: dict) -> tuple[str, dict]:
    cells = summarize(rows)
    models = meta["models"]
    loads = [r["load"] for r in rows]
    lines = [
        "What a user waits for to the first training step's result, on two clocks: from before "
        "the import of the package under test (issue #13's clock: the import of `lite_compiler` "
        "+ the first call: `torch.compile`, trace, compile, run, backward), and from before "
        "`import torch` (*total*: `import torch` too, the same work for every variant, which adds "
        "its own noise). Every sample is a fresh process with "
        "empty `TORCHINDUCTOR_CACHE_DIR` and `TRITON_CACHE_DIR`. *CPU s*: the process's CPU time "
        "over the same span (`time.process_time`, min; the total's also counts the model build), "
        "which other sessions' load disturbs less than wall time. "
        "*Full GCs*: the process's full (oldest-generation) garbage collections from its start to "
        "the first result, median count and seconds (`gc.callbacks`); by default lite mode defers "
        "them while it imports and compiles (lite_compiler/gc_deferral.py), the "
        "`LITE_GUARD_DEFER_GC=0` row runs them where CPython puts them, as aot_eager does. "
        "Variants are interleaved (every round runs each once, order rotated), "
        f"{meta['repeats']} rounds; min (median) over the rounds; ratios are of the minimum, vs aot_eager "
        "(in brackets: of the medians). Before the rounds, one uncounted process per variant writes "
        "the bytecode of what it imports and fills lite-guard's per-user registry cache, as "
        "installing lite-guard (pip compiles bytecode) and any earlier use would; the import "
        "split below shows what each costs when absent, and the *registry cache empty too* row "
        "the whole first call without it.",
        "",
        f"Produced by `.venv/bin/python bench/compile_zoo_first_call.py {meta['command']}` "
        f"({meta['elapsed_s']:.0f} s) at {meta['code']}{meta['where']} on {meta['machine']},"
        f" {meta['cpus']} CPUs, "
        f"Python {meta['python']}, torch {meta['torch']}, `OMP_NUM_THREADS=1 "
        "TORCHINDUCTOR_COMPILE_THREADS=1`; load average (1 min) before each sample: "
        f"min {min(loads):.1f}, median {statistics.median(loads):.1f}, max {max(loads):.1f} "
        f"(the machine is shared with other sessions; {meta['load_before']} before the run, "
        f"{meta['load_after']} after, as 1/5/15 min).",
        "",
        "| model | variant | package import + first call s | / aot_eager | its CPU s (/ aot_eager) |"
        " total s | / aot_eager | `import torch` s | package import s | first call s |"
        " CPU s (/ aot_eager) | full GCs: n, s (median) | `torch._inductor` modules loaded |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    summary: dict = {}
    for model in models:
        base = cells.get((model, "aot_eager"), {})
        for variant in VARIANTS:
            cell = cells.get((model, variant))
            if cell is None:
                continue
            if "error" in cell:
                lines.append(f"| {model} | {LABELS[variant]} | **fails**: {cell['error'][:120]} |"
                             " | | | | | | |")
                continue

            def mm(key: str) -> str:
                return f"{cell[key]['min']:.2f} ({cell[key]['median']:.2f})"

            def ratios(key: str) -> tuple[float, float] | None:
                if key not in base or key not in cell:
                    return None
                return (cell[key]["min"] / base[key]["min"], cell[key]["median"] / base[key]["median"])

            def ratio_text(key: str) -> str:
                got = ratios(key)
                return f"{got[0]:.3f}× ({got[1]:.3f}×)" if got else "-"

            def cpu_text(key: str) -> str:
                got = ratios(key)
                return f"{cell[key]['min']:.2f}" + (f" ({got[0]:.3f}×)" if got else "") \
                    if key in cell else "-"

            if ratios("from_package_s") and ratios("total_s"):
                summary[(model, variant)] = {
                    "from_package": ratios("from_package_s"),
                    "cpu_from_package": ratios("cpu_from_package_s"), "total": ratios("total_s"),
                    "cpu": ratios("cpu_s")}
            gcs = (f"{cell['full_gc']['median']:.0f}, {cell['full_gc_s']['median']:.2f}"
                   if "full_gc" in cell else "-")
            package_clock = mm("from_package_s") if "from_package_s" in cell else "-"
            lines.append(f"| {model} | {LABELS[variant]} | {package_clock} |"
                         f" {ratio_text('from_package_s')} | {cpu_text('cpu_from_package_s')} |"
                         f" {mm('total_s')} | {ratio_text('total_s')} |"
                         f" {mm('torch_import_s')} | {mm('package_import_s')} | {mm('first_call_s')} |"
                         f" {cpu_text('cpu_s')} | {gcs} | {cell['inductor_modules']} |")
    lines.append("")
    verdicts = []
    for model in models:
        got = summary.get((model, "ours"))
        if got is None:
            continue
        # Met only if wall time and CPU time both say so: under sustained load a wall-time
        # minimum can miss every quiet moment of one variant (CPU time is disturbed far less).
        wall, cpu, total = got["from_package"], got["cpu_from_package"], got["total"]
        met = wall[0] <= 1.0 and (cpu is None or cpu[0] <= 1.0)
        cpu_note = f", CPU time {cpu[0]:.3f}×" if cpu is not None else ""
        verdicts.append(f"{model} {wall[0]:.3f}× (median {wall[1]:.3f}×){cpu_note}:"
                        f" {'met' if met else '**not met**'}; from before `import torch`:"
                        f" {total[0]:.3f}× (median {total[1]:.3f}×)")
    imports = meta.get("imports") or {}
    if imports:
        lines += ["`import lite_compiler` alone, in fresh processes that imported `torch` and "
                  "`torch._dynamo` first (aot_eager's first call imports those too), min (median) "
                  "of the same number of processes:", "",
                  "| case | `import lite_compiler` ms |", "|---|---|"]
        lines += [f"| {case} | {cell['min'] * 1e3:.0f} ({cell['median'] * 1e3:.0f}) |"
                  for case, cell in imports.items()]
        lines.append("")
    lines.append("Goal (issue #13): ours' CPU first call including import ≤ 1.0× aot_eager's "
                 "(minimum over the rounds, the clock started before the package's import): "
                 + "; ".join(verdicts) + ".")
    if statistics.median(loads) > (meta.get("cpus") or 1):
        lines += ["", f"**Overloaded run**: the median load ({statistics.median(loads):.1f}) was above"
                  f" the {meta.get('cpus')} CPUs, so the wall-time minima may not have caught a quiet"
                  " moment of every variant; trust the CPU-time column more than the wall-time"
                  " ratios here."]
    return "\n".join(lines), {f"{m}/{v}": r for (m, v), r in summary.items()}


def _where(repo: Path) -> str:
    """Say so when the run is from a git worktree (a frozen copy of the commit: other sessions'
    edits to the shared checkout cannot change the code under test mid-run)."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], capture_output=True, text=True, cwd=repo).stdout.strip()

    common, own = git("rev-parse", "--git-common-dir"), git("rev-parse", "--git-dir")
    if common and own and Path(repo, common).resolve() != Path(repo, own).resolve():
        return " (run from a `git worktree` of that commit)"
    return ""


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        print(json.dumps(worker(sys.argv[2], sys.argv[3])))
        return 0
    if len(sys.argv) > 1 and sys.argv[1] == "--worker-import":
        print(json.dumps(worker_import()))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="rounds (fresh processes per cell)")
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS),
                        help="a subset (aot_eager is always measured: the ratios are to it)")
    parser.add_argument("--import-repeats", type=int, default=None,
                        help="fresh processes per case of the import split (default: --repeats)")
    parser.add_argument("--write", action="store_true", help="update BENCHMARKS.md")
    parser.add_argument("--json", default=None, help="also write the raw samples here")
    args = parser.parse_args()
    started = time.perf_counter()
    load_before = "/".join(f"{x:.1f}" for x in os.getloadavg())
    log = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    variants = tuple(v for v in VARIANTS if v == "aot_eager" or v in args.variants)
    rows = measure(tuple(args.models), args.repeats, log, variants)
    imports = measure_import(args.repeats, log) if args.import_repeats is None else \
        measure_import(args.import_repeats, log)
    torch_version = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__)"],
                                   capture_output=True, text=True).stdout.strip()
    sys.path.insert(0, str(REPO))
    from bench.markdown_section import code_state, replace_section

    meta = {"elapsed_s": time.perf_counter() - started, "load_before": load_before,
            "load_after": "/".join(f"{x:.1f}" for x in os.getloadavg()),
            "machine": platform.machine(), "cpus": os.cpu_count(),
            "python": platform.python_version(), "torch": torch_version,
            "repeats": args.repeats, "models": list(args.models), "code": code_state(REPO),
            "imports": imports, "command": " ".join(sys.argv[1:]), "where": _where(REPO)}
    body, summary = render(rows, meta)
    print(f"## {SECTION}\n\n{body}")
    if args.json:
        Path(args.json).write_text(json.dumps({"meta": meta, "summary": summary, "samples": rows,
                                               "imports": imports},
                                              indent=2))
    if args.write:
        replace_section(REPO / "BENCHMARKS.md", SECTION, body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
