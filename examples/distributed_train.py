"""Train a tiny llama-style model under torch.distributed (gloo, CPU) with FSDP2 and optional TP,
compiled with ``backend="aot_eager"`` and with ``backend="lite"``, and compare them step by step.

Without ``--regions`` nothing is annotated, so lite mode must be bitwise identical to aot_eager:
the loss and the gradient norm of every step, gathered to rank 0, are compared with
``torch.equal`` and the run fails if any differs. With ``--regions`` every block has one
annotated region (its SwiGLU activation, region id ``block<i>``) that Inductor compiles, and the
per-step differences are reported instead. Steps/s are reported for both backends.

    .venv/bin/python examples/distributed_train.py --steps 10 --world-size 2
    .venv/bin/python examples/distributed_train.py --steps 10 --world-size 2 --tp 2
    .venv/bin/python examples/distributed_train.py --steps 10 --regions --json out.json
    .venv/bin/python examples/distributed_train.py --steps 4 --world-size 4 --tp 2   # dp=2 x tp=2
    .venv/bin/python examples/distributed_train.py --steps 2 --tp 2 --sequence-parallel \
        --registry examples/opt_in_bucketing/lite_guard.toml \
        --custom-pass examples/opt_in_bucketing/bucketing_pass.py:BucketAllGathers

``--sequence-parallel`` shards the sequence between the TP ranks (SequenceParallel norms,
Colwise/RowwiseParallel with Shard(1) in/out), so the compiled graphs hold funcol all_gather and
reduce_scatter. ``--region-scope block`` puts the whole block body, collectives included, in the
region. ``--inductor-config KEY=VALUE`` patches ``torch._inductor.config`` around compile and
training on every rank; ``--custom-pass FILE.py:NAME`` installs a user pass as
``post_grad_custom_post_pass``; ``--registry FILE.toml`` adds a user registry
(``$LITE_GUARD_REGISTRIES``). The lite run's ledger (rank 0) is in the report. See
docs/distributed.md.

How the parallelism is applied (the torchtitan order): TP (``parallelize_module`` with
Colwise/RowwiseParallel on the "tp" mesh dimension) first, then each block is compiled in place
(``block.compile(backend=...)``), then FSDP2 (``fully_shard``) per block and at the root on the
"dp" dimension. FSDP2's all-gather / reduce-scatter hooks run eagerly (Dynamo skips FSDP hooks
by default); TP's collectives are traced into the compiled graphs as functional collectives.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import os
import socket
import sys
import time
import traceback
from pathlib import Path
from typing import Any

BACKENDS = ("aot_eager", "lite")


# ---- the model ---------------------------------------------------------------------------------

def build_model(args: Any) -> Any:
    import torch
    import torch.nn.functional as F
    from torch import nn

    class RMSNorm(nn.Module):
        def __init__(self, dim: int, eps: float = 1e-6):
            super().__init__()
            self.weight, self.eps = nn.Parameter(torch.ones(dim)), eps

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x32 = x.float()
            return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight

    def rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        return x * cos + torch.cat((-x2, x1), dim=-1) * sin

    class Block(nn.Module):
        """RMSNorm, rotary, causal SDPA, SwiGLU. Separate q/k/v projections and ``view(..., -1,
        head_dim)`` so that colwise TP (each rank holds whole heads) needs no model change."""

        def __init__(self, layer_id: int, dim: int, heads: int, hidden: int, regions: bool,
                     region_configs: dict[str, Any], region_scope: str = "act"):
            super().__init__()
            self.layer_id, self.head_dim, self.regions = layer_id, dim // heads, regions
            self.act_region = regions and region_scope == "act"
            self.block_region = regions and region_scope == "block"
            self.region_configs = dict(region_configs)
            self.region_id = f"block{layer_id}"  # a str attribute: Dynamo keeps it a constant
            self.attn_norm, self.mlp_norm = RMSNorm(dim), RMSNorm(dim)
            self.wq = nn.Linear(dim, dim, bias=False)
            self.wk = nn.Linear(dim, dim, bias=False)
            self.wv = nn.Linear(dim, dim, bias=False)
            self.wo = nn.Linear(dim, dim, bias=False)
            self.w1 = nn.Linear(dim, hidden, bias=False)
            self.w3 = nn.Linear(dim, hidden, bias=False)
            self.w2 = nn.Linear(hidden, dim, bias=False)
            inv = 1.0 / (10000 ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim))
            freqs = torch.outer(torch.arange(64).float(), inv)
            self.register_buffer("cos", torch.cat((freqs, freqs), -1).cos(), persistent=False)
            self.register_buffer("sin", torch.cat((freqs, freqs), -1).sin(), persistent=False)

        def _region(self, on: bool) -> Any:
            if not on:
                return contextlib.nullcontext()
            import lite_compiler

            return lite_compiler.region(id=self.region_id, **self.region_configs)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            with self._region(self.block_region):  # --region-scope block: all of it
                return self._forward(x)

        def _forward(self, x: torch.Tensor) -> torch.Tensor:
            b, s, _ = x.shape
            h = self.attn_norm(x)
            q = self.wq(h).view(b, s, -1, self.head_dim)
            k = self.wk(h).view(b, s, -1, self.head_dim)
            v = self.wv(h).view(b, s, -1, self.head_dim)
            cos, sin = self.cos[:s].to(x.dtype)[:, None], self.sin[:s].to(x.dtype)[:, None]
            q, k = rotary(q, cos, sin), rotary(k, cos, sin)
            o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                               v.transpose(1, 2), is_causal=True)
            x = x + self.wo(o.transpose(1, 2).reshape(b, s, -1))
            h = self.mlp_norm(x)
            gate, up = self.w1(h), self.w3(h)
            with self._region(self.act_region):  # --region-scope act (default)
                act = F.silu(gate) * up
            return x + self.w2(act)

    class Transformer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok_embeddings = nn.Embedding(args.vocab, args.dim)
            self.layers = nn.ModuleList(
                Block(i, args.dim, args.heads, args.hidden, args.regions, args.region_configs,
                      args.region_scope)
                for i in range(args.layers))
            self.norm = RMSNorm(args.dim)
            self.output = nn.Linear(args.dim, args.vocab, bias=False)

        def forward(self, tokens: torch.Tensor) -> torch.Tensor:
            h = self.tok_embeddings(tokens)
            for layer in self.layers:
                h = layer(h)
            return self.output(self.norm(h))

    torch.manual_seed(args.seed)
    return Transformer()


# ---- parallelism ---------------------------------------------------------------------------------

def make_mesh(world_size: int, tp: int, device: str = "cpu") -> Any:
    from torch.distributed.device_mesh import init_device_mesh

    if tp <= 1:
        return init_device_mesh(device, (world_size,), mesh_dim_names=("dp",))
    if world_size % tp:
        raise SystemExit(f"--tp {tp} must divide --world-size {world_size}")
    return init_device_mesh(device, (world_size // tp, tp), mesh_dim_names=("dp", "tp"))


def parallelize(model: Any, mesh: Any, args: Any, backend: str) -> Any:
    import torch
    from torch.distributed.fsdp import fully_shard

    if args.tp > 1:
        from torch.distributed.tensor.parallel import (
            ColwiseParallel,
            RowwiseParallel,
            parallelize_module,
        )

        tp_mesh = mesh["tp"]  # one object: a fresh slice per block would fail Dynamo's guard
        if args.sequence_parallel:
            from torch.distributed.tensor import Replicate, Shard
            from torch.distributed.tensor.parallel import PrepareModuleInputOutput, SequenceParallel

            # The residual stream is sharded on the sequence (Shard(1)) inside each block: the
            # norms run on the shard, the colwise projections all-gather their input, the
            # rowwise ones reduce-scatter their output; the block returns a replicated tensor.
            edges = PrepareModuleInputOutput(
                input_layouts=(Replicate(),), desired_input_layouts=(Shard(1),),
                use_local_input=False, output_layouts=(Shard(1),),
                desired_output_layouts=(Replicate(),), use_local_output=True)
            plan = {name: ColwiseParallel(input_layouts=Shard(1))
                    for name in ("wq", "wk", "wv", "w1", "w3")}
            plan.update({name: RowwiseParallel(output_layouts=Shard(1), use_local_output=False)
                         for name in ("wo", "w2")})
            plan.update({name: SequenceParallel() for name in ("attn_norm", "mlp_norm")})
            for block in model.layers:
                parallelize_module(block, tp_mesh, edges)
                parallelize_module(block, tp_mesh, plan)
        else:
            plan = {name: ColwiseParallel() for name in ("wq", "wk", "wv", "w1", "w3")}
            plan.update({"wo": RowwiseParallel(), "w2": RowwiseParallel()})
            for block in model.layers:
                parallelize_module(block, tp_mesh, plan)
    for block in model.layers:
        block.compile(backend=backend, fullgraph=args.tp <= 1)
    if args.fsdp:
        dp_mesh = mesh["dp"]
        for block in model.layers:
            fully_shard(block, mesh=dp_mesh)
        fully_shard(model, mesh=dp_mesh)
    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 16)
    return model


# ---- one rank ------------------------------------------------------------------------------------

def batch(args: Any, step: int, dp_rank: int) -> tuple[Any, Any]:
    import torch

    g = torch.Generator().manual_seed(1000 * step + dp_rank)
    tokens = torch.randint(0, args.vocab, (args.batch, args.seq + 1), generator=g).to(args.device)
    return tokens[:, :-1], tokens[:, 1:]


def grad_norm(model: Any) -> Any:
    """Global L2 norm of all gradients (DTensor grads are made full first), fp32, deterministic."""
    import torch
    from torch.distributed.tensor import DTensor

    norms = []
    for p in model.parameters():
        if p.grad is None:
            continue
        g = p.grad.full_tensor() if isinstance(p.grad, DTensor) else p.grad
        norms.append(torch.linalg.vector_norm(g.detach().float()))
    return torch.linalg.vector_norm(torch.stack(norms))


def load_custom_pass(spec: str) -> Any:
    """``FILE.py:NAME`` or ``package.module:NAME``; a class is instantiated (a CustomGraphPass)."""
    import importlib
    import importlib.util

    target, _, name = spec.rpartition(":")
    if not target or not name:
        raise SystemExit(f"--custom-pass {spec!r}: expected FILE.py:NAME or module:NAME")
    if target.endswith(".py"):
        path = Path(target).resolve()
        module_spec = importlib.util.spec_from_file_location(path.stem, path)
        if module_spec is None or module_spec.loader is None:
            raise SystemExit(f"--custom-pass {spec!r}: cannot load {path}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[path.stem] = module
        module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(target)
    obj = getattr(module, name)
    return obj() if isinstance(obj, type) else obj


def inductor_patch(args: Any) -> dict[str, Any]:
    """What every rank patches into torch._inductor.config for the whole run (both backends)."""
    patch = dict(args.inductor_configs)
    if args.custom_pass:
        patch["post_grad_custom_post_pass"] = load_custom_pass(args.custom_pass)
    return patch


COLLECTIVES = ("all_gather_into_tensor", "reduce_scatter_tensor", "all_reduce", "wait_tensor")


def ledger_summary(ledgers: list[Any]) -> tuple[list[dict[str, Any]], dict[str, dict[str, int]]]:
    """(the passes the guard saw, deduplicated by name/graph kind/verdict; funcol ops counted in
    each graph the lite compiler handed back, by fw/bw)."""
    import re

    passes: dict[tuple[Any, ...], dict[str, Any]] = {}
    counts: dict[str, dict[str, int]] = {}
    for ledger in ledgers:
        for e in ledger.entries:
            kind = e.graph.split("/", 1)[1] if "/" in e.graph else e.graph
            key = (e.name, kind, e.allowed)
            row = passes.setdefault(key, {"name": e.name, "stage": e.stage, "graph": kind,
                                          "allowed": e.allowed, "lite": e.lite, "kind": e.kind,
                                          "reason": e.reason, "count": 0})
            row["count"] += 1
        codes = [(graph.rsplit("/", 1)[-1], code) for graph, code in ledger.graph_code.items()]
        codes += [("region", code) for code in ledger.region_code.values()]  # Inductor output code
        for kind, code in codes:
            per = counts.setdefault(kind, {c: 0 for c in COLLECTIVES})
            for c in COLLECTIVES:
                per[c] += len(re.findall(rf"_c10d_functional\.{c}\b", code))
    return list(passes.values()), counts


def train(args: Any, backend: str, mesh: Any) -> dict[str, Any]:
    import torch

    import lite_compiler  # noqa: F401  (registers backend="lite")

    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    lite_compiler.clear_ledgers()
    with torch._inductor.config.patch(inductor_patch(args)):
        try:
            return _train(args, backend, mesh)
        finally:
            ledgers = lite_compiler.all_ledgers("lite") if backend == "lite" else []
            LAST_LEDGER[:] = [ledger_summary(ledgers)]


LAST_LEDGER: list[Any] = []  # (passes, collective counts) of the last train(), kept on failure too


def _train(args: Any, backend: str, mesh: Any) -> dict[str, Any]:
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F

    import lite_compiler

    from torch._dynamo.utils import counters

    model = parallelize(build_model(args).to(args.device), mesh, args, backend)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, foreach=False)
    dp_rank = mesh["dp"].get_local_rank()
    losses, norms, times = [], [], []
    for step in range(args.steps):
        inputs, labels = batch(args, step, dp_rank)
        dist.barrier()
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        logits = model(inputs)
        loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten())
        loss.backward()
        norm = grad_norm(model)
        opt.step()
        dist.barrier()
        times.append(time.perf_counter() - start)
        losses.append(loss.detach().clone())
        norms.append(norm.detach().clone())
    ledgers = lite_compiler.all_ledgers() if backend == "lite" else []
    regions = sorted({key for ledger in ledgers for key in getattr(ledger, "region_code", {})})
    stats = {"graphs": int(counters["stats"]["unique_graphs"]),
             "graph_breaks": int(sum(counters["graph_break"].values()))}
    return {"losses": losses, "norms": norms, "times": times, "region_graphs": regions, **stats}


def _with_ledger(run: dict[str, Any]) -> dict[str, Any]:
    passes, collectives = LAST_LEDGER[0] if LAST_LEDGER else ([], {})
    return {**run, "ledger": passes, "collectives": collectives}


def rank_main(rank: int, args: Any, port: int, result_path: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(args.world_size), OMP_NUM_THREADS="1",
                      TORCHINDUCTOR_COMPILE_THREADS="1",
                      CUBLAS_WORKSPACE_CONFIG=":4096:8")  # deterministic cuBLAS on GPUs
    if args.registry:  # user registries, read by every lite compile (lite_compiler.config)
        os.environ["LITE_GUARD_REGISTRIES"] = os.pathsep.join(
            [*filter(None, os.environ.get("LITE_GUARD_REGISTRIES", "").split(os.pathsep)),
             *(str(Path(r).resolve()) for r in args.registry)])
    import warnings

    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    if args.device == "cuda":  # NCCL, one GPU a rank
        torch.cuda.set_device(rank)
    dist.init_process_group("nccl" if args.device == "cuda" else "gloo", rank=rank,
                            world_size=args.world_size)
    outcome: dict[str, Any] = {}
    try:
        mesh = make_mesh(args.world_size, args.tp, args.device)
        runs = {}
        for backend in args.backends:
            try:
                runs[backend] = _with_ledger(train(args, backend, mesh))
            except Exception as exc:  # reported, not hidden: e.g. LitePassViolation
                runs[backend] = _with_ledger({"error": f"{type(exc).__name__}: {exc}",
                                              "error_type": type(exc).__name__,
                                              "pass_name": getattr(exc, "pass_name", None),
                                              "traceback": traceback.format_exc()})
        gathered = gather_runs(args, runs)  # rank 0 sees every rank's tensors
        if rank == 0:
            outcome = summarize(args, gathered)
            Path(result_path).write_text(json.dumps(outcome, indent=2))
    finally:
        dist.destroy_process_group()
    # Skip C++ static destructors: on a loaded machine one of them (a thread still joinable at
    # exit) sometimes aborts a rank with "terminate called without an active exception" after
    # all work and results are done. Nothing is left to clean up here.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _all_gather_on(device: str, outputs: list[Any], tensor: Any) -> None:
    """all_gather through the process group's device (NCCL needs CUDA tensors), results on the CPU."""
    import torch.distributed as dist

    moved = [o.to(device) for o in outputs]
    dist.all_gather(moved, tensor.to(device))
    for out, got in zip(outputs, moved):
        out.copy_(got.cpu())


