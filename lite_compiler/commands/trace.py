"""``lite_guard trace SCRIPT [ARGS]``: run a script under the lite guard and print what passes ran.

Every ``torch.compile`` in the script compiles in lite mode with the guard enforcing the registry;
the ledger of each compile is printed as a table (``--json`` for machines). ``--html PAGE`` also
runs the script in default mode with an observe-only guard and writes a self-contained page with
the passes of both modes side by side.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import runpy
import sys
from pathlib import Path
from typing import Any

from lite_guard import SUPPORTED_TORCH_TEXT
from lite_guard.commands._common import add_registry_args, unwritable
from lite_guard.errors import escape_text, strict_unicode


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "trace", help="run a script with torch.compile in lite mode and show every pass the guard saw",
        description=__doc__.splitlines()[0])
    parser.add_argument("script", help="the Python script to run")
    parser.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments for the script")
    parser.add_argument("--json", action="store_true", help="print the ledgers as JSON")
    parser.add_argument("--html", metavar="PAGE", help="write default vs lite side by side to PAGE")
    add_registry_args(parser, project_flag=False)  # the script's compiles use the project's registries
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from lite_guard.registry import RegistryError

    if not Path(args.script).is_file():
        why = "not a regular file" if os.path.lexists(args.script) else "it does not exist"
        print(f"lite_guard trace: no such script: {args.script!r} ({why}); give the path of a"
              " Python script", file=sys.stderr)
        return 2
    # Absolute before the script runs: a script that changes directory must not make its
    # second run (--html's default mode) or the page land somewhere else.
    args.script_path = os.path.abspath(args.script)
    args.html_path = os.path.abspath(args.html) if args.html else None
    problem = unwritable(Path(args.html_path), folder=False) if args.html else None
    if args.html and _same_file(args.html_path, args.script_path):  # the page would replace it
        problem = f"{args.html} is the script itself, which the page would replace"
    if problem:  # said now, not after the script ran twice
        print(escape_text(f"lite_guard trace: --html: {problem}; pass another path"), file=sys.stderr)
        return 2
    if args.registry:
        from lite_guard.registry import registry_paths

        # A missing one is said as given (--registry), not as "named in LITE_GUARD_REGISTRIES".
        registry_paths(args.registry, include_shipped=False, include_project=False, include_env=False)
        os.environ["LITE_GUARD_REGISTRIES"] = os.pathsep.join(
            [p for p in os.environ.get("LITE_GUARD_REGISTRIES", "").split(os.pathsep) if p]
            + [str(Path(p).resolve()) for p in args.registry])
    from lite_compiler.commands import torch_start_problem

    problem = torch_start_problem()
    if problem:
        print(f"lite_guard trace: {problem}", file=sys.stderr)
        return 2
    try:
        import lite_compiler
        from lite_compiler.config import derive_configs, registry
    except ImportError as exc:
        print(f"lite_guard trace: cannot import lite_compiler ({exc}); install torch {SUPPORTED_TORCH_TEXT}",
              file=sys.stderr)
        return 2
    try:
        # Before the script runs: a registry torch cannot honour is a config error (exit 2),
        # not a traceback from inside the script's first compile.
        derive_configs(registry())
    except (RegistryError, lite_compiler.LiteConfigError) as exc:
        print(f"lite_guard trace: {_one_line(exc)}", file=sys.stderr)
        return 2
    report = _Report(args)
    _report_ignored_errors(args.script)
    _warm_output()
    _terminate_as_interrupt()
    try:
        lite, violation, failure = _run_script(args, "lite", report)
        default, _, default_failure = _run_script(args, "default", report) \
            if args.html and not failure else ([], None, None)
    except (RegistryError, lite_compiler.LiteConfigError) as exc:
        report.restore_stdout()
        print(f"lite_guard trace: {_one_line(exc)}", file=sys.stderr)
        return 2
    _terminate_by_default()  # the script is over: a SIGTERM now ends trace as it always did
    status = report.finish(lite, default, violation, failure or default_failure)
    _say_threads_left(args.script)
    return status


class _Terminated(BaseException):
    """SIGTERM (a CI job's timeout) while the script runs: handled like Ctrl-C."""


def _terminate_as_interrupt() -> None:
    """A SIGTERM killed trace with the script: no ledger, no line, status 143 from nowhere. It
    now ends the script as Ctrl-C does: the ledgers of what compiled, one line, exit 143. (Only
    when SIGTERM has its default action: a parent that ignores it keeps that.)"""
    import signal

    def terminated(signum: int, frame: Any) -> None:
        raise _Terminated

    with _suppressed_os_errors():
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, terminated)


