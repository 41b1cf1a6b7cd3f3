"""The keys a torch config module defines, read from its source with ``ast`` (never imported).

One reading shared by LG002 (a key the registry's inventory lacks is a finding) and the scanner
(tools/scan_torch_passes.py, which proposes an inventory entry for each key), so the lint and the
inventory agree on what a key is. It follows what ``torch.utils._config_module`` installs as a
config key:

* every module-level assignment whose target is a plain name (``x = ...``, ``x: T = ...``), also
  under ``if``/``try`` blocks, except dunders (``__all__``);
* every attribute assigned in a class body, dotted (``triton.cudagraphs``), classes nested in
  classes too (``a.b.c``); a class that subclasses another class of the same module inherits its
  keys (``class cuda(cutlass)`` has ``cuda.<every cutlass key>``);
* ``TYPE_CHECKING`` imported from ``typing``: the one import torch records as a key (its value is
  a plain bool; every other import is a module, a function or a typing construct, which torch
  skips).
Functions (``def``) are not keys; neither is anything assigned inside a function.

Each key carries its type as torch declares it (the annotation), else as its default's literal
shows it: ``bool``, ``int``, ``float``, ``str``, ``list``, ``dict``, ``callable``, ``none`` or
``any``, unions written ``bool|none``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from lint_rules.findings import TORCH_CONFIG_FILES
from lint_rules.index import source_lines

# Each config module's file below the torch package folder (tools/ find them in a torch tree).
CONFIG_MODULES = {module: tail[1:] for module, tail in TORCH_CONFIG_FILES.items()}

TYPES = ("bool", "int", "float", "str", "list", "dict", "callable", "none", "any")

_NAMES = {"bool": "bool", "int": "int", "float": "float", "str": "str", "bytes": "any",
          "list": "list", "List": "list", "Sequence": "list", "dict": "dict", "Dict": "dict",
          "Mapping": "dict", "Callable": "callable", "None": "none", "NoneType": "none",
          "Any": "any", "object": "any", "tuple": "any", "Tuple": "any", "set": "any",
          "Set": "any", "frozenset": "any"}
_CASTS = {"int": "int", "float": "float", "str": "str", "bool": "bool", "list": "list",
          "dict": "dict"}


@dataclass(frozen=True)
class ConfigKey:
    key: str          # dotted for class attributes: "triton.cudagraphs"
    line: int         # where it is assigned (for an inherited key: where the base assigns it)
    col: int
    type: str         # "bool", "int|none", ...
    default: str      # the default's source text ("" when only annotated)
    comment: str = ""  # the comment block right above the assignment (for a reviewer)


def config_keys(source: str) -> list[ConfigKey]:
    """Every key the config module ``source`` defines, in source order."""
    tree = ast.parse(source)
    lines = source_lines(source)
    keys: list[ConfigKey] = []
    classes: dict[str, list[ConfigKey]] = {}  # dotted class name -> its keys (for inheritance)

    def visit(body: list[ast.stmt], prefix: str) -> list[ConfigKey]:
        found: list[ConfigKey] = []
        for node in body:
            if isinstance(node, ast.ClassDef):
                own = prefix + node.name
                inherited: list[ConfigKey] = []
                for base in node.bases:
                    base_name = prefix + base.id if isinstance(base, ast.Name) else ""
                    for key in classes.get(base_name, classes.get(getattr(base, "id", ""), [])):
                        leaf = key.key.split(".", base_name.count(".") + 1)[-1]
                        inherited.append(_renamed(key, f"{own}.{leaf}"))
                members = visit(node.body, own + ".")
                names = {k.key for k in members}
                members += [k for k in inherited if k.key not in names]
                classes[own] = members
                found += members
            elif isinstance(node, ast.If):
                found += visit(node.body, prefix) + visit(node.orelse, prefix)
            elif isinstance(node, ast.Try):
                for block in (node.body, *(h.body for h in node.handlers), node.orelse,
                              node.finalbody):
                    found += visit(block, prefix)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                found += _assigned(node, prefix, lines)
            elif isinstance(node, ast.ImportFrom) and not prefix and node.module == "typing":
                found += [ConfigKey("TYPE_CHECKING", node.lineno, node.col_offset + 1, "bool",
                                    "False") for alias in node.names
                          if alias.name == "TYPE_CHECKING" and alias.asname is None]
        return found

    keys = visit(tree.body, "")
    seen: dict[str, ConfigKey] = {}
    for key in keys:  # a key assigned twice (if/else) counts once, at its first assignment
        seen.setdefault(key.key, key)
    return list(seen.values())


def _renamed(key: ConfigKey, name: str) -> ConfigKey:
    return ConfigKey(name, key.line, key.col, key.type, key.default, key.comment)


def _assigned(node: ast.Assign | ast.AnnAssign, prefix: str, lines: list[str]) -> list[ConfigKey]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    value = node.value
    if isinstance(node, ast.AnnAssign):
        kind = annotation_type(node.annotation)
        if value_type(value) == "none":  # `x: Callable = None` holds None too
            kind = union(kind, "none")
    else:
        kind = value_type(value) if value is not None else "any"
    default = ast.unparse(value) if value is not None else ""
    comment = _comment_above(lines, node.lineno)
    found = []
    for target in targets:
        if isinstance(target, ast.Name) and not (target.id.startswith("__")
                                                 and target.id.endswith("__")):
            found.append(ConfigKey(prefix + target.id, target.lineno, target.col_offset + 1,
                                   kind, default, comment))
    return found


def _comment_above(lines: list[str], lineno: int) -> str:
    block = []
    index = lineno - 2
    while index >= 0 and lines[index].strip().startswith("#"):
        block.append(lines[index].strip().lstrip("#").strip())
        index -= 1
    return " ".join(reversed(block))


# ---- types --------------------------------------------------------------------------------------

def union(*types: str) -> str:
    """``union("int", "none|int")`` -> ``"int|none"``; ``any`` absorbs everything."""
    parts = {part for kind in types for part in kind.split("|") if part}
    if not parts or "any" in parts:
        return "any"
    return "|".join(sorted(parts - {"none"}) + (["none"] if "none" in parts else []))


def annotation_type(node: ast.expr | None) -> str:
    """A type annotation as one of ``TYPES`` (unions joined with ``|``)."""
    if node is None:
        return "any"
    if isinstance(node, ast.Constant):
        if node.value is None:
            return "none"
        if isinstance(node.value, str):  # a string annotation: parse what it says
            try:
                return annotation_type(ast.parse(node.value, mode="eval").body)
            except SyntaxError:
                return "any"
        return "any"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return union(annotation_type(node.left), annotation_type(node.right))
    if isinstance(node, ast.Subscript):
        head = _leaf(node.value)
        inner = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if head == "Optional":
            return union(annotation_type(inner[0]), "none")
        if head == "Union":
            return union(*(annotation_type(e) for e in inner))
        if head == "Literal":
            return union(*(value_type(e) for e in inner))
        return _NAMES.get(head, "any")
    return _NAMES.get(_leaf(node), "any")


def value_type(node: ast.expr | None) -> str:
    """The type a default expression evaluates to, when its form says so; else ``any``."""
    if node is None:
        return "any"
    if isinstance(node, ast.Constant):
        if node.value is None:
            return "none"
        return {bool: "bool", int: "int", float: "float", str: "str"}.get(type(node.value), "any")
    if isinstance(node, (ast.List, ast.ListComp)):
        return "list"
    if isinstance(node, (ast.Dict, ast.DictComp)):
        return "dict"
    if isinstance(node, ast.Lambda):
        return "callable"
    if isinstance(node, (ast.Compare, ast.BoolOp)) or (
            isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
        if isinstance(node, ast.BoolOp):  # `a or b` is the type of its operands
            return union(*(value_type(v) for v in node.values))
        return "bool"
    if isinstance(node, ast.UnaryOp):
        return value_type(node.operand)
    if isinstance(node, ast.BinOp):
        left, right = value_type(node.left), value_type(node.right)
        if {left, right} <= {"int", "float"}:
            return "float" if "float" in (left, right) or isinstance(node.op, ast.Div) else "int"
        return left if left == right else "any"
    if isinstance(node, ast.IfExp):
        return union(value_type(node.body), value_type(node.orelse))
    if isinstance(node, ast.Call):
        name = _leaf(node.func)
        if name in _CASTS:
            return _CASTS[name]
        if name == "Config":  # Config(default=X, env_name_...=...) is typed by its default
            for keyword in node.keywords:
                if keyword.arg == "default":
                    return value_type(keyword.value)
            return "any"
        if name == "get" and _leaf(getattr(node.func, "value", None)) == "environ":
            return "str" if len(node.args) > 1 and value_type(node.args[1]) == "str" else "str|none"
    return "any"


def _leaf(node: ast.expr | None) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""
