"""The "Distributed (gloo, CPU)" section of BENCHMARKS.md: the distributed example trained with
aot_eager and with lite mode in three settings, speed and bitwise agreement side by side.

Usage: .venv/bin/python bench/distributed.py [--steps N] [--write]
(about 5 minutes on 2 cores at 30 steps). The training is examples/distributed_train.py; the
comparison of every parameter and gradient at every step is tests/distributed_harness.py.

Speed: each backend trains alone in its own freshly spawned ranks, with new empty Inductor and
lite-guard cache directories; an aot_eager rank never imports lite_compiler, a lite rank times
``import lite_compiler`` on its own (the slowest rank's, shown apart from the first step).
Numerics: a third spawn trains aot_eager and then lite in the same ranks (same seed) and compares
every parameter, gradient and loss with ``torch.equal`` after every step; its times are not used.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]  # spawned ranks inherit this sys.path

import distributed_harness as harness  # noqa: E402

from bench.markdown_section import replace_section  # noqa: E402

SECTION = "Distributed (gloo, CPU)"
CASES = (
    ("FSDP2", []),
    ("FSDP2 + TP (mesh dp=1 x tp=2)", ["--tp", "2"]),
    ("FSDP2, one region per block (`--regions`)", ["--regions"]),
)


def fresh_run(argv: list[str]) -> dict:
    """harness.run in new ranks with new, empty compile caches (the ranks inherit os.environ)."""
    saved = {k: os.environ.get(k) for k in ("TORCHINDUCTOR_CACHE_DIR", "LITE_GUARD_CACHE_DIR")}
    with tempfile.TemporaryDirectory(prefix="bench_distributed_") as tmp:
        os.environ.update(TORCHINDUCTOR_CACHE_DIR=f"{tmp}/inductor", LITE_GUARD_CACHE_DIR=f"{tmp}/lg")
        try:
            return harness.run(harness.parse_args(argv))
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def case_row(name: str, alone: dict[str, dict], out: dict) -> str:
    broken = [o for o in (*alone.values(), out) if o.get("errors")]
    if broken:
        return f"| {name} | error | error | | | {next(iter(broken[0]['errors'].values())).splitlines()[0]} |"
    a, lt = alone["aot_eager"]["backends"]["aot_eager"], alone["lite"]["backends"]["lite"]
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
            f" {lt['steps_per_s']:.1f} ({lt['first_step_s']:.2f} s) | {lt['import_s']:.2f} s |"
            f" {len(out['backends']['lite']['region_graphs'])} | {numerics} |")


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
        f"Machine: {meta['machine']}, {meta['cpus']} CPUs (shared with other jobs; load average"
        f" {meta['load_before']:.1f} before, {meta['load_after']:.1f} after), torch {meta['torch']},"
        f" Python {meta['python']}. Speed: each backend alone in freshly spawned ranks with empty"
        " Inductor and lite-guard caches; steps/s is the steady state (steps 2..N, slowest rank per"
        " step), in brackets the first step (compile included). *import*: `import lite_compiler`"
        " in a lite rank, timed apart (slowest rank; an aot_eager rank does not import it; with"
        " `--regions` the model's region annotations import it in both). Numerics: a third spawn"
        " trains aot_eager then lite in the same ranks and compares. With so tiny a model a step"
        " is dominated by Python, hooks and gloo; outside regions the two backends run the same"
        " ATen graph, so their speed difference here is noise.",
        "",
        "| case | aot_eager steps/s (first step) | lite steps/s (first step) | lite: import"
        " | Inductor region graphs | numerics lite vs aot_eager |",
        "|---|---|---|---|---|---|",
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
        argv = ["--steps", str(args.steps), *extra]
        alone = {b: fresh_run([*argv, "--backends", b]) for b in ("aot_eager", "lite")}
        out = fresh_run(argv)
        for backend, single in alone.items():
            print(f"== {name}, {backend} alone\n{harness.report(single)}", flush=True)
        print(f"== {name}, both (numerics)\n{harness.report(out)}", flush=True)
        rows.append(case_row(name, alone, out))
        failed |= any(o.get("errors") or not o["ok"] for o in (*alone.values(), out))
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