def gather_runs(args: Any, runs: dict[str, Any]) -> list[dict[str, Any]]:
    """Every rank's losses, grad norms and step times, as tensors, on every rank (gloo all_gather;
    all_gather_object would need numpy). A rank whose run failed sends NaNs and its error text
    travels separately (``errors``), so the other ranks never wait on it."""
    import torch
    import torch.distributed as dist

    per_rank: list[dict[str, Any]] = [{} for _ in range(args.world_size)]
    for b in args.backends:
        run = runs[b]
        failed = "error" in run
        n = args.steps
        mine = torch.full((3, n), float("nan"), dtype=torch.float64)
        flag = torch.tensor([1.0 if failed else 0.0], dtype=torch.float64)
        flags = [torch.zeros_like(flag) for _ in range(args.world_size)]
        _all_gather_on(args.device, flags, flag)
        if not failed:
            mine[2] = torch.tensor(run["times"], dtype=torch.float64)
        # losses / norms keep their own dtype: gathered separately so torch.equal is exact
        dtype = torch.float32
        lv = torch.stack(run["losses"]).to(dtype) if not failed else torch.full((n,), float("nan"), dtype=dtype)
        nv = torch.stack(run["norms"]).to(dtype) if not failed else torch.full((n,), float("nan"), dtype=dtype)
        ls = [torch.empty_like(lv) for _ in range(args.world_size)]
        ns = [torch.empty_like(nv) for _ in range(args.world_size)]
        ts = [torch.empty_like(mine[2]) for _ in range(args.world_size)]
        _all_gather_on(args.device, ls, lv)
        _all_gather_on(args.device, ns, nv)
        _all_gather_on(args.device, ts, mine[2].contiguous())
        for r in range(args.world_size):
            if flags[r].item():
                per_rank[r][b] = run if r == dist.get_rank() else {"error": f"rank {r} failed (see its output)"}
            else:
                per_rank[r][b] = {"losses": list(ls[r]), "norms": list(ns[r]), "times": ts[r].tolist(),
                                  **{k: run.get(k) for k in ("region_graphs", "graphs", "graph_breaks",
                                                             "ledger", "collectives")}}
    return per_rank


