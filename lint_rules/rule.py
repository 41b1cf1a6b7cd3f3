"""The base of every lint rule, in the style of Fixit: a code, a message, inline examples, and the
metadata the engine and the output formats read from the rule class itself.

Three kinds, by what a rule needs to see:

* ``LintRule``: one file's concrete syntax tree (libcst), visited in one batched walk with the
  other file rules. Only files that contain one of the rule's trigger bytes are parsed for it.
* ``IndexRule``: the whole-tree semantic index (``lint_rules.index``): class ancestry across
  files, what flows into Inductor's hooks. Runs once per lint, after every file is summarized.
* ``TreeRule``: the facts of every linted file together (stale registry entries).

A new rule is a new file in ``lint_rules/rules``: the engine finds it by walking the package.
This module never imports libcst (a fully cached run must not pay for it); rules reach libcst
through ``cst`` below, which imports it on first use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterable

from lint_rules.examples import EXAMPLE_REGISTRY, Example  # noqa: F401  (for the rules)
from lint_rules.findings import FileFacts, Finding
from lite_guard.hints import one_line  # noqa: F401  (for the rules)
from lite_guard.stages import guess_stage


class _LazyLibcst:
    """``libcst``, imported the first time a rule touches it (a parse is about to happen)."""

    def __getattr__(self, name: str) -> Any:
        import libcst

        self.__dict__.update(vars(libcst))  # later lookups are plain attribute reads
        return getattr(libcst, name)


cst: Any = _LazyLibcst()


class Rule:
    """What every rule declares. ``CODE`` and ``NAME`` identify it (SARIF ``id``/``name``);
    ``DESCRIPTION`` is the one-line summary, ``HELP`` says what to do about a finding."""

    CODE: ClassVar[str]
    NAME: ClassVar[str]
    DESCRIPTION: ClassVar[str]
    HELP: ClassVar[str] = ""
    MESSAGE: ClassVar[str]
    VALID: ClassVar[list[Example]] = []
    INVALID: ClassVar[list[Example]] = []
    # Bytes at least one of which must appear in a file for the rule to be worth running there.
    TRIGGERS: ClassVar[tuple[bytes, ...]] = ()

    @classmethod
    def triggers(cls, registry: Any) -> tuple[bytes, ...]:
        """The rule's trigger bytes; a rule whose vocabulary is registry data derives them."""
        return cls.TRIGGERS

    @classmethod
    def wants(cls, path: str, data: bytes, pattern: "re.Pattern[bytes] | None") -> bool:
        """Is this file worth running the rule on? ``pattern`` is the compiled triggers."""
        return pattern is not None and pattern.search(data) is not None

    @classmethod
    def metadata(cls) -> dict:
        """SARIF ``reportingDescriptor`` of the rule."""
        return {"id": cls.CODE, "name": cls.NAME, "shortDescription": {"text": cls.DESCRIPTION},
                "help": {"text": cls.HELP or cls.DESCRIPTION}}


def trigger_pattern(triggers: Iterable[bytes]) -> "re.Pattern[bytes] | None":
    triggers = sorted({t for t in triggers if t})
    if not triggers:
        return None
    return re.compile(b"|".join(re.escape(t) for t in triggers))


# ---- file rules (libcst) ---------------------------------------------------------------------

@dataclass
class FileContext:
    path: str
    source: str
    registry: Any
    torch_version: str | None = None
    config_module: str = ""  # "inductor" / "functorch" for their config.py, else ""
    reports: list[tuple] = field(default_factory=list)  # (node, code, message, name, hint)
    facts: FileFacts = field(default_factory=FileFacts)

    def resolve_findings(self, module: Any) -> list[Finding]:
        if not self.reports:
            return []
        from libcst.metadata import PositionProvider

        positions = cst.MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        findings = set()
        for node, code, message, name, hint in self.reports:
            start = positions[node].start
            findings.add(Finding(self.path, start.line, start.column + 1, code, message, name, hint))
        return sorted(findings)

    @property
    def stage_guess(self) -> str:
        """The stage a new pass in this file most likely belongs to (for the TOML hint)."""
        return guess_stage(self.path)


class LintRule(Rule):
    """A rule that visits one file's libcst tree (``visit_<Node>`` / ``leave_<Node>`` methods),
    batched with the other file rules over one parse."""

    def __init__(self, context: FileContext) -> None:
        self.context = context

    def get_visitors(self) -> dict:
        """What libcst's ``visit_batched`` asks a visitor for: its visit/leave methods."""
        return {name: getattr(self, name) for name in dir(type(self))
                if name.startswith(("visit_", "leave_")) and callable(getattr(self, name))}

    def report(self, node: Any, message: str, *, name: str = "", hint: str = "") -> None:
        # Positions cost twice the parse, so they are resolved afterwards, and only for files
        # that have something to report (see FileContext.resolve_findings).
        self.context.reports.append((node, self.CODE, message, name, hint))


# ---- index and tree rules --------------------------------------------------------------------

class IndexRule(Rule):
    """A rule over the whole-tree index. ``check`` returns its findings and the pass names it
    recognised (the stale-entry rule counts those as present in the tree)."""

    @classmethod
    def wants(cls, path: str, data: bytes, pattern: "re.Pattern[bytes] | None") -> bool:
        return True  # every file is summarized: a pass's base class may live anywhere

    @classmethod
    def check(cls, index: Any, registry: Any) -> tuple[list[Finding], set[str]]:
        raise NotImplementedError


class TreeRule(Rule):
    """A rule over the facts of every linted file together (runs when whole trees are linted)."""

    @classmethod
    def check_tree(cls, registry: Any, tree: Any) -> list[Finding]:
        raise NotImplementedError


# ---- small helpers shared by the libcst rules -----------------------------------------------

def last_name(node: Any) -> str:
    """``a.b.c`` -> ``c``; ``c`` -> ``c``; a call ``C(...)`` -> ``C``; anything else -> ``""``."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    if isinstance(node, cst.Call):
        return last_name(node.func)
    return ""


def dotted_name(node: Any) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted_name(node.value)
        return f"{base}.{node.attr.value}" if base else ""
    return ""


def string_value(node: Any) -> str | None:
    """The value of a plain string literal (no f-string), else None."""
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def literal_value(node: Any) -> tuple[bool, Any]:
    """(True, value) for True/False/None, numbers, strings and negated numbers."""
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return True, {"True": True, "False": False, "None": None}[node.value]
    if isinstance(node, (cst.Integer, cst.Float)):
        return True, node.evaluated_value
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        ok, value = literal_value(node.expression)
        return (ok and isinstance(value, (int, float))), (-value if ok else None)
    text = string_value(node)
    return (text is not None), text


def toml_pass_hint(name: str, stage: str, kind: str) -> str:
    """Kept for rules not yet moved to ``lite_guard.hints.pass_hint`` (the one writer)."""
    from lite_guard.hints import pass_hint

    return pass_hint(name, stage, kind)


def toml_config_hint(key: str, module: str, kind: str) -> str:
    """Kept for rules not yet moved to ``lite_guard.hints.config_hint`` (the one writer)."""
    from lite_guard.hints import config_hint

    return config_hint(key, module, kind)
