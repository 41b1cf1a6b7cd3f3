"""Run every CPU benchmark in bench/ and let each rewrite its own section of BENCHMARKS.md.

Usage: .venv/bin/python bench/run_all.py [--only NAME ...] [--list] [--dry-run]
(``make bench`` runs this.)

Which scripts: every ``bench/*.py`` that has a ``--write`` option (the ones that own a
BENCHMARKS.md section; helpers such as ``markdown_section.py`` or ``compile_zoo_worker.py`` have
none), except this one and ``gpu_*.py`` (those need a CUDA device and are run by hand on the GPU
machine). Each script is run as ``<script> --write`` in a fresh process, one after another (never
in parallel: they time things and would slow each other); with ``--write`` a script replaces only
the BENCHMARKS.md section it owns, so sections owned by other scripts or written by hand stay as
they are. tests/test_docs.py checks that every CPU section of BENCHMARKS.md has such a script.
Exit status 1 if any failed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent


def cpu_scripts() -> list[Path]:
    return sorted(p for p in BENCH.glob("*.py")
                  if p.name != Path(__file__).name and not p.name.startswith(("gpu_", "_"))
                  and '"--write"' in p.read_text())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="NAME",
                        help="run just these scripts (file name, with or without .py)")
    parser.add_argument("--list", action="store_true", help="list the scripts and exit")
    parser.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    args = parser.parse_args()

    scripts = cpu_scripts()
    if args.only:
        wanted = {name.removesuffix(".py") for name in args.only}
        unknown = wanted - {p.stem for p in scripts}
        if unknown:
            print(f"run_all: no CPU benchmark named {', '.join(sorted(unknown))} in {BENCH}"
                  f" (have: {', '.join(p.stem for p in scripts)})", file=sys.stderr)
            return 2
        scripts = [p for p in scripts if p.stem in wanted]
    if args.list:
        print("\n".join(str(p.relative_to(REPO)) for p in scripts))
        return 0

    failed, summary = [], []
    for script in scripts:
        command = [sys.executable, str(script.relative_to(REPO)), "--write"]
        print(f"$ {' '.join(command)}  (load average {os.getloadavg()[0]:.1f})", flush=True)
        if args.dry_run:
            continue
        started = time.perf_counter()
        rc = subprocess.run(command, cwd=REPO).returncode
        elapsed = time.perf_counter() - started
        summary.append(f"{'ok    ' if rc == 0 else 'FAILED'} {script.name} ({elapsed:.0f} s, exit {rc})")
        if rc != 0:
            failed.append(script.name)
    print("\n".join(["", "run_all:", *("  " + line for line in summary)]))
    if failed:
        print(f"run_all: {len(failed)} benchmark(s) failed; their BENCHMARKS.md sections were"
              " left as they were", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