# ---- comparison and report -----------------------------------------------------------------------

def _rate(times: list[float]) -> dict[str, float]:
    steady = times[1:] or times
    return {"first_step_s": times[0], "steps_per_s": len(steady) / sum(steady)}


def summarize(args: Any, per_rank: list[dict[str, Any]]) -> dict[str, Any]:
    import torch

    out: dict[str, Any] = {"config": {k: v for k, v in vars(args).items() if k != "json"},
                           "backends": {}, "steps": []}
    errors = {b: r[b]["error"] for r in per_rank for b in r if "error" in r[b]}
    if errors:
        out["errors"] = {b: per_rank[0].get(b, {}).get("error") or e for b, e in errors.items()}
        out["error_types"] = {b: per_rank[0].get(b, {}).get("error_type") for b in errors}
        out["pass_names"] = {b: per_rank[0].get(b, {}).get("pass_name") for b in errors}
        out["tracebacks"] = {b: per_rank[0].get(b, {}).get("traceback") for b in errors}
        out["ledgers"] = {b: per_rank[0].get(b, {}).get("ledger") for b in args.backends}
        out["ok"] = False
        return out
    for b in args.backends:
        # the slowest rank's step time is the step time
        times = [max(r[b]["times"][i] for r in per_rank) for i in range(args.steps)]
        out["backends"][b] = _rate(times)
        for k in ("region_graphs", "graphs", "graph_breaks", "ledger", "collectives"):
            out["backends"][b][k] = per_rank[0][b][k]  # rank 0's (ledger: of its lite compiles)
    if len(args.backends) < 2:
        out["ok"] = True
        return out
    a, lt = BACKENDS
    all_equal = True
    for step in range(args.steps):
        row: dict[str, Any] = {"step": step, "loss": [], "grad_norm": []}
        for what, key in (("loss", "losses"), ("grad_norm", "norms")):
            for rank, r in enumerate(per_rank):
                x, y = r[a][key][step], r[lt][key][step]
                equal = bool(torch.equal(x, y))
                all_equal &= equal
                row[what].append({"rank": rank, "aot_eager": x.item(), "lite": y.item(),
                                  "bitwise_equal": equal, "abs_diff": (x - y).abs().item()})
        row["bitwise_equal"] = all(e["bitwise_equal"] for w in ("loss", "grad_norm") for e in row[w])
        out["steps"].append(row)
    out["bitwise_equal_every_step"] = all_equal
    out["ok"] = all_equal or args.regions
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(args: Any) -> dict[str, Any]:
    """Spawn ``args.world_size`` ranks; returns rank 0's summary."""
    import tempfile

    import torch.multiprocessing as mp

    # Before torch._inductor is imported in the ranks (spawn children inherit this environment).
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    with tempfile.TemporaryDirectory() as tmp:
        result = os.path.join(tmp, "result.json")
        mp.spawn(rank_main, args=(args, free_port(), result), nprocs=args.world_size, join=True)
        return json.loads(Path(result).read_text())


