"""Fuzzer throughput: programs per minute, cold (empty compile caches) and warm (same programs
again with the caches the first run filled). Each run is a fresh `lite_guard fuzz` process.

    .venv/bin/python bench/fuzz_throughput.py --count 100 --write
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.markdown_section import replace_section  # noqa: E402


def _commit() -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parent.parent).stdout.strip() or "unknown"

SECTION = "Fuzzer throughput"


def fuzz_once(count: int, seed: int, cache_dir: str, extra: list[str]) -> tuple[float, str]:
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache_dir, TORCHINDUCTOR_COMPILE_THREADS="1")
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "lite_guard", "fuzz", "--count", str(count),
                             "--seed", str(seed), "--out", cache_dir, *extra],
                            capture_output=True, text=True, env=env, timeout=3600)
    seconds = time.perf_counter() - started
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else result.stderr[-500:]
    return seconds, summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write", action="store_true", help="update BENCHMARKS.md")
    args = parser.parse_args()
    rows = []
    for label, extra in (("lite vs aot_eager", []), ("lite vs aot_eager, --regions", ["--regions"])):
        with tempfile.TemporaryDirectory() as cache_dir:
            for phase in ("cold", "warm"):
                seconds, summary = fuzz_once(args.count, args.seed, cache_dir, extra)
                done = sum(int(n) for n in re.findall(r"(\d+) (?:passed|failed|skipped)", summary))
                rows.append((label, phase, done, seconds, done / seconds * 60, summary))
                print(f"{label:32} {phase}: {done} programs in {seconds:.1f} s"
                      f" = {done / seconds * 60:.0f}/min ({summary})")
    load = os.getloadavg()[0]
    lines = [
        f"Produced by `.venv/bin/python bench/fuzz_throughput.py --count {args.count} --write`"
        f" at commit {_commit()} on {os.cpu_count()} CPUs (load average {load:.1f} at the end). Each row is one fresh"
        " `lite_guard fuzz` process (torch import included); every program is compiled twice"
        " (aot_eager and lite) and run forward, and backward where drawn. Warm = the same"
        " programs again with the Inductor caches the cold run filled.",
        "",
        "| run | caches | programs | seconds | programs / min | result |",
        "|---|---|---|---|---|---|",
    ] + [f"| {label} | {phase} | {done} | {seconds:.1f} | {rate:.0f} | {summary} |"
         for label, phase, done, seconds, rate, summary in rows]
    if args.write:
        replace_section(Path(__file__).resolve().parent.parent / "BENCHMARKS.md", SECTION,
                        "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