def _terminate_by_default() -> None:
    import signal

    with _suppressed_os_errors():
        if getattr(signal.getsignal(signal.SIGTERM), "__qualname__", "").endswith("terminated"):
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _warm_output() -> None:
    """Import what printing the ledgers needs before the script runs: a script that uses up its
    file descriptors (``RLIMIT_NOFILE``) or breaks imports (``sys.modules["rich"] = None``) lost
    the ledgers to "'.../rich/__init__.py': Too many open files; check the path"."""
    import io

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    import lite_guard.atomic  # noqa: F401  (--html's writer)

    table = Table(title=Text("warm"))
    table.add_column("pass", overflow="fold")
    table.add_row(Text("x", style="green"))
    Console(file=io.StringIO(), force_terminal=True).print(table)


def _report_ignored_errors(script: str) -> None:
    """What Python reports outside the script's own flow, and ignores (an exception in a
    thread, in ``__del__``, in an ``atexit`` callback, even SystemExit there), is one escaped
    line on stderr. Python prints a traceback: trace printed it after the ledgers, raw (an ESC
    in the message reached the terminal), and "Traceback" in a CI log reads as our crash. The
    exit status stays what it is, as Python's does: these errors are ignored."""
    import threading

    def say(where: str, exc_type: Any, exc: BaseException | None) -> None:
        first = (_shown(exc, str).strip().splitlines() or [""])[0][:300] if exc is not None else ""
        name = getattr(exc_type, "__name__", "exception")
        with _suppressed_os_errors():
            print(escape_text(f"lite_guard trace: {script}: exception ignored in {where}, as Python"
                              f" ignores it: {name}{': ' if first else ''}{first}"),
                  file=sys.__stderr__ or sys.stderr, flush=True)

    def unraisable(hook: Any) -> None:
        where = (hook.err_msg or "").removeprefix("Exception ignored in").strip() or \
            _shown(hook.object, repr)[:200]
        say(where, hook.exc_type, hook.exc_value)

    def in_thread(hook: Any) -> None:
        if hook.exc_type is SystemExit:  # threading ignores it silently
            return
        say(f"thread {getattr(hook.thread, 'name', '?')}", hook.exc_type, hook.exc_value)

    sys.unraisablehook = unraisable
    threading.excepthook = in_thread


def _suppressed_os_errors() -> Any:
    import contextlib

    return contextlib.suppress(OSError, ValueError)


def _say_threads_left(script: str) -> None:
    """Python waits, at exit, for the threads a script left running: the ledgers were printed,
    then the run hung with nothing said. One line says what it waits for (a thread pool's
    workers are stopped by their pool at exit and are not counted)."""
    import threading

    left = [t for t in threading.enumerate() if t.is_alive() and not t.daemon
            and t is not threading.main_thread()
            and getattr(getattr(t, "_target", None), "__module__", "") != "concurrent.futures.thread"]
    if left:
        names = ", ".join(t.name for t in left[:3]) + (", ..." if len(left) > 3 else "")
        with _suppressed_os_errors():
            sys.stdout.flush()
            print(escape_text(f"lite_guard trace: {script} left {len(left)} thread(s) running"
                              f" ({names}); waiting for them to end, as Python does (make them"
                              " daemon threads or join them in the script; Ctrl-C stops the wait)"),
                  file=sys.stderr, flush=True)


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)  # through links too
    except OSError:  # the page does not exist yet
        return False


def _one_line(exc: BaseException) -> str:
    return escape_text(" ".join(str(exc).split())) or type(exc).__name__


