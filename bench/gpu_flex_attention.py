"""The upstream lite-mode example on a GPU: sin -> flex_attention (score_mod, block mask) -> cos.

Checks (exit 1 if one fails):
  * our lite compiler compiles the annotated flex_attention region with Triton;
  * with the region NOT annotated, lite is bitwise equal to aot_eager (output and input grad).
Measures first call (compile) and steady step time (forward+backward) and peak memory for eager,
aot_eager, torch's own mode="lite", ours, ours + CUDA graphs, and default Inductor: each variant
(and the checks) in its own fresh process with empty Inductor/Triton caches, so no variant's first
call runs after the region was already compiled.

    python bench/gpu_flex_attention.py --rounds 3 --json results.json

The step is host-bound (~1 ms): run it alone on the machine, not beside another benchmark, and
with --rounds, which interleaves the variants' processes so drift hits every variant alike.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.fx.traceback as fx_traceback
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script
from bench.steady_cpu import pin_to_one_cpu  # noqa: E402

# lite_compiler is NOT imported here: a variant that does not use it must not pay for (or be
# warmed up by) its import, and ours imports it inside its first-call clock (measure()).

SEQ, DIM = 12 * 64, 64


def _squared(score, b, h, m, n):
    return score * score


def _mask_mod(b, h, q, k):
    return q >= 0


BLOCK_MASK = None


def annotated(x):
    x = torch.sin(x)
    with fx_traceback.annotate({"compile_with_inductor": 0}):
        x = flex_attention(x, x, x, block_mask=BLOCK_MASK, score_mod=_squared)
    return torch.cos(x)


def plain(x):
    x = torch.sin(x)
    x = flex_attention(x, x, x, block_mask=BLOCK_MASK, score_mod=_squared)
    return torch.cos(x)


def upstream_compile():
    """torch.compile as torch ships it (lite_compiler wraps it to route mode="lite" to us)."""
    return getattr(torch.compile, "__wrapped__", torch.compile)


def make_input(seed: int = 0) -> torch.Tensor:
    generator = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(1, 1, SEQ, DIM, device="cuda", dtype=torch.bfloat16, generator=generator,
                       requires_grad=True)


def step(fn, x):
    out = fn(x)
    out.sum().backward()
    return out


def measure(name: str, build, iters: int) -> dict:
    torch._dynamo.reset()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    x = make_input()
    started = time.perf_counter()
    package_import = 0.0
    if name.startswith("lite-guard"):  # the package under test: imported inside the clock
        import lite_compiler  # noqa: F401

        package_import = time.perf_counter() - started
    fn = build()
    step(fn, x)
    torch.cuda.synchronize()
    first_call = time.perf_counter() - started
    cpu = pin_to_one_cpu()  # after the compile: every variant's steady state on the same core
    for _ in range(5):
        x.grad = None
        step(fn, x)
    torch.cuda.synchronize()
    run_peak = torch.cuda.max_memory_allocated()  # the whole run's so far; then the steps' own
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(iters):
        x.grad = None
        begin = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        begin.record()
        step(fn, x)
        end.record()
        torch.cuda.synchronize()
        times.append(begin.elapsed_time(end))
    host = []
    for _ in range(iters):
        x.grad = None
        begin = time.perf_counter()
        step(fn, x)
        host.append((time.perf_counter() - begin) * 1e3)  # no sync: the host's own time
    torch.cuda.synchronize()
    began = time.perf_counter()  # back to back, one sync at the end: a training loop's pace
    for _ in range(iters):
        x.grad = None
        step(fn, x)
    torch.cuda.synchronize()
    loop_ms = (time.perf_counter() - began) * 1e3 / iters
    # first_call_s includes package_import_s (the clock starts before the import).
    row = {"variant": name, "first_call_s": round(first_call, 3),
           "package_import_s": round(package_import, 3),
           "step_ms": round(statistics.median(times), 4),
           "host_ms": round(statistics.median(host), 4),
           "loop_ms": round(loop_ms, 4), "cpu": cpu,
           "peak_mem_mib": round(max(run_peak, torch.cuda.max_memory_allocated()) / 2**20, 1),
           "steps_peak_mem_mib": round(torch.cuda.max_memory_allocated() / 2**20, 1)}
    if PROFILE:
        row["host_profile"] = host_profile(fn, x)
    return row


PROFILE = False  # --profile: where a step's host time goes (cProfile) and its kernel count


def host_profile(fn, x, steps: int = 100, top: int = 25) -> dict:
    """Python functions by own time per step (cProfile), and CUDA kernels launched per step."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(steps):
        x.grad = None
        step(fn, x)
    profiler.disable()
    torch.cuda.synchronize()
    stats = pstats.Stats(profiler).stats
    rows = sorted(stats.items(), key=lambda item: -item[1][2])[:top]
    functions = [{"function": f"{'/'.join(file.rsplit('/', 2)[-2:])}:{line}({func})",
                  "calls_per_step": round(calls / steps, 2), "own_us_per_step": round(own / steps * 1e6, 1),
                  "cumulative_us_per_step": round(cumulative / steps * 1e6, 1)}
                 for (file, line, func), (_, calls, own, cumulative, _) in rows]
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(10):
            x.grad = None
            step(fn, x)
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    names: dict[str, int] = {}
    busy: dict[str, float] = {}  # GPU time per kernel name, microseconds over the 10 steps
    for event in kernels:
        names[event.name[:80]] = names.get(event.name[:80], 0) + 1
        busy[event.name[:80]] = busy.get(event.name[:80], 0.0) + event.time_range.elapsed_us()
    span = (max(e.time_range.end for e in kernels) - min(e.time_range.start for e in kernels)) if kernels else 0
    return {"python_calls_per_step": round(sum(v[1] for v in stats.values()) / steps, 1),
            "top_own_time": functions, "kernels_per_step": len(kernels) / 10,
            "kernel_us_per_step": round(sum(busy.values()) / 10, 1),
            "gpu_span_us_per_step": round(span / 10, 1),  # first kernel's start to last's end
            "kernel_names": {name: count / 10 for name, count in sorted(names.items(), key=lambda i: -i[1])},
            "kernel_us": {name: round(us / 10, 1) for name, us in sorted(busy.items(), key=lambda i: -i[1])}}