def parse_args(argv: list[str] | None = None) -> Any:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--world-size", type=int, default=2)
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="cpu: gloo; cuda: NCCL, one GPU a rank (regions compile with Triton)")
    p.add_argument("--tp", type=int, default=1, help="tensor-parallel degree (1: FSDP2 only)")
    p.add_argument("--no-fsdp", dest="fsdp", action="store_false",
                   help="TP only (needs --tp == --world-size)")
    p.add_argument("--regions", action="store_true", help="one annotated region per block")
    p.add_argument("--region-config", action="append", default=[], metavar="KEY=VALUE",
                   help="an Inductor config for every region (implies --regions), e.g."
                        " reorder_for_compute_comm_overlap=True: lite mode must refuse it")
    p.add_argument("--sequence-parallel", action="store_true",
                   help="with --tp: shard the sequence too (all_gather/reduce_scatter in the graphs)")
    p.add_argument("--region-scope", choices=("act", "block"), default="act",
                   help="what a region covers: the SwiGLU activation, or the whole block body"
                        " (its TP collectives included)")
    p.add_argument("--inductor-config", action="append", default=[], metavar="KEY=VALUE",
                   help="patch torch._inductor.config on every rank for the whole run (outside"
                        " regions too), e.g. bucket_all_gathers_fx=all")
    p.add_argument("--custom-pass", metavar="FILE.py:NAME",
                   help="install a user pass (a CustomGraphPass class or instance, or a function)"
                        " as post_grad_custom_post_pass on every rank")
    p.add_argument("--registry", action="append", default=[], metavar="FILE.toml",
                   help="an extra lite-guard registry (e.g. one that allows --custom-pass)")
    p.add_argument("--json", metavar="OUT", help="write the full per-step report here")
    p.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=BACKENDS)
    p.add_argument("--bench-md", metavar="BENCHMARKS.md",
                   help="run the benchmark set (FSDP2 both orders, FSDP2+TP, FSDP2+regions) with"
                        " --steps and write its '## Distributed (gloo, CPU)' section there")
    p.add_argument("--dim", type=int, default=32)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=2)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--vocab", type=int, default=64)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--seq", type=int, default=16)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    args.region_configs = _key_values(args.region_config)
    args.inductor_configs = _key_values(args.inductor_config)
    args.regions = args.regions or bool(args.region_configs) or args.region_scope != "act"
    if args.sequence_parallel and args.tp <= 1:
        p.error("--sequence-parallel needs --tp > 1")
    return args