class _Report:
    """Prints the ledgers once, at the end of the script or at its ``os._exit``."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.stdout_fd: int | None = None  # the real stdout while the script's goes to stderr
        self.stdout: Any = None
        self.interrupted = False  # Ctrl-C in the script: exit 130, as the shell's convention
        self.terminated = False  # SIGTERM in the script: exit 143

    def script_output_to_stderr(self) -> None:
        """``--json``: stdout carries only JSON, so the script's prints (Python's and C's) go
        to stderr while it runs."""
        if self.args.json and self.stdout_fd is None:
            sys.stdout.flush()
            self.stdout_fd = os.dup(1)
            os.dup2(2, 1)  # what C code and subprocesses write
            self.stdout, sys.stdout = sys.stdout, sys.stderr  # what Python code prints

    def restore_stdout(self) -> None:
        if self.stdout_fd is not None:
            sys.stdout.flush()
            os.dup2(self.stdout_fd, 1)
            os.close(self.stdout_fd)
            self.stdout_fd = None
            sys.stdout, self.stdout = self.stdout, None

    def finish(self, lite: list[Any], default: list[Any], violation: BaseException | None,
               failure: str | None) -> int:
        self.restore_stdout()
        args = self.args
        if args.json:
            print(json.dumps(strict_unicode({  # names from the script: no lone surrogate
                "script": args.script, "lite": [ledger.to_dict() for ledger in lite],
                "default": [ledger.to_dict() for ledger in default],
                "violation": str(violation) if violation else None, "failure": failure}), indent=2))
        else:
            _print_tables(lite, violation)
        if failure:
            # The ledgers above are what ran before the script stopped.
            print(escape_text(f"lite_guard trace: {failure}"), file=sys.stderr)
            return 130 if self.interrupted else 143 if self.terminated else 2
        if args.html:
            from lite_guard.atomic import write_text_atomic

            try:
                write_text_atomic(args.html_path, render_html(args.script, default, lite, violation))
            except OSError as exc:
                print(escape_text(f"lite_guard trace: cannot write {args.html}: {exc.strerror or exc}"),
                      file=sys.stderr)
                return 2
            if not args.json:
                print(escape_text(f"wrote {args.html}"))  # the name may hold any character
        return 1 if violation else 0


def _config_error(exc: BaseException | None) -> BaseException | None:
    """The registry or config error behind ``exc`` (dynamo wraps what a backend raises)."""
    from lite_compiler.errors import LiteConfigError
    from lite_guard.registry import RegistryError

    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, (LiteConfigError, RegistryError)):
            return exc
        exc = getattr(exc, "inner_exception", None) or exc.__cause__ or exc.__context__
    return None


def _run_script(args: argparse.Namespace, mode: str,
                report: _Report) -> tuple[list[Any], BaseException | None, str | None]:
    """Run the script once; every torch.compile in it uses lite mode or (observed) default mode.

    Returns the ledgers, the LitePassViolation that stopped it (if any), and a one-line failure
    when the script itself broke (raised something else, or exited non-zero). A script that
    calls ``os._exit`` still gets its ledgers printed: the hook reports, then exits."""
    import torch

    import lite_compiler
    from lite_compiler.backend import lite_backend

    torch._dynamo.reset()
    before = {id(ledger) for ledger in lite_compiler.all_ledgers()}
    original_compile = torch.compile

    def compile_in_lite(model: Any = None, *a: Any, **kwargs: Any) -> Any:
        if kwargs.get("backend", "inductor") in ("inductor", "lite"):
            # lite's own options (cudagraphs, bitwise_fusion) stay; Inductor's are dropped.
            asked_lite = kwargs.get("backend") == "lite" or kwargs.get("mode") == "lite"
            kwargs = {**kwargs, "backend": lite_backend, "mode": None,
                      "options": kwargs.get("options") if asked_lite else None}
        return original_compile(model, *a, **kwargs)

    upstream_compile = getattr(original_compile, "__wrapped__", original_compile)

    def compile_in_default(model: Any = None, *a: Any, **kwargs: Any) -> Any:
        # The same script as plain Inductor: what would default mode have run?
        if kwargs.get("mode") == "lite":
            kwargs = {**kwargs, "mode": None}
        if kwargs.get("backend") in ("lite", lite_backend):
            kwargs = {**kwargs, "backend": "inductor"}
        return upstream_compile(model, *a, **kwargs)

    def new_ledgers() -> list[Any]:
        return [ledger for ledger in lite_compiler.all_ledgers() if id(ledger) not in before]

    tracing_pid, real_exit = os.getpid(), os._exit

    def exit_now(code: int = 0) -> None:
        # os._exit skips every cleanup: report first, then exit as the script asked (a forked
        # child of the script exits untouched).
        if os.getpid() == tracing_pid:
            _restore_fds(saved_fds)
            sys.stdout, sys.stderr = saved_streams
            _reopen_closed_streams()
            failure = None if code == 0 and not args.html else \
                f"{args.script} called os._exit({code}) in {mode} mode"
            sys.stdout.flush()
            sys.stderr.flush()
            code = report.finish(new_ledgers(), [], None, failure)
            sys.stdout.flush()
            sys.stderr.flush()
        real_exit(code)

    violation: BaseException | None = None
    failure: str | None = None
    exit_code: int | None = None  # what sys.exit() asked for (a forked child exits with it)
    saved_argv, saved_path = sys.argv, sys.path[:]
    sys.argv = [args.script, *args.script_args]
    # As `python script.py` runs it: the script's folder first, so it imports its own siblings
    # (never the working directory, which `python -m lite_guard` no longer puts there).
    sys.path.insert(0, os.path.dirname(os.path.realpath(args.script_path)))
    report.script_output_to_stderr()
    # The script may rebind sys.stdout / sys.stderr (a StringIO, None, any object): the ledgers
    # go to the streams we had, never into the script's buffer, nor into an AttributeError.
    saved_streams = (sys.stdout, sys.stderr)
    saved_fds = _save_fds()  # and descriptors 1 and 2 (`os.close(1)`, `os.dup2(null, 2)`)
    os._exit = exit_now
    try:
        if mode == "lite":
            torch.compile = compile_in_lite
            runpy.run_path(args.script_path, run_name="__main__")
        else:
            torch.compile = compile_in_default
            with lite_compiler.observe("default"):
                runpy.run_path(args.script_path, run_name="__main__")
    except lite_compiler.LitePassViolation as exc:
        violation = exc
    except SystemExit as exc:
        exit_code = exc.code if type(exc.code) is int else 0 if exc.code is None else 1
        if not _is_success(exc.code):
            failure = f"{args.script} exited with {_shown(exc.code, repr)} in {mode} mode"
    except Exception as exc:  # the user's script broke: say so in one line, keep the ledgers
        config_error = _config_error(exc)
        if config_error is not None:
            raise config_error from None
        first = (_shown(exc, str).strip().splitlines() or [""])[0][:300]
        failure = f"{args.script} raised {type(exc).__name__}: {first} (in {mode} mode)"
    except KeyboardInterrupt:  # Ctrl-C: the ledgers of what compiled so far are still printed
        report.interrupted = True
        failure = f"{args.script} was interrupted in {mode} mode"
    except _Terminated:  # SIGTERM: the same, with the shell's status for it
        report.terminated = True
        failure = f"{args.script} was terminated (SIGTERM) in {mode} mode"
    except BaseException as exc:  # a BaseException of the script's own: the same one line
        first = (_shown(exc, str).strip().splitlines() or [""])[0][:300]
        failure = f"{args.script} raised {type(exc).__name__}: {first} (in {mode} mode)"
    finally:
        os._exit = real_exit
        _restore_fds(saved_fds)
        sys.stdout, sys.stderr = saved_streams
        _reopen_closed_streams()  # the script may have closed sys.stdout: the ledgers still print
        sys.stdout.flush()
        sys.argv = saved_argv
        sys.path[:] = saved_path
        torch.compile = original_compile
    if os.getpid() != tracing_pid:
        _exit_forked_child(violation, failure, exit_code, real_exit)
    return new_ledgers(), violation, failure


def _exit_forked_child(violation: BaseException | None, failure: str | None,
                       exit_code: int | None, real_exit: Any) -> None:
    """A child the script forked (``os.fork()``) that returned or exited through runpy: it is
    the script's process, not ours. It printed the ledgers too, so ``--json`` gave two
    documents on stdout. Now it exits as Python exits a process, 0 or 1, saying why in one
    line (or with the status its ``sys.exit`` gave), and only the traced process reports."""
    if failure or violation:
        print(escape_text(f"lite_guard trace: forked child {os.getpid()}: {failure or violation}"),
              file=sys.stderr)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    real_exit(exit_code & 0xFF if exit_code is not None else 1 if failure or violation else 0)


def _shown(value: Any, how: Any) -> str:
    """``str``/``repr`` of something the script made, which may itself raise (a hostile
    ``__str__``): the failure line must still be one line, not a traceback from inside it."""
    try:
        text = how(value)
        return text if isinstance(text, str) else object.__repr__(value)
    except BaseException:  # noqa: BLE001  (whatever the script's __str__ raises)
        return f"<{type(value).__name__} whose {how.__name__}() raised>"


def _is_success(code: Any) -> bool:
    """``sys.exit()`` / ``sys.exit(0)``: success; anything else (a message, 3, an object whose
    ``__eq__`` raises) is a failure, decided without calling the script's own ``__eq__``."""
    return code is None or (type(code) in (int, bool) and code == 0)


