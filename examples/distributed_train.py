"""Train a tiny llama-style model under torch.distributed with FSDP2 (and optional tensor
parallelism), each block compiled with ``backend="lite"``: the lite-mode recipe for a
torchtitan-style training script.

    .venv/bin/python examples/distributed_train.py --steps 10 --world-size 2
    .venv/bin/python examples/distributed_train.py --steps 10 --world-size 2 --tp 2
    .venv/bin/python examples/distributed_train.py --steps 10 --regions      # Inductor regions
    .venv/bin/python examples/distributed_train.py --steps 4 --world-size 4 --tp 2   # dp=2 x tp=2
    .venv/bin/python examples/distributed_train.py --steps 2 --tp 2 --sequence-parallel \
        --registry examples/opt_in_bucketing/lite_guard.toml \
        --custom-pass examples/opt_in_bucketing/bucketing_pass.py:BucketReduceScatters

gloo on CPU (default) or NCCL with one GPU a rank (``--device cuda``). ``--regions`` gives every
block one annotated region (its SwiGLU activation, region id ``block<i>``) that Inductor
compiles; everything else runs as ATen ops, bitwise identical to ``backend="aot_eager"``
(``--backend aot_eager`` runs the same script that way). ``--sequence-parallel`` shards the
sequence between the TP ranks, so the compiled graphs hold funcol all_gather and
reduce_scatter. ``--region-scope block`` puts the whole block body, collectives included, in the
region. ``--inductor-config KEY=VALUE`` patches ``torch._inductor.config`` around compile and
training on every rank; ``--custom-pass FILE.py:NAME`` installs a user pass as
``post_grad_custom_post_pass``; ``--registry FILE.toml`` adds a user registry
(``$LITE_GUARD_REGISTRIES``).

How the parallelism is applied (the torchtitan order): TP (``parallelize_module`` with
Colwise/RowwiseParallel on the "tp" mesh dimension) first, then each block is compiled in place
(``block.compile(backend=...)``), then FSDP2 (``fully_shard``) per block and at the root on the
"dp" dimension. FSDP2's all-gather / reduce-scatter hooks run eagerly (Dynamo skips FSDP hooks
by default); TP's collectives are traced into the compiled graphs as functional collectives.

The check that lite mode trains bitwise like aot_eager (every parameter and gradient, every
step, every rank) is tests/distributed_harness.py, which drives these functions; its
BENCHMARKS.md section is written by bench/distributed.py. See docs/distributed.md.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import os
import socket
import sys
import time
from collections.abc import Callable
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


def batch(args: Any, step: int, dp_rank: int) -> tuple[Any, Any]:
    import torch

    g = torch.Generator().manual_seed(1000 * step + dp_rank)
    tokens = torch.randint(0, args.vocab, (args.batch, args.seq + 1), generator=g).to(args.device)
    return tokens[:, :-1], tokens[:, 1:]


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


# ---- training -------------------------------------------------------------------------------------

def init_rank(rank: int, args: Any, port: int) -> None:
    """Environment, determinism and the process group of one rank (gloo on CPU, NCCL on GPUs)."""
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


def train(args: Any, backend: str, mesh: Any,
          on_step: Callable[[int, Any, Any], None] | None = None) -> dict[str, Any]:
    """Build, parallelize, compile and train ``args.steps`` steps with ``backend``.

    ``on_step(step, model, loss)`` runs after each optimizer step (gradients still in place).
    Returns the per-step losses and times and Dynamo's graph counts.
    """
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F

    if backend == "lite":  # (an aot_eager run never loads the package: a fair comparison)
        import lite_compiler  # noqa: F401  (registers backend="lite", routes mode="lite")

    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    with torch._inductor.config.patch(inductor_patch(args)):
        model = parallelize(build_model(args).to(args.device), mesh, args, backend)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2, foreach=False)
        dp_rank = mesh["dp"].get_local_rank()
        losses, times = [], []
        for step in range(args.steps):
            inputs, labels = batch(args, step, dp_rank)
            dist.barrier()
            start = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            logits = model(inputs)
            loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten())
            loss.backward()
            opt.step()
            dist.barrier()
            times.append(time.perf_counter() - start)
            losses.append(loss.detach().clone())
            if on_step is not None:
                on_step(step, model, loss)
    return {"losses": losses, "times": times,
            "graphs": int(counters["stats"]["unique_graphs"]),
            "graph_breaks": int(sum(counters["graph_break"].values()))}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn(rank_fn: Callable[..., None], args: Any, *extra: Any) -> None:
    """Run ``rank_fn(rank, args, port, *extra)`` on ``args.world_size`` spawned ranks."""
    import torch.multiprocessing as mp

    # Before torch._inductor is imported in the ranks (spawn children inherit this environment).
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    mp.spawn(rank_fn, args=(args, free_port(), *extra), nprocs=args.world_size, join=True)


def example_rank(rank: int, args: Any, port: int) -> None:
    """One rank of the example: train, and rank 0 prints the loss of every step."""
    import torch.distributed as dist

    init_rank(rank, args, port)
    try:
        mesh = make_mesh(args.world_size, args.tp, args.device)
        run = train(args, args.backend, mesh)
        if rank == 0:
            for step, (loss, seconds) in enumerate(zip(run["losses"], run["times"])):
                print(f"step {step:3d}  loss {loss.item():.6f}  {seconds * 1e3:.1f} ms")
            steady = run["times"][1:] or run["times"]
            print(f"{args.backend}: {len(steady) / sum(steady):.2f} steps/s after the first"
                  f" (compile) step; dynamo graphs {run['graphs']}, graph breaks {run['graph_breaks']}")
    finally:
        dist.destroy_process_group()


# ---- command line ------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    """The example's options (tests/distributed_harness.py adds its own to the same parser)."""
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
    p.add_argument("--backend", choices=BACKENDS, default="lite")
    p.add_argument("--dim", type=int, default=32)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=2)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--vocab", type=int, default=64)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--seq", type=int, default=16)
    p.add_argument("--seed", type=int, default=0)
    return p


def parse_args(argv: list[str] | None = None, parser: argparse.ArgumentParser | None = None) -> Any:
    p = parser or build_parser()
    args = p.parse_args(argv)
    args.region_configs = _key_values(args.region_config)
    args.inductor_configs = _key_values(args.inductor_config)
    args.regions = args.regions or bool(args.region_configs) or args.region_scope != "act"
    if args.sequence_parallel and args.tp <= 1:
        p.error("--sequence-parallel needs --tp > 1")
    if args.tp > 1 and not args.fsdp and args.tp != args.world_size:
        p.error("--no-fsdp needs --tp == --world-size")
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


def main(argv: list[str] | None = None) -> int:
    spawn(example_rank, parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
