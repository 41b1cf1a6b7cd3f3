"""The ``lite_guard`` command: a thin adapter over the registry, the linter and the compiler.

Exit codes everywhere: 0 clean, 1 findings, 2 usage or configuration error.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from lite_guard import __version__

# Each subcommand lives in lite_guard/commands/<name>.py with register(subparsers) and run(args).
COMMANDS = ("check", "registry", "trace", "fuzz")

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors exit 2 with one line and a hint (argparse prints usage too)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="lite_guard", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"lite_guard {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"lite_guard.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"lite_guard.commands.{name}":
                raise
            continue  # a command whose module is not shipped yet
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    from lite_guard.registry import RegistryError

    try:
        return args.run(args)
    except RegistryError as exc:
        print(f"lite_guard: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
