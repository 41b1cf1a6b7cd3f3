"""The ``lite_guard`` command: a thin shell whose subcommands are contributed by the packages.

Each subcommand is an entry point in the ``lite_guard.commands`` group whose value is a
``register(subparsers)`` function (``check`` comes from lint_rules, ``trace`` and ``fuzz`` from
lite_compiler, ``registry`` from lite_guard itself). The shell imports none of those packages:
it asks importlib.metadata, the way flake8 and pytest find their plugins, so imports only go down.

Exit codes everywhere: 0 clean, 1 findings, 2 usage or configuration error.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
import warnings
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from lite_guard import SUPPORTED_TORCH_TEXT, __version__
from lite_guard.env_switch import EnvSwitchWarning
from lite_guard.errors import RegistryError, escape_text

ENTRY_POINT_GROUP = "lite_guard.commands"

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors exit 2 with one line and a hint (argparse prints usage too)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        # argparse quotes what was typed as typed: an ESC or a newline in an argument is escaped.
        self.exit(EXIT_USAGE, escape_text(f"{self.prog}: error: {message} (see '{self.prog} --help')")
                  + "\n")

    def _print_message(self, message: str, file: Any = None) -> None:
        # argparse drops an OSError here: `lite_guard --version > /dev/full` (or --help, or a
        # usage error into a closed pipe) printed nothing and exited 0. Raised, it is main's
        # one line "cannot write the output", exit 2, as every other output of ours.
        if message:
            (file or sys.stderr).write(message)


def command_entry_points() -> dict[str, EntryPoint]:
    """The installed subcommands by name (reading metadata imports none of them)."""
    return {ep.name: ep for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)}


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser with the subcommand named in ``argv`` loaded, or every one when none is named.

    Loading only the command asked for keeps ``lite_guard check`` from importing the compiler
    (and torch with it) just to add ``trace``'s options to a parser it will not use.
    """
    parser = _Parser(prog="lite_guard", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"lite_guard {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands = command_entry_points()
    argv = argv or []
    named = next((a for a in argv if not a.startswith("-")), None)
    # Only the help screen needs every command's options and description; --version none.
    wanted = {named} if named in commands else set() if "--version" in argv else set(commands)
    for name, entry_point in commands.items():
        if name not in wanted:
            subparsers.add_parser(name)  # listed, so argparse still knows the name
            continue
        try:
            register = entry_point.load()
        except RegistryError:
            raise  # a bad registry file (LITE_GUARD_REGISTRIES, pyproject): its own line, exit 2
        except Exception as exc:  # noqa: BLE001  (one line for people, whatever it was)
            # trace and fuzz need torch, an optional dependency, and import the compiler, which
            # checks torch and the registries at import: say what failed instead of a traceback.
            reason = f"{type(exc).__name__}: {exc}"
            if name == named:
                raise CommandUnavailable(f"lite_guard {name}: cannot load the command ({reason});"
                                         f" install torch {SUPPORTED_TORCH_TEXT} or reinstall lite-guard")
            subparsers.add_parser(name, help=f"(unavailable: {reason})")
            continue
        register(subparsers)
    return parser


class CommandUnavailable(Exception):
    """The command named on the command line could not be imported (one line for people)."""


def _open_standard_streams() -> None:
    """Give a closed stdin/stdout/stderr (``lite_guard check >&-``) /dev/null: else the next file
    opened takes descriptor 1 and findings would be printed into it (a cache file, a registry)."""
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
        except OSError:
            os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)  # the lowest free: fd
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, "r" if fd == 0 else "w", closefd=False))
    # A registry's `why = "café"` on an ASCII terminal (LANG=C, PYTHONIOENCODING=ascii) is
    # printed as `caf\xe9`, not a UnicodeEncodeError traceback (stderr already does this).
    with contextlib.suppress(AttributeError, ValueError, OSError):
        sys.stdout.reconfigure(errors="backslashreplace")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    _open_standard_streams()
    try:
        try:
            with _one_line_switch_warnings():
                status = _main(argv)
        except SystemExit as done:  # argparse's --help, --version and usage errors
            status = done.code if isinstance(done.code, int) else EXIT_USAGE
        sys.stdout.flush()  # here, not at exit: a full disk is one line and exit 2, not "ignored"
        return status
    except BrokenPipeError:
        # `lite_guard ... | head`: the reader left; say nothing more (Python docs' recipe). A
        # command whose exit status matters (check) catches this itself and keeps its status.
        _silence_stdout()
        return EXIT_OK
    except OSError as exc:  # a full disk or an I/O error under stdout, or a file we had to touch
        read_only = exc.errno == errno.EBADF and not _writable(1)  # before /dev/null replaces it
        _silence_stdout()
        if exc.filename:
            line = f"{os.fsdecode(exc.filename)!r}: {exc.strerror or exc}; check the path and its permissions"
        elif read_only:
            # `lite_guard check 1</dev/null`, or a parent that left descriptor 1 read-only: it
            # was "the system refused ...; free resources and run again", which no run fixes.
            line = ("cannot write the output: standard output is not open for writing; redirect"
                    " it to a file or a pipe")
        elif exc.errno in _OUTPUT_ERRORS:
            line = f"cannot write the output: {exc.strerror or exc}; free space or write it elsewhere"
        else:  # e.g. no process could be started for the workers (EAGAIN)
            line = f"the system refused: {exc.strerror or exc}; free resources and run again"
        with contextlib.suppress(OSError):
            print(f"lite_guard: {line}", file=sys.stderr)
        return EXIT_USAGE


# What writing to stdout fails with: a full disk or quota, an I/O error, a file too large.
_OUTPUT_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG}


def _writable(fd: int) -> bool:
    """Is descriptor ``fd`` open for writing?"""
    import fcntl

    try:
        return fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE in (os.O_WRONLY, os.O_RDWR)
    except OSError:
        return False


@contextlib.contextmanager
def _one_line_switch_warnings():
    """An EnvSwitchWarning (lite_guard.env_switch) is one ``lite_guard: warning:`` line; Python's
    own format would add a second, the source line that read the variable."""
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, EnvSwitchWarning):
            print(escape_text(f"lite_guard: warning: {message}"), file=sys.stderr)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = shown


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's flush at exit cannot fail a second time."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _main(argv: list[str]) -> int:
    try:
        parser = build_parser(argv)
    except CommandUnavailable as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    except RegistryError as exc:  # a command whose package reads the registries on import
        print(escape_text(f"lite_guard: {exc}"), file=sys.stderr)
        return EXIT_USAGE
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        return args.run(args)
    except RegistryError as exc:
        print(escape_text(f"lite_guard: {exc}"), file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:  # workers are stopped on the way out; nothing half-written stays
        print(f"lite_guard {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