def bitwise_unannotated() -> bool:
    results = []
    for backend in ("aot_eager", "lite"):
        torch._dynamo.reset()
        x = make_input(1)
        out = step(torch.compile(plain, backend=backend, fullgraph=True), x)
        results.append((out.detach(), x.grad))
    (out_a, grad_a), (out_b, grad_b) = results
    return torch.equal(out_a, out_b) and torch.equal(grad_a, grad_b)


def region_uses_triton() -> bool:
    import lite_compiler

    torch._dynamo.reset()
    lite_compiler.clear_ledgers()
    step(torch.compile(annotated, backend="lite", fullgraph=True), make_input())
    codes = [code for ledger in lite_compiler.all_ledgers("lite") for code in ledger.region_code.values()]
    return any("triton" in code and "flex_attention" in code for code in codes)


VARIANTS = {  # default mode and ours + CUDA graphs first: what the goal compares
    "default inductor": lambda: upstream_compile()(plain, fullgraph=True),
    "lite-guard lite + cudagraphs": lambda: torch.compile(
        annotated, backend="lite", fullgraph=True, options={"cudagraphs": True}),
    "lite-guard lite": lambda: torch.compile(annotated, backend="lite", fullgraph=True),
    "aot_eager": lambda: upstream_compile()(plain, backend="aot_eager", fullgraph=True),
    "upstream mode=lite": lambda: upstream_compile()(annotated, mode="lite", fullgraph=True),
    "lite-guard lite + bitwise fusion": lambda: torch.compile(
        annotated, backend="lite", fullgraph=True, options={"bitwise_fusion": True}),
    "lite-guard lite + cudagraphs + bitwise fusion": lambda: torch.compile(
        annotated, backend="lite", fullgraph=True,
        options={"cudagraphs": True, "bitwise_fusion": True}),
    "eager": lambda: plain,
}


