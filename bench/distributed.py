"""The "Distributed (gloo, CPU)" section of BENCHMARKS.md: the distributed example trained with
aot_eager and with lite mode in four settings, speed and bitwise agreement side by side.

Usage: .venv/bin/python bench/distributed.py [--steps N] [--write]
(about 2 minutes on 2 cores at 30 steps). The training is examples/distributed_train.py; the
comparison of every parameter and gradient at every step is tests/distributed_harness.py.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]  # spawned ranks inherit this sys.path

import distributed_harness as harness  # noqa: E402

from bench.markdown_section import replace_section  # noqa: E402

SECTION = "Distributed (gloo, CPU)"
CASES = (
    ("FSDP2, aot_eager run first", []),
    ("FSDP2, lite run first", ["--backends", "lite", "aot_eager"]),
    ("FSDP2 + TP (mesh dp=1 x tp=2)", ["--tp", "2"]),
    ("FSDP2, one region per block (`--regions`)", ["--regions"]),
)


def case_row(name: str, out: dict) -> str:
    if out.get("errors"):
        return f"| {name} | error | error | | {next(iter(out['errors'].values())).splitlines()[0]} |"
    a, lt = out["backends"]["aot_eager"], out["backends"]["lite"]
    steps = out["steps"]
    equal = sum(r["bitwise_equal"] for r in steps)
    tensors = sum(e["tensors"] for e in steps[0]["ranks"])
    first_diff = next((r["step"] for r in steps if not r["bitwise_equal"]), None)
    numerics = f"{equal}/{len(steps)} steps bitwise equal ({tensors} parameter and gradient tensors"
    numerics += f" over {len(steps[0]['ranks'])} ranks, and the loss)"
    if first_diff is not None:
        max_loss = max(e["loss_abs_diff"] for r in steps for e in r["ranks"])
        max_tensor = max(e["max_abs_diff"] for r in steps for e in r["ranks"])
        numerics += (f"; first difference at step {first_diff}, max abs diff loss {max_loss:.3g},"
                     f" parameters/gradients {max_tensor:.3g}")
    return (f"| {name} | {a['steps_per_s']:.1f} ({a['first_step_s']:.2f} s) |"
            f" {lt['steps_per_s']:.1f} ({lt['first_step_s']:.2f} s) | {len(lt['region_graphs'])} |"
            f" {numerics} |")


def step_row(row: dict) -> str:
    losses = " / ".join(f"{e['loss']['aot_eager']:.6f}" for e in row["ranks"])
    tensors = sum(e["tensors"] for e in row["ranks"])
    return f"| {row['step']} | {losses} | {tensors} | {'yes' if row['bitwise_equal'] else 'NO'} |"


def render(args: argparse.Namespace, rows: list[str], per_step: list[str], meta: dict) -> str:
    config = harness.parse_args(["--steps", str(args.steps)])
    return "\n".join([
        f"A llama-style debug model (dim {config.dim}, {config.layers} layers, {config.heads} heads,"
        f" vocab {config.vocab}, batch {config.batch} x seq {config.seq} per rank) trained"
        f" {args.steps} steps with AdamW under torch.distributed, gloo on CPU, world size 2"
        " (mp.spawn), FSDP2 (`fully_shard` per block and at the root), each block compiled in place"
        " with `backend=\"aot_eager\"` and then with `backend=\"lite\"`, same seed,"
        " `torch.use_deterministic_algorithms(True)`. After every step each rank compares every"
        " parameter and every gradient it holds (its FSDP2/TP shard), and the loss, with"
        " `torch.equal` (tests/distributed_harness.py).",
        "",
        f"Produced by `.venv/bin/python bench/distributed.py --steps {args.steps} --write` on"
        f" {meta['machine']}, {meta['cpus']} CPUs (shared with other jobs; load average"
        f" {meta['load_before']:.1f} before, {meta['load_after']:.1f} after), torch {meta['torch']},"
        f" Python {meta['python']}. Steps/s: steady state (steps 2..N, slowest rank per step); in"
        " brackets the first step, which includes the compile. With so tiny a model a step is"
        " dominated by Python, hooks and gloo; the two backends run the same ATen graph outside"
        " regions, so their speed difference here is noise (compare the two FSDP2 orders).",
        "",
        "| case | aot_eager steps/s (first step) | lite steps/s (first step) | Inductor region graphs"
        " | numerics lite vs aot_eager |",
        "|---|---|---|---|---|",
        *rows,
        "",
        "Per step, FSDP2 without regions (loss as rank 0 / rank 1 see it; bitwise = `torch.equal`"
        " of lite vs aot_eager for every parameter, every gradient and the loss, on both ranks):",
        "",
        "| step | loss (rank 0 / rank 1) | tensors compared | bitwise equal |",
        "|---|---|---|---|",
        *per_step,
        "",
        "With `--regions` each block's SwiGLU activation (`silu(gate) * up`, region id"
        " `block<i>`) is compiled by Inductor in the forward and the backward graph (4 region"
        " graphs); its fused kernel rounds differently from ATen by an ulp now and then, so lite"
        " is no longer bitwise equal from the step where that first reaches a gradient, as expected"
        " for an annotated region. Guard: asking a region for `reorder_for_compute_comm_overlap`"
        " raises `LiteRegionConfigError` (the registry forces it off in regions too), and the"
        " scheduler pass it enables, `reorder_compute_and_comm_for_overlap`, is refused by name if"
        " it ever runs (tests/test_distributed.py).",
    ])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--write", action="store_true", help="update BENCHMARKS.md")
    args = parser.parse_args()
    import torch

    meta = {"load_before": os.getloadavg()[0], "machine": platform.machine(),
            "cpus": os.cpu_count(), "torch": torch.__version__,
            "python": platform.python_version()}
    rows, per_step, failed = [], [], False
    for name, extra in CASES:
        out = harness.run(harness.parse_args(["--steps", str(args.steps), *extra]))
        print(f"== {name}\n{harness.report(out)}", flush=True)
        rows.append(case_row(name, out))
        failed |= bool(out.get("errors")) or not out["ok"]
        if not extra and not out.get("errors"):
            per_step = [step_row(r) for r in out["steps"]]
    meta["load_after"] = os.getloadavg()[0]
    body = render(args, rows, per_step, meta)
    print(body)
    if args.write:
        replace_section(REPO / "BENCHMARKS.md", SECTION, body)
        print(f"wrote section '## {SECTION}' of BENCHMARKS.md")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