def _save_fds() -> dict[int, int]:
    """Copies of descriptors 1 and 2 (those that are open), for _restore_fds."""
    saved = {}
    for fd in (1, 2):
        try:
            saved[fd] = os.dup(fd)
        except OSError:
            pass
    return saved


def _restore_fds(saved: dict[int, int]) -> None:
    """Put descriptors 1 and 2 back as they were before the script (once: the copies close)."""
    while saved:
        fd, copy = saved.popitem()
        try:
            os.dup2(copy, fd)
        except OSError:
            pass
        finally:
            os.close(copy)


def _reopen_closed_streams() -> None:
    """``sys.stdout.close()`` in a script closes the Python object, not descriptor 1 (stdio is
    opened with closefd=False): a new object on the same descriptor prints again."""
    for name, fd in (("stdout", 1), ("stderr", 2)):
        stream = getattr(sys, name)
        if stream is None or stream.closed:
            try:
                setattr(sys, name, open(fd, "w", closefd=False, errors="backslashreplace"))
            except OSError:
                setattr(sys, name, open(os.devnull, "w"))


def _print_tables(ledgers: list[Any], violation: BaseException | None) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    # Pass names, graphs and reasons come from user code: Text, never markup ("[red]" stays),
    # and escaped, so an ESC in a pass name cannot clear the screen or retitle the terminal.
    console = Console()
    for ledger in ledgers:
        table = Table(title=Text(f"lite compile {ledger.graph_name}: {len(ledger)} passes"))
        for column in ("pass", "stage", "graph", "lite", "verdict", "ms"):
            table.add_column(column, justify="right" if column == "ms" else "left", overflow="fold")
        for e in ledger:
            verdict = Text("allowed", style="green") if e.allowed else \
                Text.assemble(("refused", "bold red"), f" {escape_text(str(e.reason))}")
            table.add_row(*(Text(escape_text(str(v))) for v in (e.name, e.stage, e.graph, e.lite)),
                          verdict, f"{e.seconds * 1e3:.2f}")
        console.print(table)
    if not ledgers:
        console.print("no torch.compile ran in the script")
    if violation is not None:
        console.print(Text.assemble(("LitePassViolation", "bold red"), f": {escape_text(str(violation))}"),
                      highlight=False)


