"""Guard overhead: the guard's own work (hooks in and out, pass decisions, effect checks) as a
share of lite compile time, and run-time cost, on the annotated CPU zoo (regions compiled).

Usage: .venv/bin/python bench/guard_overhead.py [--repeats R] [--models NAME ...] [--json F]

One fresh process per model. In it: a warm-up compile (lazy imports paid), then R cold compiles
(dynamo reset, FX graph cache off) of a training step with the guard on, each timed end to end,
while every guard function is timed from the inside (outermost call only, so nested checks are
not counted twice): hook install/uninstall, guard.check, every fingerprint and effect check
(graph fingerprints, partition value numbers, schedule order, wrapper lines). Then R compiles
with the guard off (no sessions, effect functions no-ops) for an A/B view, and steady training
steps of the guard-on and guard-off compiles in alternating blocks (run time: the compiled
graphs contain no guard code, so this is noise around 0).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("mlp", "llama", "convnet", "moe")


def _own_time_wrappers() -> list[float]:
    """Wrap every guard function so its exclusive wall time adds up in the returned cell."""
    import lite_compiler.backend as backend
    import lite_compiler.custom_passes as custom_passes
    import lite_compiler.decomposition as decomposition
    import lite_compiler.effects as effects
    import lite_compiler.guard as guard
    import lite_compiler.hooks as hooks
    import lite_compiler.provenance as provenance
    import lite_compiler.region_config as region_config
    import lite_compiler.regions as regions
    try:
        import lite_compiler.kernel_libraries as kernel_libraries
    except ImportError:  # an older tree
        kernel_libraries = None

    spent, depth = [0.0, 0.0], [0]  # wall, this thread's CPU

    def timing(fn):
        def wrapper(*args, **kwargs):
            if depth[0]:
                return fn(*args, **kwargs)
            depth[0] += 1
            start, cpu = time.perf_counter(), time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - start
                spent[1] += time.thread_time() - cpu
                depth[0] -= 1
        return wrapper

    for module, names in ((hooks, ("_install", "_uninstall")), (guard, ("check",)),
                          (effects, ("fingerprint", "outer_fingerprint", "_value_numbers",
                                     "check_schedule", "describe_change", "_scheduled_names",
                                     "check_outer_graph", "check_partition", "joint_before_partition",
                                     "check_lowering_input", "check_lowering_output", "traced_joint", "traced_inference")),
                          (backend, ("outer_fingerprint", "check_outer_graph", "check_partition",
                                     "joint_before_partition", "check_torch_code",
                                     "check_forward_is_graph_code", "check_call_path",
                                     "report_compile_callbacks")),
                          # the kernel libraries a region loads (lite_compiler/kernel_libraries.py)
                          (kernel_libraries, ("verified", "record")),
                          # provenance (lite_compiler/provenance.py), where each caller holds it
                          (provenance, ("foreign_identity", "check_code", "check_inductor_classes",
                                        "check_torch_code")),
                          (custom_passes, ("refuse_disallowed",)),
                          (regions, ("check_inductor_classes", "check_torch_code", "check_region_module",
                                     "check_cpp_compiler")),
                          (decomposition, ("check_region_decomposition",)),
                          (region_config, ("check_region_code",))):
        for name in names:
            if hasattr(module, name):  # an older tree (render a run of another commit)
                setattr(module, name, timing(getattr(module, name)))
    return spent


@contextlib.contextmanager
def _guard_off():
    """No guard session opened and no effect work: what the compile costs without the guard."""
    import lite_compiler.backend as backend
    from lite_compiler.backend import LiteCompiler

    saved = (LiteCompiler.active, backend.outer_fingerprint, backend.check_outer_graph,
             backend.check_partition, backend.joint_before_partition)
    LiteCompiler.active = lambda self, graph: contextlib.nullcontext()
    backend.outer_fingerprint = lambda *a, **k: ()
    backend.check_outer_graph = backend.check_partition = lambda *a, **k: None
    backend.joint_before_partition = lambda *a, **k: None
    try:
        yield
    finally:
        (LiteCompiler.active, backend.outer_fingerprint, backend.check_outer_graph,
         backend.check_partition, backend.joint_before_partition) = saved


def worker(model_name: str, repeats: int, steps: int) -> dict:
    sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]
    from bench.timing_registry import register_timing_wrapper

    # The timing wrappers stand in the guard's own functions (registered lite = "always").
    register_timing_wrapper(f"{__name__}:_own_time_wrappers.<locals>.timing.<locals>.wrapper",
                            "bench/guard_overhead.py times the guard's own functions; it only measures")
    import torch

    import lite_compiler
    from compiler_models import build, run_step

    torch._inductor.config.fx_graph_cache = False
    torch._functorch.config.enable_autograd_cache = False
    spent = _own_time_wrappers()

    def compile_once(guard_on: bool):
        torch._dynamo.reset()
        model, inputs = build(model_name, annotate=True)
        with contextlib.nullcontext() if guard_on else _guard_off():
            fn = torch.compile(model, backend="lite")
            spent[0] = spent[1] = 0.0
            start, cpu = time.perf_counter(), time.thread_time()
            run_step(model, inputs, fn, train=True)
            total, total_cpu = time.perf_counter() - start, time.thread_time() - cpu
        return (total, total_cpu), (spent[0], spent[1]), model, inputs, fn

    compile_once(True)  # warm-up: lazy imports
    compile_once(False)
    on, own, off, on_cpu, own_cpu, off_cpu = [], [], [], [], [], []
    for _ in range(repeats):
        (total, total_cpu), (guard_s, guard_cpu), *_ = compile_once(True)
        on.append(total)
        on_cpu.append(total_cpu)
        own.append(guard_s)
        own_cpu.append(guard_cpu)
        ledger = lite_compiler.last_ledger()
        (total, total_cpu), *_ = compile_once(False)
        off.append(total)
        off_cpu.append(total_cpu)
    # Run time: both compiled functions side by side, steps in alternating blocks.
    _, _, model_on, inputs_on, fn_on = compile_once(True)
    _, _, model_off, inputs_off, fn_off = compile_once(False)
    step_on, step_off = [], []
    for _ in range(5):
        run_step(model_on, inputs_on, fn_on, train=True)
        run_step(model_off, inputs_off, fn_off, train=True)
    for _ in range(max(1, steps // 10)):  # blocks of 10 steps, at least one
        for fn, model, inputs, out in ((fn_on, model_on, inputs_on, step_on),
                                       (fn_off, model_off, inputs_off, step_off)):
            for _ in range(10):
                start = time.perf_counter()
                run_step(model, inputs, fn, train=True)
                out.append(time.perf_counter() - start)
    best = min(range(repeats), key=lambda i: on[i])
    return {
        "model": model_name,
        "compile_on_s": min(on), "compile_off_s": min(off),
        "guard_own_s": own[best], "guard_own_share": own[best] / on[best],
        "guard_own_share_median": statistics.median(o / t for o, t in zip(own, on)),
        "ab_delta_share": (min(on) - min(off)) / min(off),
        "compile_on_cpu_s": min(on_cpu), "compile_off_cpu_s": min(off_cpu),
        "ab_delta_cpu_share": (min(on_cpu) - min(off_cpu)) / min(off_cpu),
        "guard_own_cpu_share_median": statistics.median(o / t for o, t in zip(own_cpu, on_cpu)),
        "step_on_ms": statistics.median(step_on) * 1e3, "step_off_ms": statistics.median(step_off) * 1e3,
        "ledger_rows": len(ledger) if ledger else 0,
        "regions": len(ledger.region_code) if ledger else 0,
        "hooks_installed_after": __import__("lite_compiler.hooks").hooks.installed(),
    }


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return int(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=_positive, default=3)
    parser.add_argument("--steps", type=_positive, default=100, help="timed steps (blocks of 10)")
    parser.add_argument("--models", nargs="*", default=list(MODELS))
    parser.add_argument("--json", type=Path)
    parser.add_argument("--write", action="store_true", help="rewrite its BENCHMARKS.md section")
    parser.add_argument("--render-from", type=Path, help="write the section from a saved --json run")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.render_from:
        measured = _git("log", "-1", "--format=%h", "--", str(args.render_from))
        write_section(json.loads(args.render_from.read_text()), f"--json {args.render_from}", measured)
        return 0
    if args.worker:
        print(json.dumps(worker(args.worker, args.repeats, args.steps)))
        return 0
    env = {**os.environ, "TORCHINDUCTOR_COMPILE_THREADS": "1", "OMP_NUM_THREADS": "1"}
    rows = []
    for name in args.models:
        out = subprocess.run([sys.executable, __file__, "--worker", name, "--repeats", str(args.repeats),
                              "--steps", str(args.steps)], capture_output=True, text=True, env=env, cwd=ROOT)
        if out.returncode != 0:
            print(f"{name}: worker failed: {out.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
            return 1
        row = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(f"{name:8} compile {row['compile_on_s']:.3f} s (guard off {row['compile_off_s']:.3f} s,"
              f" A/B {row['ab_delta_share'] * 100:+.1f}%)  guard's own work {row['guard_own_s'] * 1e3:.1f} ms"
              f" = {row['guard_own_share'] * 100:.2f}% (median {row['guard_own_share_median'] * 100:.2f}%,"
              f" CPU time {row['guard_own_cpu_share_median'] * 100:.2f}%; CPU A/B"
              f" {row['ab_delta_cpu_share'] * 100:+.1f}%)"
              f"  step {row['step_on_ms']:.3f} ms vs {row['step_off_ms']:.3f} ms  rows {row['ledger_rows']}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    if args.write:
        write_section(rows, f"--repeats {args.repeats} --steps {args.steps} --write",
                      _git("rev-parse", "--short", "HEAD"))
    return 0


SECTION = "Guard overhead (CPU zoo, regions annotated)"


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, cwd=ROOT).stdout.strip()


def write_section(rows: list[dict], flags: str, measured: str) -> None:
    sys.path.insert(0, str(ROOT))
    from bench.markdown_section import replace_section

    lines = [f"Produced by `.venv/bin/python bench/guard_overhead.py {flags}` on the code of commit"
             f" {measured}, x86_64, 2 CPUs, torch 2.13.0+cpu. One fresh process per"
             " model; the guard's own work (hook install and removal, every pass decision, every"
             " fingerprint and effect check) is timed from inside, as a share of the compile's wall and"
             " CPU time (median of the repeats), provenance checks (monkeypatch, lowering,"
             " decomposition and config-code checks, the sweep of Inductor's classes) included."
             " The on/off A/B column and the step columns compare the guard on and off compiled in"
             " the same warm process (after one warm-up compile of each), not in fresh processes: on"
             " 2 shared cores the A/B is noise larger than the share being measured; the direct"
             " measure is the guard's own share.", "",
             "| model | guard's own share (CPU) | guard's own share (wall) | A/B on-off (CPU) |"
             " step on / off ms | ledger rows |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['guard_own_cpu_share_median'] * 100:.2f}% |"
                     f" {r['guard_own_share_median'] * 100:.2f}% | {r['ab_delta_cpu_share'] * 100:+.1f}% |"
                     f" {r['step_on_ms']:.3f} / {r['step_off_ms']:.3f} | {r['ledger_rows']} |")
    # Rendering a saved run: the provenance line names that run's commit, not HEAD.
    rendered = flags.startswith("--json ")
    replace_section(ROOT / "BENCHMARKS.md", SECTION, "\n".join(lines), measured=(
        f"Measured: `.venv/bin/python bench/guard_overhead.py --write` at commit `{measured}`"
        f" (rendered from {flags.split()[-1]})." if rendered else None))


if __name__ == "__main__":
    sys.exit(main())
