"""Regions on a Hugging Face Llama you do not edit: every RMSNorm and every MLP compiled by
Inductor in its own region, everything else running as the ATen ops aot_eager runs.

    .venv/bin/python examples/hf_llama_regions.py

The model is built from its config with random weights (nothing is downloaded). Steps:
1. without regions, ``backend="lite"`` is bitwise equal to ``aot_eager`` (outputs and grads);
2. ``lite_compiler.module_regions`` puts ``LlamaRMSNorm`` modules into region "norm" and
   ``LlamaMLP`` modules into region "mlp" (with its own Inductor config), before torch.compile;
3. the ledger shows each region's Inductor code and which modules it holds; leaving the ``with``
   restores the model exactly.
"""

from __future__ import annotations

import copy

import torch

import lite_compiler
from lite_compiler.testing import ensure_torchvision_importable


def build_llama(layers: int = 2) -> torch.nn.Module:
    ensure_torchvision_importable()  # transformers imports torchvision when it is installed
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64,
                         num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=64, use_cache=False)
    torch.manual_seed(0)
    return LlamaForCausalLM(config)


def train_step(model: torch.nn.Module, input_ids: torch.Tensor, backend: str) -> list[torch.Tensor]:
    """One compiled forward + backward; returns the logits and every parameter's gradient."""
    torch._dynamo.reset()
    logits = torch.compile(model, backend=backend)(input_ids=input_ids).logits
    logits.backward(torch.ones_like(logits))
    return [logits.detach()] + [p.grad for p in model.parameters()]


def main() -> dict:
    ensure_torchvision_importable()
    from transformers.models.llama.modeling_llama import LlamaMLP, LlamaRMSNorm

    model = build_llama()
    input_ids = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(0))

    # 1. No regions: ours runs every op as its ATen op, exactly as aot_eager does.
    reference = train_step(copy.deepcopy(model), input_ids, "aot_eager")
    ours = train_step(copy.deepcopy(model), input_ids, "lite")
    bitwise = all(torch.equal(a, b) for a, b in zip(reference, ours))
    print(f"no regions: lite vs aot_eager bitwise on logits and {len(ours) - 1} grads: {bitwise}")

    # 2. Regions by class, applied before torch.compile; removed when the block ends.
    lite_compiler.clear_ledgers()
    with lite_compiler.module_regions(model, [
        lite_compiler.RegionRule(LlamaRMSNorm, id="norm"),
        lite_compiler.RegionRule(LlamaMLP, id="mlp", configs={"cpp.simdlen": 8}),
    ]) as regions:
        assignments = dict(regions.assignments)
        print("regions:", assignments)
        with_regions = train_step(model, input_ids, "lite")
    ledger = lite_compiler.last_ledger()

    # 3. What the ledger says: each region graph, its modules, and that Inductor compiled it.
    for graph, modules in ledger.region_modules.items():
        fused = "cpp_fused" in ledger.region_code.get(graph, "")
        print(f"  {graph}: {', '.join(modules)}{'  (Inductor kernels)' if fused else ''}")
    diff = max((a.float() - b.float()).abs().max().item() for a, b in zip(reference, with_regions))
    print(f"with regions: max abs difference to aot_eager {diff:.2e} (Inductor's code in regions)")
    print("restored:", lite_compiler.regions_of(model) == {})
    return {"bitwise": bitwise, "assignments": assignments, "ledger": ledger,
            "max_diff": diff, "restored": lite_compiler.regions_of(model) == {}}


if __name__ == "__main__":
    main()
