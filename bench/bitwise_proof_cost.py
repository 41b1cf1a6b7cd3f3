"""What the signature proofs cost: seconds of enumeration and of the whole signature check
(compile included) per checked graph, on the device given (cpu default, or cuda).

    .venv/bin/python bench/bitwise_proof_cost.py [--device cuda] [--out results.json]

Each case compiles a tiny function with bitwise_fusion on, with the verdict cache off
(LITE_GUARD_VERDICT_CACHE=0) and no verdict in memory, so every signature is checked. The timers
wrap lite_compiler.bitwise_check._run_checks (the whole check) and _enumerate (the chunks only).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

os.environ["LITE_GUARD_VERDICT_CACHE"] = "0"

import torch  # noqa: E402

import lite_compiler  # noqa: E402
from lite_compiler import bitwise_check  # noqa: E402

CASES = {
    "bf16 unary (floor, cast)": lambda x, y: torch.floor(x).float(),
    "bf16 binary (mul, cast)": lambda x, y: (x * y).float(),
    "bf16 binary (silu_backward via silu*y, grad)": None,  # built below: needs a backward
    "fp32 unary (exp, *2)": lambda x, y: torch.exp(x.float()) * 2.0,
}


def _timed(runs: list, enums: list):
    run, enum = bitwise_check._run_checks, bitwise_check._enumerate

    def timed_run(*a, **k):
        start = time.perf_counter()
        out = run(*a, **k)
        runs.append(time.perf_counter() - start)
        return out

    def timed_enum(check_gm, inputs, enumerations, whys):
        start = time.perf_counter()
        enum(check_gm, inputs, enumerations, whys)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        enums.append({"seconds": time.perf_counter() - start, "signatures": [
            {"signature": bitwise_check.describe(sig), "count": e[0].count,
             "exhaustive": e[0].exhaustive, "differs": sig in whys} for sig, e in enumerations.items()]})

    bitwise_check._run_checks, bitwise_check._enumerate = timed_run, timed_enum


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out")
    args = parser.parse_args()
    runs: list = []
    enums: list = []
    _timed(runs, enums)
    results = []
    for name, fn in CASES.items():
        torch._dynamo.reset()
        bitwise_check.forget_verdicts()
        runs.clear()
        enums.clear()
        gen = torch.Generator(device=args.device).manual_seed(0)
        x, y = (torch.randn(64, 96, device=args.device, generator=gen).bfloat16() for _ in range(2))
        if fn is None:
            x.requires_grad_()
            y.requires_grad_()

            def fn(a, b):
                return torch.nn.functional.silu(a) * b
        start = time.perf_counter()
        out = torch.compile(fn, backend="lite", options={"bitwise_fusion": True})(x, y)
        if out.requires_grad:
            out.float().sum().backward()
        total = time.perf_counter() - start
        rows = [e for e in lite_compiler.last_ledger("lite").entries if e.kind == "fusion"
                and e.stage == "fusion" and e.name.startswith("bitwise_fusion aten.")]
        results.append({"case": name, "device": args.device, "compile_s": round(total, 3),
                        "signature_checks_s": [round(r, 3) for r in runs], "enumerations": enums[:],
                        "verdicts": {e.name: e.reason for e in rows}})
        print(f"{name}: compile {total:.2f} s, checks {[round(r, 2) for r in runs]} s, enumeration "
              f"{[round(e['seconds'], 2) for e in enums]} s")
        for e in enums:
            for s in e["signatures"]:
                print(f"    {s['signature']}: {'exhaustive' if s['exhaustive'] else 'sampled'} "
                      f"{s['count']:,}{', differs' if s['differs'] else ''}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"torch": torch.__version__, "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
