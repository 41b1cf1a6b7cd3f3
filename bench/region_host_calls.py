"""Host work of one training step, counted: the Python calls (``sys.setprofile``) of
sin -> x * x + 1 -> cos, forward and backward, on CPU with tiny tensors, after three warm-up
steps, for aot_eager, default Inductor, lite, and lite with the middle in a region. A count, not
a time: the machine's load does not move it.

    .venv/bin/python bench/region_host_calls.py [VARIANT ...] [--top N]
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

import torch
import torch.fx.traceback as fx_traceback

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import lite_compiler  # noqa: E402,F401  (the backend and its regions)


def plain(x):
    x = torch.sin(x)
    x = x * x + 1
    return torch.cos(x)


def annotated(x):
    x = torch.sin(x)
    with fx_traceback.annotate({"compile_with_inductor": 0}):
        x = x * x + 1
    return torch.cos(x)


VARIANTS = {
    "aot_eager": lambda: torch.compile(plain, backend="aot_eager", fullgraph=True),
    "inductor": lambda: getattr(torch.compile, "__wrapped__", torch.compile)(plain, fullgraph=True),
    "lite": lambda: torch.compile(plain, backend="lite", fullgraph=True),
    "lite_region": lambda: torch.compile(annotated, backend="lite", fullgraph=True),
}


def calls_per_step(variant: str) -> collections.Counter:
    torch._dynamo.reset()
    fn = VARIANTS[variant]()
    x = torch.randn(64, 64, requires_grad=True)
    for _ in range(3):  # compile, then warm
        x.grad = None
        fn(x).sum().backward()
    counts: collections.Counter = collections.Counter()

    def count(frame, event, arg):
        if event == "call":
            where = frame.f_code.co_filename.split("site-packages/")[-1]
            counts[f"{where}:{frame.f_code.co_name}"] += 1

    x.grad = None
    sys.setprofile(count)
    fn(x).sum().backward()
    sys.setprofile(None)
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variants", nargs="*", metavar="VARIANT",
                        help=f"of {', '.join(VARIANTS)} (default: all)")
    parser.add_argument("--top", type=int, default=0, help="also list the N most called functions")
    args = parser.parse_args()
    unknown = [v for v in args.variants if v not in VARIANTS]
    if unknown:
        parser.error(f"unknown variant {unknown[0]!r}; choose from {', '.join(VARIANTS)}")
    for variant in args.variants or VARIANTS:
        counts = calls_per_step(variant)
        print(f"{variant}: {sum(counts.values())} Python calls per training step")
        for name, n in counts.most_common(args.top):
            print(f"  {n:5d} {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
