"""lintrunner adapter: ``lite_guard check --format lintrunner`` and ``python -m lint_rules.lintrunner``.

lintrunner (what PyTorch lints itself with) runs each linter named in ``.lintrunner.toml`` and
reads one JSON lint message per line from its stdout. ``to_lintrunner`` writes our findings in
that shape; the ``__main__`` below is the command a ``.lintrunner.toml`` entry runs::

    [[linter]]
    code = "LITE_GUARD"
    include_patterns = ["**/*.py"]
    command = ["python3", "-P", "-m", "lint_rules.lintrunner", "@{{PATHSFILE}}"]

As lintrunner expects of a linter, findings are data and the exit status is 0; only a failure of
the linter itself (a bad registry, a path that does not exist: exit 2) is non-zero.
"""

from __future__ import annotations

import json
import os
import re
import sys

from lint_rules.findings import Finding
from lint_rules.formats import PROBLEM as _PROBLEM  # one reading of 'path:line: message'
from lint_rules.isolation import Unreadable
from lite_guard.errors import _UNSAFE, escape_text, strict_unicode

LINTER_CODE = "LITE_GUARD"


def _message(path: str | None, line: int | None, char: int | None, name: str, description: str,
             bypass: bool = False) -> str:
    return json.dumps(strict_unicode({  # strict UTF-8: lintrunner's reader refuses lone surrogates
        "path": path, "line": line, "char": char, "code": LINTER_CODE, "severity": "error",
        "name": name, "original": None, "replacement": None, "description": description,
        "bypassChangedLineFiltering": bypass,
    }))


def finding_message(finding: Finding) -> str:
    # lintrunner prints the description in a terminal: a pass name's ESC sequence or bidi
    # override is escaped there, as in our own text output. The hint stays TOML to paste: its
    # odd characters sit inside TOML strings, where \\uXXXX is their own escape.
    hint = "\n".join(_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", line)
                     for line in finding.hint.split("\n"))
    description = escape_text(finding.message) + (f"\n\n{hint}" if finding.hint else "")
    return _message(finding.path, finding.line, finding.col, finding.code, description)


def problem_message(problem: str) -> str:
    """A registry problem ('path:line: message'): reported on the registry file, on any line."""
    match = _PROBLEM.match(problem)
    if match is None:
        return _message(None, None, None, "LG-REGISTRY", escape_text(problem), bypass=True)
    return _message(match["path"], int(match["line"]) or None, None, "LG-REGISTRY",
                    escape_text(match["message"]), bypass=True)


def to_lintrunner(findings: list[Finding], registry_problems: list[str], errors: list[str]) -> str:
    """One JSON lint message a line: findings, registry problems, then errors of the run."""
    lines = [problem_message(p) for p in registry_problems]
    lines += [finding_message(f) for f in findings]
    lines += [_message(None, None, None, "LG-ERROR", escape_text(error), bypass=True) for error in errors]
    return "\n".join(lines)


def _paths_file(name: str) -> list[str]:
    """The paths of lintrunner's paths file, one a line, exactly as written: a name may begin or
    end with spaces (stripping them would lint another file, or none) or hold any byte."""
    from lint_rules.isolation import read_regular

    try:
        data = read_regular(name or ".", max_bytes=_MAX_PATHS_FILE)  # a FIFO or device: refused
    except Unreadable as exc:
        reason = re.sub(r"^cannot read file: |; it was not (checked|read)$", "", str(exc))
        raise Unreadable(f"cannot read the paths file ({reason}); pass the file lintrunner"
                         " writes, @{{PATHSFILE}}") from None
    return [line for line in os.fsdecode(data).split("\n") if line]


_MAX_PATHS_FILE = 256 << 20  # a million paths of 256 bytes


def main(argv: list[str] | None = None) -> int:
    """``python -m lint_rules.lintrunner [@PATHSFILE | PATH ...] [check options]``."""
    from lite_guard.cli import main as cli_main

    args = list(sys.argv[1:] if argv is None else argv)
    given: list[str] = []  # the command line: options, and paths
    listed: list[str] = []  # the paths file: only ever paths
    for arg in args:
        if arg.startswith("@"):
            try:
                listed += _paths_file(arg[1:])
            except Unreadable as exc:
                print(escape_text(f"lite_guard lintrunner: {arg}: {exc}"), file=sys.stderr)
                return 2
        else:
            given.append(arg)
    # The command line is read as check reads it, first: `--registry` with no value (or `--jobs`,
    # `--bogus`) exited 0 when there was nothing to lint, and the mistake showed only on the first
    # commit that touched a Python file; and an option's value (`--jobs 1`) counted as a path, so
    # an empty paths file ran check on the whole configured project.
    from lite_guard.cli import build_parser

    try:
        parsed = build_parser(["check"]).parse_args(["check", "--format", "lintrunner", *given])
    except SystemExit as done:  # the usage error's one line is already printed
        return done.code if isinstance(done.code, int) else 2
    if not listed and not parsed.paths and not parsed.torch:
        return 0  # lintrunner found no file for this linter: nothing to lint
    # "--": a file named like an option (--format=text.py) is a path, never an option.
    # (Only before listed paths: a "--" with nothing after it, once argparse has taken the
    # paths of the command line, is an "unrecognized arguments: --" usage error.)
    # A command line that already ends its options (`... -- @{{PATHSFILE}}`) gets no second
    # "--": check took that one as a path named "--" ("--: no such file", exit 2).
    separator = [] if "--" in given or not listed else ["--"]
    return cli_main(["check", "--format", "lintrunner", *given, *separator, *listed])


if __name__ == "__main__":
    sys.exit(main())
