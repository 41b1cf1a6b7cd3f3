"""``lite_guard fuzz``: random programs, compiled under aot_eager and lite mode, compared bit for bit."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from lite_guard.commands._common import unwritable
from lite_guard.errors import escape_text


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "fuzz", help="bitwise-equivalence fuzzing of lite mode against aot_eager")
    parser.add_argument("--count", type=int, default=100, help="programs to run (default 100)")
    parser.add_argument("--seed", type=int, default=0, help="seed; the same seed runs the same programs")
    parser.add_argument("--time", type=float, default=None, metavar="SECONDS",
                        help="stop after this many seconds even if --count is not reached")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--regions", action="store_true",
                        help="also annotate random ops for Inductor (compared with a tolerance)")
    parser.add_argument("--max-steps", type=int, default=8, help="ops per program (default 8)")
    parser.add_argument("--target", default="lite",
                        choices=("lite", "upstream-lite", "inductor"),
                        help="what is compared with aot_eager (default: our lite compiler)")
    parser.add_argument("--force", action="append", default=[], metavar="KEY=VALUE",
                        help="patch an Inductor config on the target, e.g. to plant a bug")
    parser.add_argument("--out", type=Path, default=Path("fuzz-repros"),
                        help="folder for shrunk reproducers (default ./fuzz-repros)")
    parser.add_argument("--no-shrink", action="store_true", help="write failing programs as found")
    parser.add_argument("--sweep", action="store_true",
                        help="registry mode: turn on each lite-off config one at a time"
                             " (on upstream-lite) and report which break bitwise equality")
    parser.add_argument("--sweep-out", type=Path, default=Path("docs/registry-evidence.md"),
                        help="where --sweep writes its table")
    parser.set_defaults(run=run)


def parse_force(items: list[str]) -> dict:
    forced = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--force expects KEY=VALUE, got '{item}'")
        try:
            forced[key] = json.loads(raw.lower() if raw in ("True", "False") else raw)
        except json.JSONDecodeError:
            forced[key] = raw
        except RecursionError:  # '[[[[...' 100,000 deep: one line, not a traceback
            raise ValueError(f"--force {key}: the value is nested too deeply to be a config"
                             " value") from None
    return forced


def check_forced(forced: dict) -> None:
    """Every ``--force`` key must be an Inductor config of the installed torch, with a value of
    its type: a typo is a usage error, not "N failed" and reproducers of a bug that is not there."""
    import difflib

    import torch
    import torch._inductor.config as inductor_config

    known = inductor_config.get_config_copy()
    for key, value in forced.items():
        if key not in known:
            close = difflib.get_close_matches(key, list(known), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ValueError(f"--force {key!r}: torch {torch.__version__} has no Inductor config"
                             f" of that name{hint}")
        default = known[key]
        if isinstance(default, bool) != isinstance(value, bool) or (
                isinstance(default, (int, float)) and not isinstance(value, (int, float))) or (
                isinstance(default, str) and not isinstance(value, str)):
            raise ValueError(f"--force {key}={value!r}: expected a {type(default).__name__}"
                             f" like its default {default!r}")


def run(args: argparse.Namespace) -> int:
    # `not 0 < t < inf`: NaN compares false with everything, so `t <= 0` let --time nan through.
    if args.count < 1 or args.max_steps < 1 or (args.time is not None and
                                                not 0 < args.time < float("inf")):
        print("lite_guard fuzz: --count, --time and --max-steps must be positive (and --time"
              " finite)", file=sys.stderr)
        return 2
    problem = unwritable(args.sweep_out, folder=False) if args.sweep else unwritable(args.out, True)
    if problem:
        option = "--sweep-out" if args.sweep else "--out"
        print(f"lite_guard fuzz: {option}: {problem}; pass another path", file=sys.stderr)
        return 2
    from lite_compiler.commands import torch_start_problem

    problem = torch_start_problem()
    if problem:
        print(f"lite_guard fuzz: {problem}", file=sys.stderr)
        return 2
    try:
        forced = parse_force(args.force)
        if forced:
            check_forced(forced)
    except ValueError as exc:
        print(f"lite_guard fuzz: {exc}", file=sys.stderr)
        return 2
    from lite_compiler.fuzz.session import FuzzSession, run_sweep

    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            print("lite_guard fuzz: --device cuda asked for, but torch sees no CUDA device",
                  file=sys.stderr)
            return 2
    if args.sweep:
        return run_sweep(args)
    session = FuzzSession(target=args.target, force=forced, device=args.device,
                          regions=args.regions, max_steps=args.max_steps, out=args.out,
                          shrink=not args.no_shrink)
    started = time.monotonic()
    deadline = None if args.time is None else started + args.time
    summary = session.run(count=args.count, seed=args.seed, deadline=deadline)
    print(summary.line())
    if summary.invalid and not summary.passed and not summary.failed:
        # aot_eager itself refused every program: nothing was compared, which is no pass.
        print(escape_text(f"lite_guard fuzz: every program was skipped, so nothing was tested"
                          f" (the aot_eager reference failed: {summary.first_skip}); fix what"
                          " it says and run again"), file=sys.stderr)
        return 2
    return 1 if summary.failed else 0
