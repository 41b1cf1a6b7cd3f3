"""What a rule reports, and what a file defines (the facts the tree-level rule needs)."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import PurePath


@dataclass(frozen=True, order=True)
class Finding:
    """One problem at ``path:line:col`` (line and col 1-based, as editors jump to them)."""

    path: str
    line: int
    col: int
    code: str
    message: str
    name: str = ""
    hint: str = ""

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Finding":
        return cls(**data)

    def text(self) -> str:
        return f"{self.path}:{self.line}:{self.col} {self.code} {self.message}"


@dataclass
class FileFacts:
    """What one file defines, independent of any registry: the input of the stale-entry rule.

    ``passes``: pass names found by the pass rules; ``configs``: ``module:key`` of every config
    assignment in a config module; ``symbols``: every ``def``/``class`` name (a cheap regex index);
    the rest are looser evidence that a registered name still exists (see LG003).
    """

    passes: list[str] = field(default_factory=list)
    configs: list[str] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)
    alternatives: list[list[str]] = field(default_factory=list)  # unnamed pattern passes
    globs: list[str] = field(default_factory=list)  # f-string pass names, e.g. "pass_pattern_*"
    strings: list[str] = field(default_factory=list)  # registry names seen as string literals
    config_modules: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "FileFacts":
        return cls(**data)


@dataclass
class FileResult:
    """What one file contributes: its file-rule findings, its facts, and its summary for the
    whole-tree index (``lint_rules.index``; None when the file could not be read or parsed)."""

    findings: list[Finding] = field(default_factory=list)
    facts: FileFacts = field(default_factory=FileFacts)
    parsed: bool = False
    summary: dict | None = None

    def to_dict(self) -> dict:
        return {"findings": [f.to_dict() for f in self.findings], "facts": self.facts.to_dict(),
                "summary": self.summary}

    @classmethod
    def from_dict(cls, data: dict) -> "FileResult":
        return cls([Finding.from_dict(f) for f in data["findings"]],
                   FileFacts.from_dict(data["facts"]), summary=data.get("summary"))


# ---- cheap byte-level facts (no parse) -------------------------------------------------------

_NAME_STRING = re.compile(rb"""(?<![\w"'])([fF]?)["']([\w\[][^"'\n\\]{0,150})["']""")
_FIELD = re.compile(r"\{[^{}]*\}")
_CONCAT = re.compile(rb"""["']([\w\[][^"'\n\\]{0,150})["']\s*\+""")
_SYMBOL = re.compile(rb"^[ \t]*(?:async[ \t]+def|def|class)[ \t]+(\w+)", re.MULTILINE)


def symbols(data: bytes) -> list[str]:
    """Every def/class name in the file: a cheap index that needs no parse."""
    return sorted({m.decode("ascii", "replace") for m in _SYMBOL.findall(data)})


def name_strings(data: bytes, wanted: frozenset[str]) -> list[str]:
    """Registry names that appear in the file as a whole string literal. An f-string counts with
    its fields as ``*`` (``f"custom_backend_passes_{device}"`` is ``custom_backend_passes_*``),
    the way the registry writes names it cannot resolve statically; so does ``"prefix_" + x``."""
    found = set()
    for prefix, body in _NAME_STRING.findall(data):
        text = body.decode("utf-8", "replace")
        found.add(re.sub(r"\*+", "*", _FIELD.sub("*", text)) if prefix else text)
    found.update(m.decode("utf-8", "replace") + "*" for m in _CONCAT.findall(data))  # "a_" + b
    return sorted(found & wanted)


TORCH_CONFIG_FILES = {"inductor": ("torch", "_inductor", "config.py"),
                      "functorch": ("torch", "_functorch", "config.py")}


def config_module_of(path: str | PurePath) -> str:
    """``"inductor"`` / ``"functorch"`` when ``path`` is that torch config module, else ``""``.
    By its place in a torch package (``torch/_inductor/config.py``, in any checkout or install):
    another package's ``_inductor/config.py`` (torch_npu's own settings) is that package's module,
    not torch's config, and linting it is not linting torch."""
    parts = PurePath(path).parts[-3:]
    for module, tail in TORCH_CONFIG_FILES.items():
        if parts == tail:
            return module
    return ""
