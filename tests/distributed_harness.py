"""Test harness for examples/distributed_train.py: train the example with ``backend="aot_eager"``
and then with ``backend="lite"`` on every rank, and compare EVERY parameter and EVERY gradient
after every step with ``torch.equal`` (each rank compares the shards it holds, so together the
ranks compare all of them), plus the loss.

Used by tests/test_distributed.py and bench/distributed.py; runnable by hand too:

    .venv/bin/python tests/distributed_harness.py --steps 4 --tp 2 [--json OUT]
    .venv/bin/python tests/distributed_harness.py --device cuda --world-size 2 --steps 20 --json OUT

Each rank writes its own results to a JSON file; the parent process reads them after the ranks
exit and builds the report (``summarize``), so no result travels through a collective.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
if str(EXAMPLES) not in sys.path:  # spawned ranks import this module, and so this line, too
    sys.path.insert(0, str(EXAMPLES))

import distributed_train as example  # noqa: E402

BACKENDS = example.BACKENDS
COLLECTIVES = ("all_gather_into_tensor", "reduce_scatter_tensor", "all_reduce", "wait_tensor")


# ---- options -------------------------------------------------------------------------------------

def parse_args(argv: list[str] | None = None) -> Any:
    parser = example.build_parser()
    parser.description = __doc__.splitlines()[0]
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=BACKENDS,
                        help="what to train, in this order (default: aot_eager, then lite)")
    parser.add_argument("--json", metavar="OUT", help="write the full per-step report here")
    return example.parse_args(argv, parser)


# ---- one rank ------------------------------------------------------------------------------------

def local_tensors(model: Any) -> dict[str, tuple[Any, Any]]:
    """name -> (parameter, gradient) as this rank holds them (its DTensor shard), copied."""
    from torch.distributed.tensor import DTensor

    def local(t: Any) -> Any:
        if t is None:
            return None
        return (t.to_local() if isinstance(t, DTensor) else t).detach().clone().cpu()

    return {name: (local(p), local(p.grad)) for name, p in model.named_parameters()}


def compare(reference: dict[str, tuple[Any, Any]], other: dict[str, tuple[Any, Any]]) -> dict[str, Any]:
    """Bitwise comparison of two snapshots of every parameter and gradient."""
    import torch

    mismatched, max_diff = [], 0.0
    for name, (param, grad) in reference.items():
        other_param, other_grad = other[name]
        for what, a, b in (("param", param, other_param), ("grad", grad, other_grad)):
            if a is None and b is None:
                continue
            if a is None or b is None or not torch.equal(a, b):
                mismatched.append(f"{what} {name}")
                if a is not None and b is not None and a.shape == b.shape:
                    max_diff = max(max_diff, (a.float() - b.float()).abs().max().item())
    grads = sum(1 for _, g in reference.values() if g is not None)
    return {"tensors": len(reference) + grads, "grads": grads,
            "params_equal": not any(m.startswith("param ") for m in mismatched),
            "grads_equal": not any(m.startswith("grad ") for m in mismatched),
            "mismatched": mismatched, "max_abs_diff": max_diff}


def ledger_summary(ledgers: list[Any]) -> tuple[list[dict[str, Any]], dict[str, dict[str, int]]]:
    """(the passes the guard saw, deduplicated by name/graph kind/verdict; funcol ops counted in
    each graph the lite compiler handed back, by fw/bw/region)."""
    passes: dict[tuple[Any, ...], dict[str, Any]] = {}
    counts: dict[str, dict[str, int]] = {}
    for ledger in ledgers:
        for e in ledger.entries:
            kind = e.graph.split("/", 1)[1] if "/" in e.graph else e.graph
            row = passes.setdefault((e.name, kind, e.allowed), {
                "name": e.name, "stage": e.stage, "graph": kind, "allowed": e.allowed,
                "lite": e.lite, "kind": e.kind, "reason": e.reason, "count": 0})
            row["count"] += 1
        codes = [(graph.rsplit("/", 1)[-1], code) for graph, code in ledger.graph_code.items()]
        codes += [("region", code) for code in ledger.region_code.values()]  # Inductor output code
        for kind, code in codes:
            per = counts.setdefault(kind, {c: 0 for c in COLLECTIVES})
            for c in COLLECTIVES:
                per[c] += len(re.findall(rf"_c10d_functional\.{c}\b", code))
    return list(passes.values()), counts


def run_backend(args: Any, backend: str, mesh: Any) -> tuple[dict[str, Any], list[dict]]:
    """Train one backend; the JSON-able run summary and the per-step snapshots.

    ``lite_compiler`` is imported only for the lite backend (an aot_eager rank alone never
    loads it), and that import is timed on its own (``import_s``; 0 when already loaded)."""
    import time

    started = time.perf_counter()
    lite_compiler = None
    if backend == "lite" or "lite_compiler" in sys.modules:
        import lite_compiler

        lite_compiler.clear_ledgers()
    import_s = time.perf_counter() - started if backend == "lite" else 0.0

    snapshots: list[dict] = []
    run: dict[str, Any] = {}
    try:
        trained = example.train(args, backend, mesh,
                                on_step=lambda step, model, loss: snapshots.append(local_tensors(model)))
        run = {"losses": trained["losses"], "times": trained["times"], "import_s": import_s,
               "graphs": trained["graphs"], "graph_breaks": trained["graph_breaks"]}
    except Exception as exc:  # reported, not hidden: e.g. LitePassViolation
        run = {"error": f"{type(exc).__name__}: {exc}", "error_type": type(exc).__name__,
               "pass_name": getattr(exc, "pass_name", None), "traceback": traceback.format_exc()}
    finally:  # the ledger is wanted on failure too: it shows what was refused
        ledgers = lite_compiler.all_ledgers("lite") if backend == "lite" and lite_compiler else []
        run["ledger"], run["collectives"] = ledger_summary(ledgers)
        run["region_graphs"] = sorted({key for ledger in ledgers for key in ledger.region_code})
    return run, snapshots


def rank_main(rank: int, args: Any, port: int, result_dir: str) -> None:
    example.init_rank(rank, args, port)
    import torch
    import torch.distributed as dist

    try:
        mesh = example.make_mesh(args.world_size, args.tp, args.device)
        runs, snapshots = {}, {}
        for backend in args.backends:
            runs[backend], snapshots[backend] = run_backend(args, backend, mesh)
        steps = []
        if len(args.backends) == 2 and not any("error" in r for r in runs.values()):
            a, b = args.backends
            for step in range(args.steps):
                la, lb = runs[a]["losses"][step], runs[b]["losses"][step]
                steps.append({"step": step, "loss": {a: la.item(), b: lb.item()},
                              "loss_equal": bool(torch.equal(la, lb)),
                              "loss_abs_diff": (la - lb).abs().item(),
                              **compare(snapshots[a][step], snapshots[b][step])})
        for r in runs.values():
            r["losses"] = [t.item() for t in r.get("losses", [])]
        result = {"rank": rank, "runs": runs, "steps": steps}
        Path(result_dir, f"rank{rank}.json").write_text(json.dumps(result))
    finally:
        dist.destroy_process_group()
    # Skip C++ static destructors: on a loaded machine one of them (a thread still joinable at
    # exit) sometimes aborts a rank with "terminate called without an active exception" after
    # all work and results are done. Nothing is left to clean up here.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


# ---- the report ----------------------------------------------------------------------------------

def run(args: Any) -> dict[str, Any]:
    """Spawn the ranks; every rank's results, summarized."""
    with tempfile.TemporaryDirectory() as tmp:
        example.spawn(rank_main, args, tmp)
        per_rank = [json.loads(Path(tmp, f"rank{r}.json").read_text()) for r in range(args.world_size)]
    return summarize(args, per_rank)


