"""Options shared by subcommands: which registries to load."""

from __future__ import annotations

import argparse

from lite_guard.registry import Registry


def add_registry_args(parser: argparse.ArgumentParser, project_flag: bool = True) -> None:
    parser.add_argument("--registry", action="append", default=[], metavar="PATH",
                        help="an extra registry TOML file (repeatable)")
    if project_flag:
        parser.add_argument("--no-project", action="store_true",
                            help="ignore [tool.lite_guard] registries of the nearest pyproject.toml")


def load_registry(args: argparse.Namespace) -> Registry:
    return Registry.load(extra_paths=args.registry, include_project=not args.no_project)
