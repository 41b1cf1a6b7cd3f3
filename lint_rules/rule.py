"""The base of every lint rule, in the style of Fixit: a code, a message, inline examples.

A rule is a libcst visitor; the engine runs every rule over one parse in one batched walk.
Rules report through ``self.report`` and record what the file defines through
``self.context`` (the facts the tree-level stale-entry rule needs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, ClassVar

import libcst as cst
from libcst.metadata import PositionProvider

from lint_rules.examples import EXAMPLE_REGISTRY, Example  # noqa: F401  (for the rules)
from lint_rules.findings import FileFacts, Finding
from lite_guard.registry import Registry


@dataclass
class FileContext:
    path: str
    source: str
    registry: Registry
    torch_version: str | None = None
    config_module: str = ""  # "inductor" / "functorch" for their config.py, else ""
    reports: list[tuple] = field(default_factory=list)  # (node, code, message, name, hint)
    facts: FileFacts = field(default_factory=FileFacts)

    def resolve_findings(self, module: cst.Module) -> list[Finding]:
        if not self.reports:
            return []
        positions = cst.MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        findings = set()
        for node, code, message, name, hint in self.reports:
            start = positions[node].start
            findings.add(Finding(self.path, start.line, start.column + 1, code, message, name, hint))
        return sorted(findings)

    @property
    def stage_guess(self) -> str:
        """The stage a new pass in this file most likely belongs to (for the TOML hint)."""
        stem = PurePath(self.path).stem
        for stage in ("pre_grad", "joint_graph", "post_grad", "lowering"):
            if stage in stem:
                return stage
        if stem in ("scheduler", "comms", "memory") or "sched" in stem:
            return "scheduler"
        return "post_grad"


class LintRule(cst.BatchableCSTVisitor):
    CODE: ClassVar[str]
    MESSAGE: ClassVar[str]
    VALID: ClassVar[list[Example]] = []
    INVALID: ClassVar[list[Example]] = []

    def __init__(self, context: FileContext) -> None:
        super().__init__()
        self.context = context

    def report(self, node: cst.CSTNode, message: str, *, name: str = "", hint: str = "") -> None:
        # Positions cost twice the parse, so they are resolved afterwards, and only for files
        # that have something to report (see FileContext.resolve_findings).
        self.context.reports.append((node, self.CODE, message, name, hint))


# ---- small helpers shared by the rules ---------------------------------------------------

def last_name(node: cst.BaseExpression | None) -> str:
    """``a.b.c`` -> ``c``; ``c`` -> ``c``; a call ``C(...)`` -> ``C``; anything else -> ``""``."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    if isinstance(node, cst.Call):
        return last_name(node.func)
    return ""


def dotted_name(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted_name(node.value)
        return f"{base}.{node.attr.value}" if base else ""
    return ""


def string_value(node: cst.BaseExpression | None) -> str | None:
    """The value of a plain string literal (no f-string), else None."""
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def literal_value(node: cst.BaseExpression) -> tuple[bool, Any]:
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
    """A registry entry to paste (valid TOML); ``lite = "never"`` is the fail-closed default."""
    return (f'[[pass]]\nname = "{name}"\nstage = "{stage}"\nkind = "{kind}"\nlite = "never"\n'
            'why = "<one line>"\n')


def toml_config_hint(key: str, module: str, kind: str) -> str:
    module_line = f'module = "{module}"\n' if module and module != "inductor" else ""
    return (f'[[config]]\nkey = "{key}"\n{module_line}kind = "{kind}"\nlite_value = false\n'
            'why = "<one line>"\n')


def one_line(hint: str) -> str:
    """The hint folded onto the finding's line: ``[[pass]] name = "x", stage = ...``."""
    header, *fields = hint.strip().splitlines()
    return f"{header} " + ", ".join(f for f in fields if not f.startswith("why"))