def _rate(times: list[float]) -> dict[str, float]:
    steady = times[1:] or times
    return {"first_step_s": times[0], "steps_per_s": len(steady) / sum(steady)}


def summarize(args: Any, per_rank: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"config": {k: v for k, v in vars(args).items() if k != "json"},
                           "backends": {}, "steps": []}
    first = per_rank[0]["runs"]
    errors = {b: r["runs"][b]["error"] for r in per_rank for b in r["runs"] if "error" in r["runs"][b]}
    if errors:
        out["errors"] = {b: first.get(b, {}).get("error") or e for b, e in errors.items()}
        out["error_types"] = {b: first.get(b, {}).get("error_type") for b in errors}
        out["pass_names"] = {b: first.get(b, {}).get("pass_name") for b in errors}
        out["tracebacks"] = {b: first.get(b, {}).get("traceback") for b in errors}
        out["ledgers"] = {b: first.get(b, {}).get("ledger") for b in args.backends}
        out["ok"] = False
        return out
    for b in args.backends:
        # the slowest rank's step time is the step time
        times = [max(r["runs"][b]["times"][i] for r in per_rank) for i in range(args.steps)]
        out["backends"][b] = _rate(times)
        out["backends"][b]["import_s"] = max(r["runs"][b].get("import_s", 0.0) for r in per_rank)
        for k in ("region_graphs", "graphs", "graph_breaks", "ledger", "collectives"):
            out["backends"][b][k] = first[b][k]  # rank 0's (ledger: of its lite compiles)
    if len(args.backends) < 2:
        out["ok"] = True
        return out
    for step in range(args.steps):
        ranks = [r["steps"][step] | {"rank": r["rank"]} for r in per_rank]
        out["steps"].append({"step": step, "ranks": ranks, "bitwise_equal": all(
            e["loss_equal"] and e["params_equal"] and e["grads_equal"] for e in ranks)})
    out["bitwise_equal_every_step"] = all(row["bitwise_equal"] for row in out["steps"])
    out["ok"] = out["bitwise_equal_every_step"] or args.regions
    return out


def report(out: dict[str, Any]) -> str:
    if out.get("errors"):
        return "\n".join(f"{b}: {e}" for b, e in out["errors"].items())
    lines = [f"{b:10s} {r['steps_per_s']:.2f} steps/s (steady), first step {r['first_step_s']:.2f} s"
             f" (compile); dynamo graphs {r['graphs']}, graph breaks {r['graph_breaks']},"
             f" Inductor regions {len(r['region_graphs'])}" for b, r in out["backends"].items()]
    for row in out["steps"]:
        r0 = row["ranks"][0]
        diffs = max(e["max_abs_diff"] for e in row["ranks"])
        lines.append(f"step {row['step']:3d} loss {next(iter(r0['loss'].values())):.6f}"
                     f" bitwise={row['bitwise_equal']} ({sum(e['tensors'] for e in row['ranks'])}"
                     f" parameter and gradient tensors over {len(row['ranks'])} ranks;"
                     f" max |diff| {diffs:.3g})")
    if "bitwise_equal_every_step" in out:
        lines.append("every parameter and gradient bitwise equal at every step on every rank:"
                     f" {out['bitwise_equal_every_step']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = run(args)
    print(report(out))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    if out.get("errors"):
        return 1
    if not out["ok"]:
        print("FAIL: lite mode is not bitwise identical to aot_eager", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
