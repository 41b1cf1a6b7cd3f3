"""Run every CPU benchmark in bench/ and let each rewrite its own section of BENCHMARKS.md.

Usage: .venv/bin/python bench/run_all.py [--only NAME ...] [--only-stale] [--worktree]
                                         [--list] [--stale] [--dry-run]
(``make bench`` runs this.)

Which scripts: every ``bench/*.py`` that owns a BENCHMARKS.md section (its ``SECTION``, see
bench/provenance.py) and has a ``--write`` option, except ``gpu_*.py`` (those need a CUDA device
and are run on the GPU machine through bench/gpu_session.sh). Each is run as ``<script> --write``
in a fresh process, one after another (never in parallel: they time things and would slow each
other); with ``--write`` a script replaces only the section it owns, and starts it with the
``Measured: `command` at commit `sha``` line.

``--stale`` lists every section with its verdict (stale when a commit after the one it names
touched the code it exercises; bench/provenance.py) and exits 1 if any is stale; with
``--label`` it also writes the verdict into each stale section (a ``Stale:`` line).
``--only-stale`` reruns just the stale CPU sections.
Runs hold a lock (``.git/lite-guard-bench.lock``): a second ``run_all`` on the machine waits.
``--worktree`` runs the scripts in a new ``git worktree`` of HEAD (clean: what the section names
is what ran, whatever is being edited in this checkout meanwhile), with this venv and
``PYTHONPATH`` pointing at the worktree, then copies each rewritten section (and any result file
it wrote under bench/results/) back here. Exit status 1 if any benchmark failed, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(REPO))

from bench import provenance  # noqa: E402
from bench.markdown_section import replace_section  # noqa: E402


def cpu_scripts() -> list[provenance.Script]:
    return [s for s in provenance.scripts() if s.writes and s.sections and not s.gpu]


def label(verdicts: list[provenance.Verdict]) -> None:
    """Write each stale section's verdict into it, as a ``Stale:`` line under its ``Measured:``
    lines (and drop the line from sections that are fresh again): a number measured on older
    code is never left unlabelled. A rerun rewrites the section, label and all."""
    for v in verdicts:
        lines = [line for line in v.section.body.strip("\n").splitlines()
                 if not line.startswith("Stale: ")]
        if v.stale:
            last = max((i for i, line in enumerate(lines) if line.startswith("Measured: `")),
                       default=-1)
            rerun = (f"`.venv/bin/python bench/run_all.py --worktree --only {v.script.path.stem}`"
                     if v.script and not v.section.gpu else "the GPU machine (bench/gpu_session.sh)")
            lines.insert(last + 1, f"Stale: {v.why}; the numbers below are of that older code"
                                   f" (rerun: {rerun}).")
        body = "\n".join(lines)
        if body != v.section.body.strip("\n"):
            replace_section(REPO / "BENCHMARKS.md", v.section.title, body)


def list_stale(write_labels: bool = False) -> int:
    stale = 0
    verdicts = provenance.verdicts()
    if write_labels:
        label(verdicts)
    for v in verdicts:
        where = v.script.path.name if v.script else "no script"
        kind = "GPU" if v.section.gpu else "CPU"
        mark = "STALE" if v.stale else "fresh"
        stale += v.stale
        print(f"{mark}  {kind}  {v.section.title}  [{where}]: {v.why}")
        if v.stale and v.section.gpu:
            print("       (rerun on the GPU machine: bench/gpu_session.sh, see its section)")
    print(f"run_all: {stale} stale section(s)", file=sys.stderr)
    return 1 if stale else 0


@contextlib.contextmanager
def worktree():
    """A clean detached worktree of HEAD, removed afterwards; yields its root."""
    root = Path(tempfile.mkdtemp(prefix="lite-guard-bench-"))
    added = subprocess.run(["git", "worktree", "add", "--detach", str(root), "HEAD"],
                           cwd=REPO, capture_output=True, text=True)
    if added.returncode != 0:
        raise SystemExit(f"run_all: git worktree add {root} failed: {added.stderr.strip()}")
    try:
        (root / ".venv").symlink_to(REPO / ".venv")  # scripts that call .venv/bin/lite_guard
        yield root
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(root)], cwd=REPO,
                       capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def copy_back(root: Path, script: provenance.Script) -> None:
    """The sections ``script`` rewrote in the worktree, and its result files, into this checkout."""
    written = {s.title: s.body for s in provenance.sections((root / "BENCHMARKS.md").read_text())}
    for title in script.sections:
        if title in written:
            replace_section(REPO / "BENCHMARKS.md", title, written[title])
    changed = subprocess.run(["git", "status", "--porcelain", "--", "bench/results"], cwd=root,
                             capture_output=True, text=True).stdout.splitlines()
    for line in changed:
        relative = line[3:].strip()
        if (root / relative).is_file():
            shutil.copyfile(root / relative, REPO / relative)
            print(f"run_all: copied {relative} back", flush=True)


@contextlib.contextmanager
def one_at_a_time():
    """Hold an exclusive lock while benchmarks run: two ``run_all`` started by different people
    (or worktrees) on one machine wait for each other instead of timing each other's load."""
    import fcntl

    common = subprocess.run(["git", "rev-parse", "--git-common-dir"], cwd=REPO,
                            capture_output=True, text=True).stdout.strip() or ".git"
    path = (REPO / common / "lite-guard-bench.lock").resolve()
    with open(path, "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            print(f"run_all: waiting for the benchmark run that holds {path} ({lock.read().strip()})",
                  flush=True)
            fcntl.flock(lock, fcntl.LOCK_EX)
        lock.seek(0)
        lock.truncate()
        lock.write(f"pid {os.getpid()}, since {time.strftime('%H:%M:%S')}")
        lock.flush()
        yield


