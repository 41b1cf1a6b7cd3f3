"""The upstream lite-mode example on a GPU: sin -> flex_attention (score_mod, block mask) -> cos.

Checks (exit 1 if one fails):
  * our lite compiler compiles the annotated flex_attention region with Triton;
  * with the region NOT annotated, lite is bitwise equal to aot_eager (output and input grad).
Measures, side by side in one run: first call (compile) and steady step time (forward+backward),
and peak memory, for eager, aot_eager, torch's own mode="lite", ours, and default Inductor.

    python bench/gpu_flex_attention.py --json results.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import torch
import torch.fx.traceback as fx_traceback
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

import lite_compiler

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
    fn = build()
    step(fn, x)
    torch.cuda.synchronize()
    first_call = time.perf_counter() - started
    for _ in range(5):
        x.grad = None
        step(fn, x)
    torch.cuda.synchronize()
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
    return {"variant": name, "first_call_s": round(first_call, 3),
            "step_ms": round(statistics.median(times), 4),
            "peak_mem_mib": round(torch.cuda.max_memory_allocated() / 2**20, 1)}


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
    torch._dynamo.reset()
    lite_compiler.clear_ledgers()
    step(torch.compile(annotated, backend="lite", fullgraph=True), make_input())
    codes = [code for ledger in lite_compiler.all_ledgers("lite") for code in ledger.region_code.values()]
    return any("triton" in code and "flex_attention" in code for code in codes)


def main() -> int:
    global BLOCK_MASK
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--json", default=None, help="write the results here")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: this benchmark needs a GPU")
        return 2
    BLOCK_MASK = create_block_mask(_mask_mod, None, None, SEQ, SEQ, device="cuda")
    checks = {"region_compiled_with_triton": region_uses_triton(),
              "unannotated_bitwise_equal_to_aot_eager": bitwise_unannotated()}
    compile_ = upstream_compile()
    rows = [
        measure("eager", lambda: plain, args.iters),
        measure("aot_eager", lambda: compile_(plain, backend="aot_eager", fullgraph=True), args.iters),
        measure("upstream mode=lite", lambda: compile_(annotated, mode="lite", fullgraph=True),
                args.iters),
        measure("lite-guard lite", lambda: torch.compile(annotated, backend="lite", fullgraph=True),
                args.iters),
        measure("default inductor", lambda: compile_(plain, fullgraph=True), args.iters),
    ]
    report = {"torch": torch.__version__, "device": torch.cuda.get_device_name(), "checks": checks,
              "rows": rows}
    print(json.dumps(report, indent=2))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(report, handle, indent=2)
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
