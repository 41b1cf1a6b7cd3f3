"""Options shared by subcommands: which registries to load."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from lite_guard.registry import Registry


def add_registry_args(parser: argparse.ArgumentParser, project_flag: bool = True) -> None:
    parser.add_argument("--registry", action="append", default=[], metavar="PATH",
                        type=_registry_path, help="an extra registry TOML file (repeatable)")
    if project_flag:
        parser.add_argument("--no-project", action="store_true",
                            help="ignore [tool.lite_guard] registries of the nearest pyproject.toml")


def _registry_path(text: str) -> str:
    # '' is Path('.'), which was reported as "a directory": say what was given instead.
    if not text:  # (a name of spaces is a name: only the empty string is refused)
        raise argparse.ArgumentTypeError("an empty path; name a registry TOML file")
    return text


def load_registry(args: argparse.Namespace) -> Registry:
    return Registry.load(extra_paths=args.registry, include_project=not args.no_project)


def unwritable(path: Path, folder: bool) -> str | None:
    """Why ``path`` (a folder to create, or a file to write) cannot be written, else None: said
    before a fuzz run of minutes or hours, not as a traceback when its first reproducer is due."""
    if path.exists():
        if folder != path.is_dir() or not folder and not path.is_file():
            return f"{path} exists and is not a {'folder' if folder else 'regular file'}"
        return None if os.access(path if folder else path.parent, os.W_OK) else f"{path} is not writable"
    above = path.parent
    while not above.exists() and above != above.parent:
        above = above.parent
    if not above.is_dir():
        return f"{above} is not a folder, so {path} cannot be created"
    return None if os.access(above, os.W_OK) else f"{above} is not writable, so {path} cannot be created"