def run(scripts: list[provenance.Script], in_worktree: bool, dry_run: bool,
        extra: list[str] = ()) -> int:
    if dry_run:
        return run_locked(scripts, in_worktree, dry_run, extra)
    with one_at_a_time():
        return run_locked(scripts, in_worktree, dry_run, extra)


def run_locked(scripts: list[provenance.Script], in_worktree: bool, dry_run: bool,
               extra: list[str] = ()) -> int:
    failed, summary = [], []
    with (worktree() if in_worktree and not dry_run else contextlib.nullcontext(REPO)) as root:
        env = dict(os.environ)
        if root != REPO:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
            env["BENCH_MEASURED_NOTE"] = "from a clean git worktree (bench/run_all.py --worktree)"
        for script in scripts:
            command = [sys.executable, str(script.path.relative_to(REPO)), *extra, "--write"]
            print(f"$ {' '.join(command)}  (in {root}; load average {os.getloadavg()[0]:.1f})",
                  flush=True)
            if dry_run:
                continue
            started = time.perf_counter()
            rc = subprocess.run(command, cwd=root, env=env).returncode
            elapsed = time.perf_counter() - started
            summary.append(f"{'ok    ' if rc == 0 else 'FAILED'} {script.path.name}"
                           f" ({elapsed:.0f} s, exit {rc})")
            if rc != 0:
                failed.append(script.path.name)
            elif root != REPO:
                copy_back(root, script)
    print("\n".join(["", "run_all:", *("  " + line for line in summary)]))
    if failed:
        print(f"run_all: {len(failed)} benchmark(s) failed; their BENCHMARKS.md sections were"
              " left as they were", file=sys.stderr)
        return 1
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="NAME",
                        help="run just these scripts (file name, with or without .py)")
    parser.add_argument("--only-stale", action="store_true",
                        help="run just the scripts whose sections are stale")
    parser.add_argument("--stale", action="store_true",
                        help="list every section and whether it is stale; exit 1 if any is")
    parser.add_argument("--label", action="store_true",
                        help="with --stale: write the verdict into each stale section (a Stale: line)")
    parser.add_argument("--worktree", action="store_true",
                        help="run in a clean git worktree of HEAD and copy the sections back")
    parser.add_argument("--args", default="", metavar="'ARGS'",
                        help="extra arguments for the one script named by --only (e.g. fewer repeats)")
    parser.add_argument("--list", action="store_true", help="list the scripts and exit")
    parser.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    args = parser.parse_args()
    if args.label and not args.stale:
        parser.error("--label goes with --stale")
    if args.stale:
        return list_stale(args.label)

    scripts = cpu_scripts()
    if args.only:
        wanted = {name.removesuffix(".py") for name in args.only}
        unknown = wanted - {s.path.stem for s in scripts}
        if unknown:
            print(f"run_all: no CPU benchmark named {', '.join(sorted(unknown))} in {BENCH}"
                  f" (have: {', '.join(s.path.stem for s in scripts)})", file=sys.stderr)
            return 2
        scripts = [s for s in scripts if s.path.stem in wanted]
    if args.only_stale:
        stale = {v.script.path for v in provenance.verdicts() if v.stale and v.script}
        scripts = [s for s in scripts if s.path in stale]
        if not scripts:
            print("run_all: no stale CPU section", file=sys.stderr)
    if args.list:
        print("\n".join(f"{s.path.relative_to(REPO)}: {'; '.join(s.sections)}" for s in scripts))
        return 0
    extra = shlex.split(args.args)
    if extra and len(scripts) != 1:
        parser.error("--args goes with --only naming exactly one script")
    return run(scripts, args.worktree, args.dry_run, extra)


if __name__ == "__main__":
    sys.exit(main())
