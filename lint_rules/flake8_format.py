"""``flake8 --format=lite-guard``: flake8's default report line, escaped as ``lite_guard check``
escapes its own.

flake8 prints every report line itself, file name first. A name holding an undecodable byte
(``bad\\xff.py``: a lone surrogate in Python) made flake8's formatters raise UnicodeEncodeError
when writing the line, a traceback that lost the rest of the run whatever the plugin. This
formatter writes the surrogate as the text ``\\udcff`` (and an ESC or a newline in a name or a
message as its escape), so every line of the run is printed; flake8's own formatters are
flake8's (SECURITY.md, known limits).
"""

from __future__ import annotations

from typing import Any

from flake8.formatting.default import Default

from lite_guard.errors import escape_text


class EscapingFormatter(Default):
    def after_init(self) -> None:
        pass  # Default reads --format as its format string; ours is the default line

    def format(self, error: Any) -> str | None:
        line = super().format(error)
        return None if line is None else escape_text(line)

    def show_source(self, error: Any) -> str | None:
        source = super().show_source(error)
        return None if source is None else "\n".join(escape_text(part) for part in source.split("\n"))
