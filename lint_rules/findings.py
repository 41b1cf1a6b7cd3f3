"""What a rule reports, and what a file defines (the facts the tree-level rule needs)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


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
    findings: list[Finding] = field(default_factory=list)
    facts: FileFacts = field(default_factory=FileFacts)
    parsed: bool = False

    def to_dict(self) -> dict:
        return {"findings": [f.to_dict() for f in self.findings], "facts": self.facts.to_dict()}

    @classmethod
    def from_dict(cls, data: dict) -> "FileResult":
        return cls([Finding.from_dict(f) for f in data["findings"]],
                   FileFacts.from_dict(data["facts"]))