def _rows(ledgers: list[Any]) -> str:
    rows = []
    for ledger in ledgers:
        for e in ledger:
            css = "ok" if e.allowed else "bad"
            rows.append("<tr class='{}'>{}</tr>".format(css, "".join(
                f"<td>{html.escape(str(v))}</td>"
                for v in (e.name, e.stage, e.graph, e.lite, e.verdict, f"{e.seconds * 1e3:.2f}"))))
    return "\n".join(rows) or "<tr><td colspan='6'>no passes</td></tr>"


def render_html(script: str, default: list[Any], lite: list[Any], violation: BaseException | None) -> str:
    head = "<tr><th>pass</th><th>stage</th><th>graph</th><th>lite flag</th><th>verdict</th><th>ms</th></tr>"
    note = (f"<p class='bad'>LitePassViolation: {html.escape(str(violation))}</p>" if violation else "")
    default_names = {e.name for ledger in default for e in ledger}
    lite_names = {e.name for ledger in lite for e in ledger}
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>lite_guard trace {html.escape(script)}</title>
<style>
body {{ font-family: sans-serif; margin: 1em; }}
.cols {{ display: flex; gap: 2em; align-items: flex-start; }}
.cols > div {{ flex: 1; }}
table {{ border-collapse: collapse; font-size: 12px; width: 100%; }}
td, th {{ border: 1px solid #ccc; padding: 2px 6px; text-align: left; }}
tr.ok td:nth-child(5) {{ color: #070; }} tr.bad, p.bad {{ background: #fdd; }}
</style></head><body>
<h1>lite_guard trace: {html.escape(script)}</h1>
<p>{len(default_names)} distinct passes in default mode, {len(lite_names)} in lite mode;
{len(default_names - lite_names)} run only in default mode.</p>{note}
<div class="cols">
<div><h2>default mode (observed)</h2><table>{head}{_rows(default)}</table></div>
<div><h2>lite mode (enforced)</h2><table>{head}{_rows(lite)}</table></div>
</div></body></html>
"""
