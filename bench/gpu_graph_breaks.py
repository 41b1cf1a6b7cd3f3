"""Does putting modules into regions break the Dynamo graph? Graph count and break reasons.

For the llama and resnet models of bench/gpu_models.py at tiny sizes: ``torch._dynamo.explain``
of one training forward without regions and with one region per decoder layer / residual block
(``lite_compiler.module_regions``). One Dynamo graph is expected in both cases; each break is a
separate graph (another CUDA graph, another frame that may be recompiled with dynamic shapes).

    GPU_MODELS_TINY=1 python bench/gpu_graph_breaks.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script
os.environ.setdefault("GPU_MODELS_TINY", "1")

from bench.gpu_models import apply_regions, build  # noqa: E402


def explain(model_name: str, regions: str | None) -> dict:
    import torch

    import lite_compiler  # noqa: F401  (routes backend="lite"; module_regions)

    torch._dynamo.reset()
    model, inputs = build(model_name)
    if regions:
        apply_regions(model_name, model, regions)

    def forward(*args):
        if model_name == "llama":
            return model(input_ids=args[0], labels=args[1]).loss
        return model(args[0])

    result = torch._dynamo.explain(forward)(*inputs)
    reasons = [f"{getattr(b, 'reason', b)}"[:300] for b in result.break_reasons]
    frames = [f"{getattr(b, 'user_stack', [''])[-1:]}"[:200] for b in result.break_reasons]
    return {"model": model_name, "regions": regions or "none", "graphs": result.graph_count,
            "graph_breaks": result.graph_break_count, "break_reasons": reasons[:6],
            "break_where": frames[:6], "torch": torch.__version__}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rows = []
    for model_name in ("llama", "resnet"):
        for regions in (None, "layers"):
            try:
                rows.append(explain(model_name, regions))
            except Exception as error:  # report and go on: this is a diagnosis
                rows.append({"model": model_name, "regions": regions or "none",
                             "error": f"{type(error).__name__}: {error}"[:500]})
            print(json.dumps(rows[-1]), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
