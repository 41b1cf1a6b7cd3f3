"""Fuzzer throughput: programs per minute of ``lite_guard fuzz``, cold and warm.

    .venv/bin/python bench/fuzz_throughput.py --count 100 --write

Every run is a fresh ``python -m lite_guard fuzz`` process, timed by this parent from before the
child starts, so interpreter start-up and every import (torch, lite_compiler) are inside the
clock. *Cold*: empty Inductor compile caches (``TORCHINDUCTOR_CACHE_DIR``) and an empty
lite-guard cache (``LITE_GUARD_CACHE_DIR``: the validated registry); *warm*: the same programs
again, in a new process, on the caches the cold run filled. The start-up and imports are also
measured on their own (a fresh process that imports what ``lite_guard fuzz`` imports and runs
nothing), so the rate without them is shown too. Runs one after another, never in parallel.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.markdown_section import replace_section  # noqa: E402

SECTION = "Fuzzer throughput"
# What a `lite_guard fuzz` process imports before its first program (its import cost, apart).
IMPORTS = ("import lite_guard.cli, torch, lite_compiler, lite_compiler.fuzz.session,"
           " lite_compiler.fuzz.runner")


def timed(command: list[str], env: dict) -> tuple[float, float, subprocess.CompletedProcess]:
    """Wall and CPU seconds of one fresh child process (CPU: user + system, its workers too)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=3600, cwd=REPO)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, result


def fresh_env(cache_dir: str) -> dict:
    return dict(os.environ, TORCHINDUCTOR_CACHE_DIR=f"{cache_dir}/inductor",
                LITE_GUARD_CACHE_DIR=f"{cache_dir}/lite_guard", TORCHINDUCTOR_COMPILE_THREADS="1")


def fuzz_once(count: int, seed: int, cache_dir: str, extra: list[str]) -> tuple[float, float, str]:
    wall, cpu, result = timed([sys.executable, "-m", "lite_guard", "fuzz", "--count", str(count),
                               "--seed", str(seed), "--out", f"{cache_dir}/repros", *extra],
                              fresh_env(cache_dir))
    if result.returncode not in (0, 1) or not result.stdout.strip():
        raise SystemExit(f"lite_guard fuzz {' '.join(extra)} exited {result.returncode}:"
                         f" {result.stderr.strip()[-500:]}")
    return wall, cpu, result.stdout.strip().splitlines()[-1]


def imports_once() -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as cache_dir:
        wall, cpu, result = timed([sys.executable, "-c", IMPORTS], fresh_env(cache_dir))
    if result.returncode != 0:
        raise SystemExit(f"the import-only process failed: {result.stderr.strip()[-500:]}")
    return wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--import-repeats", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="update BENCHMARKS.md")
    args = parser.parse_args()
    load_before = os.getloadavg()
    imports = min(imports_once() for _ in range(args.import_repeats))
    print(f"start-up + imports: {imports[0]:.2f} s wall, {imports[1]:.2f} s CPU (min of"
          f" {args.import_repeats})", flush=True)
    rows = []
    for label, extra in (("lite vs aot_eager", []), ("lite vs aot_eager, --regions", ["--regions"])):
        with tempfile.TemporaryDirectory() as cache_dir:
            for phase in ("cold", "warm"):
                wall, cpu, summary = fuzz_once(args.count, args.seed, cache_dir, extra)
                done = sum(int(n) for n in re.findall(r"(\d+) (?:passed|failed|skipped)", summary))
                rows.append((label, phase, done, wall, cpu, summary))
                print(f"{label:30} {phase}: {done} programs in {wall:.1f} s (CPU {cpu:.1f} s)"
                      f" = {done / wall * 60:.0f}/min ({summary})", flush=True)
    load_after = os.getloadavg()
    lines = [
        "Each row is one fresh `python -m lite_guard fuzz --count N` process, timed from before"
        " the process starts (interpreter start-up, `import torch` and `import lite_compiler`"
        " inside the clock); every program is compiled twice (aot_eager and lite) and run"
        " forward, and backward where drawn. *Cold*: empty Inductor caches and an empty"
        " lite-guard cache (`TORCHINDUCTOR_CACHE_DIR`, `LITE_GUARD_CACHE_DIR` new directories);"
        " *warm*: the same programs again in a new process on the caches the cold run filled."
        f" *Start-up + imports*: a fresh process that only runs `{IMPORTS}` (min of"
        f" {args.import_repeats}): {imports[0]:.2f} s wall, {imports[1]:.2f} s CPU; the last"
        " column leaves it out. CPU = user + system seconds of the process."
        f" {os.cpu_count()} CPUs shared with other sessions; load average (1/5/15 min)"
        f" {'/'.join(f'{x:.1f}' for x in load_before)} before,"
        f" {'/'.join(f'{x:.1f}' for x in load_after)} after: wall times are upper bounds.",
        "",
        "| run | caches | programs | wall s | CPU s | programs / min | programs / min without"
        " start-up + imports | result |",
        "|---|---|---|---|---|---|---|---|",
    ] + [f"| {label} | {phase} | {done} | {wall:.1f} | {cpu:.1f} | {done / wall * 60:.0f} |"
         f" {done / max(wall - imports[0], 1e-9) * 60:.0f} | {summary} |"
         for label, phase, done, wall, cpu, summary in rows]
    body = "\n".join(lines)
    print(body)
    if args.write:
        replace_section(REPO / "BENCHMARKS.md", SECTION, body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
