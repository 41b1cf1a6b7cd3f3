"""Probe: are Inductor's pointwise kernels, compiled with eager-numerics settings, bitwise equal to
the ATen kernels aot_eager runs? Per op signature and per connected pointwise group, on the
forward and backward graphs AOTAutograd makes for the llama and resnet18 training steps of
bench/gpu_models.py (small sizes, real dtypes).

Each signature / group is compiled twice with Inductor: with default settings and with
``emulate_precision_casts`` + ``eager_numerics`` (division rounding, no flush-to-zero), and run
on random inputs (scaled normals with zeros, infinities, NaNs and subnormals mixed in) next to
the ATen ops. Equality is of bit patterns. Group timings (CUDA events) estimate what fusing
would save.

    python bench/gpu_bitwise_pointwise_probe.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback

import torch
import torch.fx

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

EAGER_NUMERICS = {"emulate_precision_casts": True, "eager_numerics.division_rounding": True,
                  "eager_numerics.disable_ftz": True}


def capture_graphs(model_name: str) -> list[tuple[str, torch.fx.GraphModule]]:
    from torch._dynamo.backends.common import aot_autograd

    from bench import gpu_models

    graphs = []

    def keep(tag):
        def compiler(gm, example_inputs):
            graphs.append((f"{model_name}/{tag}{len(graphs)}", gm))
            return gm
        return compiler

    model, inputs = gpu_models.build(model_name)
    backend = aot_autograd(fw_compiler=keep("fw"), bw_compiler=keep("bw"))
    fn = torch.compile(model, backend=backend)
    gpu_models.step(model_name, fn, inputs)
    torch.cuda.synchronize()
    return graphs


def is_pointwise(node: torch.fx.Node) -> bool:
    target = node.target
    if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload):
        return False
    if torch.Tag.pointwise not in target.tags or torch.Tag.nondeterministic_seeded in target.tags:
        return False
    if target._schema.is_mutable:
        return False
    val = node.meta.get("val")
    return isinstance(val, torch.Tensor) and val.device.type == "cuda"


def random_like(val: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    shape, dtype = tuple(val.shape), val.dtype
    if dtype == torch.bool:
        return torch.rand(shape, device="cuda", generator=gen) > 0.5
    if not dtype.is_floating_point:
        return torch.randint(0, 1000, shape, device="cuda", generator=gen).to(dtype)
    x = torch.randn(shape, device="cuda", generator=gen, dtype=torch.float32)
    scale = torch.exp2(torch.randint(-20, 20, shape, device="cuda", generator=gen).float())
    x = (x * scale).to(dtype)
    flat = x.view(-1)
    n = flat.numel()
    if n >= 64:
        specials = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-40, -1e-40,
                                 1.0, -1.0, 0.5, 65504.0, 3e38], dtype=torch.float32,
                                device="cuda").to(dtype)
        idx = torch.randint(0, n, (min(n // 8, 4096),), device="cuda", generator=gen)
        flat[idx] = specials[torch.arange(idx.numel(), device="cuda") % specials.numel()]
    return x


def bits(t):
    if not isinstance(t, torch.Tensor):
        return t
    if t.dtype.is_floating_point:
        return t.contiguous().view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])
    return t


def same(a, b) -> bool:
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor):
        return a.shape == b.shape and a.dtype == b.dtype and torch.equal(bits(a), bits(b))
    return a == b


def subgraph(nodes: list[torch.fx.Node]) -> tuple[torch.fx.GraphModule, list[torch.fx.Node]]:
    """A GraphModule computing ``nodes`` (topological order); outside inputs become placeholders;
    outputs are the nodes used outside the group (or the last one)."""
    inside = set(nodes)
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    inputs: list[torch.fx.Node] = []
    for node in nodes:
        for arg in node.all_input_nodes:
            if arg not in inside and arg not in env:
                env[arg] = graph.placeholder(f"in{len(inputs)}")
                inputs.append(arg)
    for node in nodes:
        env[node] = graph.node_copy(node, lambda n: env[n])
    outs = [n for n in nodes if any(u not in inside for u in n.users)] or [nodes[-1]]
    graph.output(tuple(env[n] for n in outs))
    return torch.fx.GraphModule(torch.nn.Module(), graph), inputs


def groups_of(gm: torch.fx.GraphModule) -> list[list[torch.fx.Node]]:
    parent: dict[torch.fx.Node, torch.fx.Node] = {}

    def find(n):
        while parent[n] is not n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    pointwise = [n for n in gm.graph.nodes if is_pointwise(n)]
    for n in pointwise:
        parent[n] = n
    for n in pointwise:
        for arg in n.all_input_nodes:
            if arg in parent:
                parent[find(arg)] = find(n)
    groups: dict[torch.fx.Node, list[torch.fx.Node]] = {}
    for n in pointwise:
        groups.setdefault(find(n), []).append(n)
    return list(groups.values())


def cuda_time(fn, args, reps=20) -> float:
    for _ in range(3):
        fn(*args)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(reps):
        fn(*args)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / reps


def check(gm, example_vals, label, gen, timing=False) -> dict:
    args = [random_like(v, gen) if isinstance(v, torch.Tensor) else v for v in example_vals]
    want = gm(*args)
    row = {"what": label}
    for name, patch in (("default", {}), ("eager_numerics", EAGER_NUMERICS)):
        torch._dynamo.reset()
        try:
            with torch._inductor.config.patch(patch):
                fn = torch.compile(gm, backend="inductor", fullgraph=True, dynamic=False)
                got = fn(*args)
                row[name] = same(want, got)
                if timing and name == "eager_numerics":
                    row["aten_ms"] = cuda_time(gm, args)
                    row["fused_ms"] = cuda_time(fn, args)
        except Exception as exc:  # noqa: BLE001 - a probe records every failure
            row[name] = f"error: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    return row


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", required=True)
    parser.add_argument("--models", default="llama,resnet")
    parser.add_argument("--deadline", type=float, default=400)
    args = parser.parse_args()
    t0 = time.time()
    os.environ.setdefault("GPU_MODELS_TINY", "")
    gen = torch.Generator(device="cuda").manual_seed(0)
    result = {"torch": torch.__version__, "device": torch.cuda.get_device_name(), "ops": [],
              "groups": []}
    seen = set()
    for model_name in args.models.split(","):
        for label, gm in capture_graphs(model_name):
            for group in groups_of(gm):
                for node in group:
                    vals = [a.meta["val"] if isinstance(a, torch.fx.Node) else a for a in node.args]
                    key = (str(node.target), tuple(
                        (str(v.dtype), v.dim()) if isinstance(v, torch.Tensor) else repr(v) for v in vals),
                        repr(sorted(node.kwargs.items(), key=str)))
                    if key in seen or time.time() - t0 > args.deadline:
                        continue
                    seen.add(key)
                    sub, ins = subgraph([node])
                    row = check(sub, [i.meta["val"] for i in ins], f"{key}", gen)
                    row["op"] = str(node.target)
                    result["ops"].append(row)
                    print(json.dumps(row), flush=True)
                if len(group) >= 2 and time.time() - t0 < args.deadline:
                    try:
                        sub, ins = subgraph(group)
                        row = check(sub, [i.meta["val"] for i in ins],
                                    f"{label}: {[str(n.target) for n in group]}", gen, timing=True)
                    except Exception as exc:  # noqa: BLE001
                        row = {"what": label, "error": traceback.format_exception_only(exc)[-1][:300]}
                    row["size"] = len(group)
                    result["groups"].append(row)
                    print(json.dumps(row), flush=True)
            with open(args.json, "w") as f:
                json.dump(result, f, indent=1)
    with open(args.json, "w") as f:
        json.dump(result, f, indent=1)
    ops_ok = sum(r.get("eager_numerics") is True for r in result["ops"])
    groups_ok = sum(r.get("eager_numerics") is True for r in result["groups"])
    print(f"ops bitwise with eager numerics: {ops_ok}/{len(result['ops'])}; default:"
          f" {sum(r.get('default') is True for r in result['ops'])}; groups: {groups_ok}/"
          f"{len(result['groups'])}; saved ms (bitwise groups): "
          f"{sum(r.get('aten_ms', 0) - r.get('fused_ms', 0) for r in result['groups'] if r.get('eager_numerics') is True):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
