"""What bitwise fusion decides for single op signatures on this GPU: each small function is compiled
with ``backend="lite", options={"bitwise_fusion": True}``, run once, and the fusion ledger's
signature verdicts printed (fused, not bitwise with the first differing element, or not proven).
A quick way to see whether a faithful decomposition (lite_compiler.faithful_decompositions) holds
on a device before a model benchmark.

    python bench/gpu_fusion_verdicts.py [--device cuda] [--json out.json]
"""

from __future__ import annotations

import argparse
import json

import torch

import lite_compiler


def cases(device: str):
    def silu_grad(x, dy):  # silu_backward itself in the graph (what llama's backward runs)
        return torch.ops.aten.silu_backward(dy, x) * 2

    for dtype in (torch.bfloat16, torch.float32):
        yield f"neg {dtype}", (lambda x: (-x) * 2 + 1), (torch.randn(4, 8, 16, device=device, dtype=dtype),)
        yield f"mul_one {dtype}", (lambda x: (x * 1.0) + x), (torch.randn(4, 8, 16, device=device, dtype=dtype),)
    x = torch.randn(4, 8, 16, device=device, dtype=torch.bfloat16)
    yield "silu_backward bfloat16", silu_grad, (x, torch.randn_like(x))

    def loss_tail(logits, t):  # HF Llama's loss: nll_loss_backward -> _log_softmax_backward_data
        loss = torch.nn.functional.cross_entropy(logits.float(), t, ignore_index=-100)
        return torch.autograd.grad(loss, logits)[0] * 2

    t = torch.randint(0, 3000, (256,), device=device)
    t[:7] = -100
    logits = torch.randn(256, 3000, device=device, dtype=torch.bfloat16, requires_grad=True)
    yield "loss tail (cross_entropy backward)", loss_tail, (logits, t)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rows = []
    for name, fn, inputs in cases(args.device):
        torch._dynamo.reset()
        lite_compiler.clear_ledgers()
        compiled = torch.compile(fn, backend="lite", options={"bitwise_fusion": True})
        compiled(*inputs)
        verdicts = [f"{'ok' if e.allowed else 'NO'} {e.name}: {e.reason}"
                    for ledger in lite_compiler.all_ledgers("lite") for e in ledger.entries
                    if e.kind == "fusion" and e.stage in ("fusion", "runtime")]
        rows.append({"case": name, "verdicts": verdicts})
        print(f"== {name}", *verdicts, sep="\n  ", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
