"""Time ``lite_guard check``: cold and warm (cached) on torch's pass trees, and one changed file.

Usage: .venv/bin/python bench/bench_check.py [--repeat N] [--write]
With --write, replaces the "## Lint" section of BENCHMARKS.md with the results.

Each timing is the wall time of a fresh ``lite_guard check`` process (start-up included), the
way a user or a pre-commit hook sees it. The load average before and after is printed because
the machine may be shared: a run under load is slower than the tool is.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.markdown_section import replace_section  # noqa: E402
from lint_rules.command import TORCH_TREES, installed_torch_trees  # noqa: E402

LITE_GUARD = [sys.executable, "-m", "lite_guard", "check", "--no-project"]
CHANGED = "_inductor/fx_passes/post_grad.py"  # a file the prefilter sends to libcst


def timed(args: list[str], cache: Path) -> float:
    env = {**os.environ, "LITE_GUARD_CACHE_DIR": str(cache)}
    start = time.perf_counter()
    run = subprocess.run(args, capture_output=True, text=True, env=env, cwd=REPO)
    elapsed = time.perf_counter() - start
    if run.returncode != 0:
        raise SystemExit(f"{' '.join(args)} exited {run.returncode}:\n{run.stdout}{run.stderr}")
    return elapsed


def copy_trees(target: Path) -> Path:
    source = installed_torch_trees()[0].parent
    for sub in TORCH_TREES:
        shutil.copytree(source / sub, target / "torch" / sub,
                        ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyc"))
    shutil.copy(source / "version.py", target / "torch" / "version.py")
    return target / "torch"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="update BENCHMARKS.md")
    args = parser.parse_args()

    rows: list[tuple[str, list[float], str]] = []
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        caches = [tmp / f"cold{i}" for i in range(args.repeat)]
        rows.append(("cold, full tree (`check --torch`, empty cache)",
                     [timed([*LITE_GUARD, "--torch"], c) for c in caches], "goal <= 10 s"))
        rows.append(("cold, full tree, `--jobs 1`",
                     [timed([*LITE_GUARD, "--torch", "--jobs", "1"], tmp / f"j1-{i}")
                      for i in range(args.repeat)], "reference"))
        rows.append(("warm, full tree (`check --torch`, cached)",
                     [timed([*LITE_GUARD, "--torch"], caches[0]) for _ in range(args.repeat)],
                     "goal <= 1 s"))
        rows.append(("`check --no-cache --torch` (no cache at all)",
                     [timed([*LITE_GUARD, "--torch", "--no-cache"], caches[0])], "reference"))

        root = copy_trees(tmp / "copy")
        trees = [str(root / sub) for sub in TORCH_TREES]
        cache = tmp / "copy-cache"
        timed([*LITE_GUARD, *trees], cache)
        changed = root / CHANGED
        original = changed.read_text()
        tree_times, file_times = [], []
        for i in range(args.repeat):
            changed.write_text(original + f"\n# edit {i}\n")
            tree_times.append(timed([*LITE_GUARD, *trees], cache))
            changed.write_text(original + f"\n# other edit {i}\n")
            file_times.append(timed([*LITE_GUARD, str(changed)], cache))
        rows.append((f"one changed file in the full tree ({CHANGED}, 80 KB, parsed)",
                     tree_times, "goal <= 0.5 s"))
        rows.append(("`check` on just that changed file", file_times, "goal <= 0.5 s"))
    load_after = os.getloadavg()[0]

    lines = [
        "## Lint",
        "",
        "`lite_guard check` on the installed torch's pass trees (`_inductor`, `_functorch`,",
        f"`fx/passes`: {sum(1 for s in TORCH_TREES for _ in (installed_torch_trees()[0].parent / s).rglob('*.py'))}"
        " files), wall time of a fresh process, start-up included.",
        f"Produced by `.venv/bin/python bench/bench_check.py --repeat {args.repeat} --write` on"
        f" {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()};"
        f" load average {load_before:.1f} before, {load_after:.1f} after (the machine is shared,"
        " so these are upper bounds; min is the best estimate of the tool itself).",
        "",
        "| case | min | median | max | note |",
        "|---|---|---|---|---|",
    ]
    for name, times, note in rows:
        lines.append(f"| {name} | {min(times):.2f} s | {statistics.median(times):.2f} s |"
                     f" {max(times):.2f} s | {note} |")
    section = "\n".join(lines) + "\n"
    print(section)
    if args.write:
        replace_section(REPO / "BENCHMARKS.md", "Lint", section.split("\n", 1)[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