def worker(what: str, iters: int) -> dict:
    """One variant (or the checks) in this fresh process; nothing was compiled before it."""
    global BLOCK_MASK
    BLOCK_MASK = create_block_mask(_mask_mod, None, None, SEQ, SEQ, device="cuda")
    if what == "checks":
        return {"region_compiled_with_triton": region_uses_triton(),
                "unannotated_bitwise_equal_to_aot_eager": bitwise_unannotated()}
    row = measure(what, VARIANTS[what], iters)
    if what.startswith("lite-guard"):
        import lite_compiler

        rows = [e for ledger in lite_compiler.all_ledgers("lite") for e in ledger.entries
                if e.kind == "cudagraphs"]
        row["cudagraphs"] = [f"{e.graph}: {'captured' if e.allowed else 'skipped: ' + e.reason}"
                             for e in rows]
    return row


def run_child(what: str, iters: int, timeout: float) -> dict:
    """``what`` in a fresh process with empty Inductor and Triton caches."""
    import os
    import subprocess
    import tempfile

    cache = tempfile.mkdtemp(prefix="flex_cache_")
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache, "TRITON_CACHE_DIR": os.path.join(cache, "triton")}
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
        out = handle.name
    began = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, __file__, "--worker", what, "--iters", str(iters),
                               "--result", out, *(["--profile"] if PROFILE else [])], env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"variant": what, "error": f"timed out after {timeout:.0f} s"}
    if proc.returncode != 0 or not os.path.getsize(out):
        return {"variant": what, "error": " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])}
    with open(out) as handle:
        result = json.load(handle)
    result["process_s"] = round(time.perf_counter() - began, 2)
    return result


def _commit() -> str:
    import os
    import subprocess

    if os.environ.get("GPU_BENCH_COMMIT"):  # a copy without .git: the caller says what it holds
        return os.environ["GPU_BENCH_COMMIT"]
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--json", default=None, help="write the results here")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated subset")
    parser.add_argument("--timeout", type=float, default=180, help="per process, seconds")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run every variant this many times, interleaved (a fresh process each)")
    parser.add_argument("--profile", action="store_true",
                        help="also record each variant's host profile (cProfile) and kernels per step")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: this benchmark needs a GPU")
        return 2
    global PROFILE
    PROFILE = args.profile
    if args.worker:
        with open(args.result, "w") as handle:
            json.dump(worker(args.worker, args.iters), handle)
        return 0
    # Every variant and the checks each run in their own fresh process, so no first call is
    # measured after something else compiled (and cached) the same region. The report is
    # written after every process, so a run stopped by a time limit keeps what it measured.
    report = {"benchmark": "flex_attention", "torch": torch.__version__,
              "device": torch.cuda.get_device_name(), "commit": _commit(),
              "command": " ".join(["python bench/gpu_flex_attention.py", *sys.argv[1:]]),
              "iters": args.iters, "checks": {}, "rows": []}

    def write() -> None:
        if args.json:
            with open(args.json, "w") as handle:
                json.dump(report, handle, indent=2)

    report["checks"] = run_child("checks", args.iters, args.timeout)
    write()
    report["rounds"] = args.rounds
    for round_number in range(1, args.rounds + 1):  # interleaved: machine drift hits every variant
        for name in args.variants.split(","):
            report["rows"].append({**run_child(name, args.iters, args.timeout), "round": round_number})
            print(json.dumps(report["rows"][-1]), flush=True)
            write()
    print(json.dumps(report["checks"]), flush=True)
    checks = report["checks"]
    return 0 if checks and all(v is True for k, v in checks.items() if k != "process_s") else 1


if __name__ == "__main__":
    sys.exit(main())