def _key_values(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, _, value = item.partition("=")
        try:
            out[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            out[key] = value
    return out


def report(out: dict[str, Any]) -> str:
    lines = []
    if out.get("errors"):
        return "\n".join(f"{b}: {e}" for b, e in out["errors"].items())
    for b, r in out["backends"].items():
        lines.append(f"{b:10s} {r['steps_per_s']:.2f} steps/s (steady), first step"
                     f" {r['first_step_s']:.2f} s (compile); dynamo graphs {r['graphs']}, graph breaks"
                     f" {r['graph_breaks']}, Inductor regions {len(r['region_graphs'])}")
    for row in out["steps"]:
        loss0, norm0 = row["loss"][0], row["grad_norm"][0]
        max_loss = max(e["abs_diff"] for e in row["loss"])
        max_norm = max(e["abs_diff"] for e in row["grad_norm"])
        lines.append(f"step {row['step']:3d} loss {loss0['aot_eager']:.6f} grad_norm"
                     f" {norm0['aot_eager']:.6f} bitwise={row['bitwise_equal']}"
                     f" |dloss|={max_loss:.3g} |dnorm|={max_norm:.3g}")
    if "bitwise_equal_every_step" in out:
        lines.append(f"bitwise equal at every step on every rank: {out['bitwise_equal_every_step']}")
    return "\n".join(lines)


BENCH_TITLE = "Distributed (gloo, CPU)"
BENCH_CASES = (
    ("FSDP2, aot_eager run first", []),
    ("FSDP2, lite run first", ["--backends", "lite", "aot_eager"]),
    ("FSDP2 + TP (mesh dp=1 x tp=2)", ["--tp", "2"]),
    ("FSDP2, one region per block (`--regions`)", ["--regions"]),
)


def bench(argv: list[str], args: Any) -> int:
    import platform

    import torch

    base = [a for i, a in enumerate(argv) if a != "--bench-md" and (i == 0 or argv[i - 1] != "--bench-md")]
    rows, bitwise_rows, failed = [], [], False
    load_before = os.getloadavg()[0]
    for name, extra in BENCH_CASES:
        case = parse_args([*base, *extra])
        out = run(case)
        print(f"== {name}\n{report(out)}")
        if out.get("errors"):
            failed = True
            rows.append(f"| {name} | error | error | {next(iter(out['errors'].values())).splitlines()[0]} |")
            continue
        a, lt = out["backends"]["aot_eager"], out["backends"]["lite"]
        equal = sum(r["bitwise_equal"] for r in out["steps"])
        first_diff = next((r["step"] for r in out["steps"] if not r["bitwise_equal"]), None)
        max_loss = max(e["abs_diff"] for r in out["steps"] for e in r["loss"])
        max_norm = max(e["abs_diff"] for r in out["steps"] for e in r["grad_norm"])
        rows.append(f"| {name} | {a['steps_per_s']:.1f} ({a['first_step_s']:.2f} s) |"
                    f" {lt['steps_per_s']:.1f} ({lt['first_step_s']:.2f} s) | {len(lt['region_graphs'])} |"
                    f" {equal}/{len(out['steps'])} steps bitwise equal (loss and grad norm, both ranks)"
                    + (f"; first difference at step {first_diff}, max abs diff loss {max_loss:.3g},"
                       f" grad norm {max_norm:.3g}" if first_diff is not None else "") + " |")
        if not extra:
            for r in out["steps"]:
                losses = " / ".join(f"{e['aot_eager']:.6f}" for e in r["loss"])
                norms = " / ".join(f"{e['aot_eager']:.6f}" for e in r["grad_norm"])
                bitwise_rows.append(f"| {r['step']} | {losses} | {norms} | {'yes' if r['bitwise_equal'] else 'NO'} |")
        failed |= not out["ok"]
    command = " ".join([".venv/bin/python examples/distributed_train.py", *argv])
    body = "\n".join([
        f"A llama-style debug model (dim {args.dim}, {args.layers} layers, {args.heads} heads, vocab"
        f" {args.vocab}, batch {args.batch} x seq {args.seq} per rank) trained {args.steps} steps with"
        " AdamW under torch.distributed, gloo on CPU, world size 2 (mp.spawn), FSDP2"
        " (`fully_shard` per block and at the root), each block compiled in place with"
        " `backend=\"aot_eager\"` and then with `backend=\"lite\"`, same seed,"
        " `torch.use_deterministic_algorithms(True)`. Loss and grad norm of every step are gathered"
        " to rank 0 and compared with `torch.equal`.",
        "",
        f"Produced by `{command}` on {platform.machine()}, {os.cpu_count()} CPUs (shared with other"
        f" jobs; load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after), torch"
        f" {torch.__version__}, Python {platform.python_version()}. Steps/s: steady state (steps 2..N,"
        " slowest rank per step); in brackets the first step, which includes the compile. With so"
        " tiny a model a step is dominated by Python, hooks and gloo; the two backends run the same"
        " ATen graph outside regions, so their speed difference here is noise (compare the two"
        " FSDP2 orders).",
        "",
        "| case | aot_eager steps/s (first step) | lite steps/s (first step) | Inductor region graphs"
        " | numerics lite vs aot_eager |",
        "|---|---|---|---|---|",
        *rows,
        "",
        "Per step, FSDP2 without regions (loss and grad norm as rank 0 / rank 1 see them; bitwise"
        " = `torch.equal` of lite vs aot_eager on both ranks):",
        "",
        "| step | loss (rank 0 / rank 1) | grad norm (rank 0 / rank 1) | bitwise equal |",
        "|---|---|---|---|",
        *bitwise_rows,
        "",
        "With `--regions` each block's SwiGLU activation (`silu(gate) * up`, region id"
        " `block<i>`) is compiled by Inductor in the forward and the backward graph (4 region"
        " graphs); its fused kernel rounds differently from ATen by an ulp now and then, so lite"
        " is no longer bitwise equal from the step where that first reaches the loss / grad norm,"
        " as expected for an annotated region. Guard: forcing `reorder_for_compute_comm_overlap`"
        " on in a region raises `LitePassViolation` naming `reorder_compute_and_comm_for_overlap`"
        " (tests/test_distributed.py). Note that `torch.use_deterministic_algorithms(True)` sets"
        " Inductor's `deterministic`, under which the scheduler skips that reorder by itself, so"
        " the test also sets `deterministic=False` in the region.",
    ])
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench.markdown_section import replace_section

    replace_section(Path(args.bench_md), BENCH_TITLE, body)
    print(f"wrote section '## {BENCH_TITLE}' of {args.bench_md}")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.bench_md:
        return bench(argv, args)
    if args.tp > 1 and not args.fsdp and args.tp != args.world_size:
        raise SystemExit("--no-fsdp needs --tp == --world-size")
    out = run(args)
    print(report(out))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    if not out["ok"] and not args.regions:
        print("FAIL: lite mode is not bitwise identical to aot_eager", file=sys.stderr)
        return 1
    return 0 if not out.get("errors") else 1


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.exit(main())
