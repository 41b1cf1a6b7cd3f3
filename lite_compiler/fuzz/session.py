"""A fuzzing session: draw programs from a seed, check each, shrink failures, summarise."""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lite_compiler.fuzz.programs import Program, program_strategy


class _Enough(Exception):
    """Raised inside hypothesis's test body to stop drawing (count reached, or the deadline)."""


def each_program(count: int, seed: int, visit: Callable[[Program], None], regions: bool = False,
                 max_steps: int = 8, deadline: float | None = None) -> int:
    """Call ``visit`` on up to ``count`` distinct programs drawn from ``seed``, in draw order, each
    as soon as it is drawn: a huge ``--count`` never draws (or holds) programs it will not run,
    and ``deadline`` (``time.monotonic()``) stops the drawing too. Returns how many were visited.
    The same (count, seed, regions, max_steps) always yields the same programs."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import seed as hypothesis_seed

    drawn: dict[Program, None] = {}  # ordered set: hypothesis may repeat its simplest examples
    # What ``visit`` raised (a full disk under --out, Ctrl-C): re-raised as itself after the
    # drawing stops, never seen by hypothesis (which would replay the program and call it flaky).
    raised: list[BaseException] = []

    # Ask for a few more than needed so that repeats still leave `count` distinct programs.
    @hypothesis_seed(seed)
    @settings(max_examples=count + count // 4 + 10, database=None, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck),
              verbosity=Verbosity.quiet)  # quiet: no "Falsifying example" when _Enough stops it
    @given(program_strategy(max_steps=max_steps, regions=regions))
    def collect(program: Program) -> None:
        if raised or len(drawn) >= count or (deadline is not None and time.monotonic() > deadline):
            raise _Enough
        if program not in drawn:
            drawn[program] = None
            try:
                visit(program)
            except BaseException as exc:  # noqa: BLE001  (re-raised below, unchanged)
                raised.append(exc)
                raise _Enough from None

    try:
        with warnings.catch_warnings():
            # A long program (--max-steps 1000000) has a repr of tens of KB, and hypothesis warns
            # that building it is expensive: two raw lines on stderr, and under
            # PYTHONWARNINGS=error (a CI setting) a traceback that ended the run. Its repr is
            # hypothesis's bookkeeping, not ours to print (reproducers are written as scripts).
            warnings.filterwarnings("ignore", message="Generating overly large repr")
            collect()
    except _Enough:
        pass
    if raised:
        raise raised[0]
    return len(drawn)


def draw_programs(count: int, seed: int, regions: bool = False, max_steps: int = 8) -> list[Program]:
    """The programs ``each_program`` visits, as a list."""
    programs: list[Program] = []
    each_program(count, seed, programs.append, regions, max_steps)
    return programs


@dataclass
class Summary:
    passed: int = 0
    failed: int = 0
    invalid: int = 0
    first_skip: str = ""  # why the first skipped program was skipped
    seconds: float = 0.0
    reproducers: list[Path] = field(default_factory=list)

    def line(self) -> str:
        return f"{self.passed} passed, {self.failed} failed, {self.invalid} skipped"


@dataclass
class FuzzSession:
    target: str = "lite"
    force: dict = field(default_factory=dict)
    device: str = "cpu"
    regions: bool = False
    max_steps: int = 8
    out: Path = Path("fuzz-repros")
    shrink: bool = True

    def run(self, count: int, seed: int, deadline: float | None = None,
            show_progress: bool = True) -> Summary:
        from rich.console import Console
        from rich.markup import escape
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        from lite_compiler.fuzz.runner import check_program, make_target, shrink, write_reproducer

        console = Console(stderr=True)
        target, reference = make_target(self.target, self.force), make_target("aot_eager")
        summary = Summary()
        started = time.monotonic()
        columns = (TextColumn("[bold]fuzz[/] {task.description}"), BarColumn(),
                   MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=console, disable=not show_progress,
                      transient=True) as progress:
            task = progress.add_task(f"{self.target} vs aot_eager", total=count)
            numbers = iter(range(count))

            def check(program: Program) -> None:
                number = next(numbers)
                outcome = check_program(program, target, reference, self.device)
                if outcome.status == "passed":
                    summary.passed += 1
                elif outcome.status == "invalid":
                    summary.invalid += 1
                    summary.first_skip = summary.first_skip or outcome.detail
                else:
                    summary.failed += 1
                    if self.shrink:
                        progress.update(task, description=f"shrinking failure {summary.failed}")
                        program = shrink(program, lambda p: check_program(
                            p, target, reference, self.device).status == "failed")
                        outcome = check_program(program, target, reference, self.device)
                    path = self.out / f"repro_seed{seed}_{number}.py"
                    write_reproducer(path, outcome, self.target, "aot_eager", self.force)
                    summary.reproducers.append(path)
                    console.print(f"[red]mismatch[/] {escape(outcome.detail)}: {escape(program.describe())}"
                                  f" -> {path}")
                    progress.update(task, description=f"{self.target} vs aot_eager")
                progress.advance(task)

            done = each_program(count, seed, check, self.regions, self.max_steps, deadline)
        if deadline is not None and done < count and time.monotonic() > deadline:
            console.print(f"time limit reached after {done} programs")
        summary.seconds = time.monotonic() - started
        return summary


def sweep_candidates() -> list[tuple[str, object, object]]:
    """(config key, lite value, value that turns it back on) for every lite-off inductor config."""
    import torch._inductor.config as inductor_config

    from lite_guard.registry import Registry

    defaults = inductor_config.get_config_copy()
    candidates = []
    for entry in Registry.load().configs:
        # Only what lite mode forces: a key classified but left alone (no lite_value) has
        # nothing to turn back on (it was swept with its own default, 500 no-op rows).
        if entry.module != "inductor" or entry.key not in defaults or not entry.forced:
            continue
        if isinstance(entry.lite_value, bool):
            turned_on = not entry.lite_value
        elif defaults[entry.key] != entry.lite_value:
            turned_on = defaults[entry.key]
        else:
            continue
        candidates.append((entry.key, entry.lite_value, turned_on))
    return candidates


def _code() -> str:
    """What produced a table: lite-guard's version (and commit, in a git checkout) and torch's."""
    import subprocess

    import torch

    from lite_guard import __version__

    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=10, cwd=Path(__file__).resolve().parent).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return f"lite-guard {__version__}" + (f" at commit {commit}" if commit else "") + \
        f", torch {torch.__version__}"


def run_sweep(args: argparse.Namespace) -> int:
    """Turn on each lite-off config alone on upstream lite mode; record which break bitwise."""
    from rich.console import Console
    from rich.progress import track

    from lite_guard.atomic import write_text_atomic
    from lite_compiler.fuzz.runner import compare, make_target, run_program

    console = Console(stderr=True)
    # --time bounds the whole sweep: the drawing (one program at a time) and the configs.
    deadline = None if args.time is None else time.monotonic() + args.time
    reference = make_target("aot_eager")
    expected = {}

    def run_reference(program: Program) -> None:
        try:
            expected[program] = run_program(program, reference, args.device)
        except Exception:
            pass  # the reference rejects it

    each_program(args.count, args.seed, run_reference, False, args.max_steps, deadline)
    rows, skipped = [], []
    for key, lite_value, turned_on in track(sweep_candidates(), description="sweep",
                                            console=console):
        if deadline is not None and time.monotonic() > deadline:
            skipped.append(key)
            continue
        target = make_target("upstream-lite", {key: turned_on})
        broken, crashed, example = 0, 0, ""
        for program, want in expected.items():
            try:
                problem = compare(program, want, run_program(program, target, args.device))
            except Exception as exc:
                crashed += 1
                problem = f"raised {type(exc).__name__}"
            if problem:
                broken += 1
                example = example or f"{program.describe()}: {problem}"
        rows.append((key, lite_value, turned_on, broken, crashed, example))
    lines = [
        "# Registry evidence: which lite-off configs break bitwise equality",
        "",
        f"Produced by `lite_guard fuzz --sweep --count {args.count} --seed {args.seed}` ({_code()}): each",
        "config the registry forces in lite mode is turned back on alone, on torch's own",
        "`mode=\"lite\"`, and the same generated programs are compared with `aot_eager`",
        f"bit for bit ({len(expected)} valid programs, forward and backward, static and dynamic).",
        "A config with 0 broken programs is not proven harmless: these programs may just not",
        "reach it (e.g. `layout_optimization` needs a training graph with real convolutions; its",
        "gap is measured by tests/test_upstream_lite_gap.py). Crashes are compile errors of the",
        "mixed configuration, e.g. Inductor's 'both a fallback and a decomp for same op'.",
        "",
        "| config | lite value | turned on | programs broken | of which crashed | example |",
        "|---|---|---|---|---|---|",
    ]
    for key, lite_value, turned_on, broken, crashed, example in sorted(rows, key=lambda r: -r[3]):
        lines.append(f"| `{key}` | `{lite_value}` | `{turned_on}` | {broken}/{len(expected)} |"
                     f" {crashed} | {example.replace('|', '/')} |")
    if skipped:
        lines += ["", f"Not run (the --time of {args.time} s ran out first): "
                  + ", ".join(f"`{key}`" for key in skipped) + "."]
    write_text_atomic(args.sweep_out, "\n".join(lines) + "\n")
    breaking = sum(1 for row in rows if row[3])
    print(f"{breaking} of {len(rows)} lite-off configs break bitwise equality when turned on"
          + (f" ({len(skipped)} not run: --time ran out)" if skipped else "")
          + f"; table written to {args.sweep_out}")
    return 0
