"""Is lite mode with bitwise fusion bitwise equal to aot_eager on real models? Training steps of a
small HF Llama and the test zoo (tests/compiler_models.py), every output, loss and grad compared
with torch.equal; prints one JSON line per model with the groups fused and the signatures refused.

    CUBLAS_WORKSPACE_CONFIG=:4096:8 python bench/gpu_bitwise_fused_check.py --device cuda
    python bench/gpu_bitwise_fused_check.py --device cpu --dtype float32 --models llama_hf

Exit 0: every model bitwise equal; 1: some tensor differs (named); 2: usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("llama_hf", "mlp", "llama", "convnet", "moe")


def _hf_llama(device: str, dtype: Any, steps: int):
    import torch

    from lite_compiler.testing import ensure_torchvision_importable

    ensure_torchvision_importable()
    from transformers import LlamaConfig, LlamaForCausalLM

    def run(backend: str, options: dict | None = None) -> list[list[Any]]:
        torch._dynamo.reset()
        torch.manual_seed(0)
        config = LlamaConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                             num_key_value_heads=2, attn_implementation="sdpa", use_cache=False,
                             vocab_size=128, intermediate_size=128)
        model = LlamaForCausalLM(config).to(device, dtype)
        fn = torch.compile(model, backend=backend, **({"options": options} if options else {}))
        out_steps = []
        for step in range(steps):
            gen = torch.Generator().manual_seed(step)
            ids = torch.randint(0, 128, (2, 32), generator=gen).to(device)
            model.zero_grad(set_to_none=True)
            out = fn(input_ids=ids, labels=ids)
            out.loss.backward()
            out_steps.append([out.logits.detach().clone(), out.loss.detach().clone()]
                             + [p.grad.clone() for p in model.parameters()])
        return out_steps

    return run


def _zoo(name: str, device: str, dtype: Any, steps: int):
    import torch

    sys.path.insert(0, str(ROOT / "tests"))
    import compiler_models

    def run(backend: str, options: dict | None = None) -> list[list[Any]]:
        torch._dynamo.reset()
        model, inputs = compiler_models.build(name, dtype)
        model = model.to(device)
        fn = torch.compile(model, backend=backend, **({"options": options} if options else {}))
        out_steps = []
        for step in range(steps):
            x = tuple((t * (1 + step)).to(device) for t in inputs)
            out, grads = compiler_models.run_step(model, x, fn, train=True)
            out_steps.append([out.clone(), *(g.clone() for g in grads)])
        return out_steps

    return run


def check(name: str, device: str, dtype_name: str, steps: int) -> dict[str, Any]:
    import torch

    import lite_compiler

    dtype = getattr(torch, dtype_name)
    run = _hf_llama(device, dtype, steps) if name == "llama_hf" else _zoo(name, device, dtype, steps)
    began = time.perf_counter()
    reference = run("aot_eager")
    before = len(lite_compiler.all_ledgers("lite"))
    ours = run("lite", {"bitwise_fusion": True})
    differ = [f"step {s} tensor {i}" for s, (a, b) in enumerate(zip(reference, ours))
              for i, (x, y) in enumerate(zip(a, b)) if x.dtype != y.dtype or not torch.equal(x, y)]
    rows = [e for ledger in lite_compiler.all_ledgers("lite")[before:] for e in ledger.entries
            if e.kind == "fusion"]
    return {"model": name, "device": device, "dtype": dtype_name, "steps": steps,
            "tensors_per_step": len(reference[0]), "bitwise_equal_to_aot_eager": not differ,
            "differ": differ[:10],
            "groups_fused": sum(e.stage == "runtime" and e.allowed for e in rows),
            "groups_fell_back": [e.reason for e in rows if e.stage == "runtime" and not e.allowed],
            "signatures_refused": sorted({e.name.removeprefix("bitwise_fusion ") for e in rows
                                          if e.stage == "fusion" and not e.allowed}),
            "seconds": round(time.perf_counter() - began, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float32", "float16"))
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    unknown = [m for m in args.models.split(",") if m not in MODELS]
    if unknown:
        print(f"gpu_bitwise_fused_check: unknown model(s) {unknown}; choose from {list(MODELS)}",
              file=sys.stderr)
        return 2
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("gpu_bitwise_fused_check: no CUDA device; use --device cpu", file=sys.stderr)
        return 2
    if args.device == "cuda":
        torch.use_deterministic_algorithms(True)
    failed = False
    for name in args.models.split(","):
        result = check(name, args.device, args.dtype, args.steps)
        failed = failed or not result["bitwise_equal_to_aot_eager"]
        print(json.dumps(result), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
