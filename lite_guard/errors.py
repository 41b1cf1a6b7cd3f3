"""Errors for bad user input (registry files, ``[tool.lite_guard]``): one line, ``path:line: what``.

Its own module so that both the registry loader and the project-config reader can raise it
without importing each other (the registry reads the project config to find its files).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # an annotation only: tomllib is imported where TOML is parsed
    import tomllib

_TOML_POSITION = re.compile(r"\(at line (\d+), column \d+\)")
# C0 and C1 controls, DEL, Unicode line/paragraph separators, bidirectional overrides and
# isolates (U+202E shows a line's end first), and lone surrogates (the undecodable bytes of a
# file name): anything a terminal or a line-based reader could misread.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def escape_text(text: str) -> str:
    """``text`` on one line, printable in any encoding, unable to steer a terminal (an ESC that
    clears the screen or sets its title): unsafe characters as ``\\n``-style escapes."""
    return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape", "backslashreplace")
                       .decode("ascii"), text)


_SURROGATE = re.compile("[\ud800-\udfff]")


def strict_unicode(value):
    """``value`` (JSON data: dicts, lists, strings) with every lone surrogate written as the text
    ``\\udcXX``, as the text output shows it. A file name's undecodable byte is a lone surrogate,
    which ``json.dumps`` writes as ``"\\udcff"``: Python reads that back, but strict readers
    (Rust's serde_json, which lintrunner is; .NET's SARIF SDK; ``json.loads(...).encode()``)
    refuse the whole document, and one odd name lost every finding of the run."""
    if isinstance(value, str):
        return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", value)
    if isinstance(value, dict):
        return {strict_unicode(key): strict_unicode(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_unicode(item) for item in value]
    return value


class RegistryError(Exception):
    """Bad registry input. ``str()`` is one line: ``path:line: what is wrong``, or ``path: what is
    wrong`` when no line is at fault (``line`` 0: the file is missing, or is not a file; "line 0"
    named no place and read as a line of the file)."""

    def __init__(self, path: Path | str, line: int, message: str):
        self.path, self.line, self.message = str(path), line, message
        super().__init__(f"{self.path}:{line}: {message}" if line > 0 else f"{self.path}: {message}")


def toml_error(path: Path, exc: tomllib.TOMLDecodeError, text: str = "") -> RegistryError:
    """A TOML syntax error as one ``path:line: malformed TOML: ...`` line."""
    match = _TOML_POSITION.search(str(exc))
    # tomllib says "(at end of document)" for what is left open: that is the last line.
    line = int(match.group(1)) if match else len(text.splitlines())
    return RegistryError(path, line, f"malformed TOML: {_TOML_POSITION.sub('', str(exc)).strip()}")


def loads_toml(path: Path, text: str) -> dict:
    """``text`` (the file at ``path``) as TOML data; anything tomllib refuses or dies on is one
    RegistryError line: a syntax error where it is, nesting too deep for its recursion, a number
    past CPython's 4300-digit int limit."""
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise toml_error(path, exc, text) from None
    except RecursionError:  # tomllib recurses per nested array or inline table
        raise RegistryError(path, 1, "malformed TOML: arrays or inline tables nested too deeply"
                            " for the TOML parser; flatten them") from None
    except ValueError as exc:  # int("1" * 5000): CPython's int max str digits
        long_number = re.search(r"\d{4300}", text)
        line = text.count("\n", 0, long_number.start()) + 1 if long_number else 1
        raise RegistryError(path, line, f"unreadable TOML value: {str(exc).split(';')[0]}; write it"
                            " as a string or a smaller number") from None
