"""LG003: a registry entry whose pass or config no longer exists in the linted tree as a whole.

A tree-level rule: it needs every file's facts, so it runs once after all files are linted, and
only when whole trees were linted (directories, not a handful of files). An entry is judged only
against a tree it describes: a pass whose ``source`` is ``torch/_inductor/...`` when files under
``torch/_inductor/`` were linted (``source = "lite_compiler/x.py"``: files under ``lite_compiler/``;
neither: always), a config when its module's config file was linted, and only for the tree's
torch version.
"Exists" is deliberately generous (see ``_pass_exists``): a stale entry is one whose name is
nowhere in the tree any more, not one that a rule happens not to recognise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from packaging.specifiers import SpecifierSet

from lint_rules.findings import Finding
from lint_rules.versions import matches, upper_bound
from lint_rules.examples import Example
from lint_rules.rule import TreeRule
from lite_guard.registry import PassEntry, Registry

_REGISTRY = """
[[pass]]
name = "remove_noop_ops"
stage = "post_grad"
lite = "always"
why = "removes ops that do nothing; numerics-neutral"

[[pass]]
name = "old_pass"
stage = "post_grad"
lite = "never"
torch = "<2.0"

[[config]]
key = "reorder_for_peak_memory"
kind = "reorder"
lite_value = false
"""


@dataclass
class TreeFacts:
    passes: set[str] = field(default_factory=set)
    configs: set[str] = field(default_factory=set)  # "module:key"
    symbols: set[str] = field(default_factory=set)
    globs: set[str] = field(default_factory=set)
    config_modules: set[str] = field(default_factory=set)
    files: list[str] = field(default_factory=list)  # posix paths of the linted files
    torch_version: str | None = None
    config_names: set[str] = field(default_factory=set)  # the keys of ``configs``, any module
    patterns: list[str] = field(default_factory=list)  # ``globs`` that are more than "*"

    def covers(self, root: str) -> bool:
        """Was any file under ``root`` (e.g. ``torch/_inductor``) linted?"""
        inner, start = f"/{root}/", f"{root}/"
        return any(inner in path or path.startswith(start) for path in self.files)


class StaleEntry(TreeRule):
    CODE = "LG003"
    NAME = "stale-entry"
    DESCRIPTION = "registry entry whose pass or config no longer exists in the tree"
    MESSAGE = ("registry {what} '{name}' is not found in the linted tree (torch {version});"
               " remove the entry, or limit it with torch = \"{spec}\" if it was removed upstream")
    UNKNOWN_MESSAGE = ("registry {what} '{name}' is not found in the linted tree (torch version"
                       " unknown); remove the entry, or give it a torch range if it was removed"
                       " upstream (pass --torch-version to check ranged entries)")

    VALID = [
        Example('GraphTransformObserver(gm, "remove_noop_ops").apply_graph_pass(f)\n',
                registry=_REGISTRY),
        Example("def remove_noop_ops(graph):\n    pass\n", registry=_REGISTRY),  # a plain function
        Example("reorder_for_peak_memory = True\nremove_noop_ops = PatternMatcherPass()\n",
                path="torch/_inductor/config.py", registry=_REGISTRY),
    ]
    INVALID = [
        Example('GraphTransformObserver(gm, "something_else").apply_graph_pass(f)\n',
                registry=_REGISTRY, line=2,
                message="registry pass 'remove_noop_ops' is not found in the linted tree (torch"
                " 2.13.0); remove the entry, or limit it with torch = \"<2.13.0\" if it was removed"
                " upstream"),
        Example("remove_noop_ops = PatternMatcherPass()\nreorder_for_speed = True\n",
                path="torch/_inductor/config.py", registry=_REGISTRY, line=14,
                message="registry config 'reorder_for_peak_memory' is not found in the linted tree"
                " (torch 2.13.0); remove the entry, or limit it with torch = \"<2.13.0\" if it was"
                " removed upstream"),
    ]

    @classmethod
    def check_tree(cls, registry: Registry, tree: TreeFacts) -> list[Finding]:
        findings = []
        covered: dict[str, bool] = {}
        tree.config_names = {key.split(":", 1)[1] for key in tree.configs}
        tree.patterns = [p for p in tree.globs if p.strip("*")]
        for entry in registry.passes:
            root = _root_of(entry)
            if root and root not in covered:
                covered[root] = tree.covers(root)  # once per root: the tree may hold 3,000 files
            if root and not covered[root]:
                continue
            if not cls._judged(entry.torch, tree.torch_version):
                continue
            if cls._pass_exists(entry.name, tree) or _written_in_source(entry, tree):
                continue
            findings.append(cls._finding(entry, "pass", entry.name, tree.torch_version))
        for entry in registry.configs:
            if entry.module not in tree.config_modules \
                    or not cls._judged(entry.torch, tree.torch_version):
                continue
            if f"{entry.module}:{entry.key}" in tree.configs:
                continue
            findings.append(cls._finding(entry, "config", entry.key, tree.torch_version))
        return findings

    @staticmethod
    def _judged(spec: str, version: str | None) -> bool:
        """Is an entry with this torch range judged against this tree? Unknown version: only
        entries without a range (a ranged entry may well describe another torch)."""
        if version is None:
            return not spec
        return matches(spec, version)

    @staticmethod
    def _pass_exists(name: str, tree: TreeFacts) -> bool:
        # Found by a pass rule, named in a string literal, a def/class of that name, a config hook
        # key of that name, or matched by a dynamic observer name like f"pass_pattern_{i}".
        if name in tree.passes or name.rsplit(".", 1)[-1] in tree.symbols:
            return True
        if name in tree.config_names:
            return True
        if "*" in name and any(fnmatchcase(found, name) for found in set.__iter__(tree.passes)):
            return True  # a wildcard entry exists while any pass it matches does (real_pass:*)
        return any(fnmatchcase(name, pattern) for pattern in tree.patterns)

    @classmethod
    def _finding(cls, entry, what: str, name: str, version: str | None) -> Finding:
        if version is None:
            message = cls.UNKNOWN_MESSAGE.format(what=what, name=name)
        else:
            message = cls.MESSAGE.format(what=what, name=name, version=version,
                                         spec=limited_range(entry.torch, version))
        return Finding(entry.origin, entry.line, 1, cls.CODE, message, name)


def _written_in_source(entry: PassEntry, tree: TreeFacts) -> bool:
    """Last, generous check: the entry's name is still written in its ``source`` file (a module
    constant such as a serialized pattern is neither a def nor a string)."""
    if not entry.source:
        return False
    path = next((f for f in tree.files if f == entry.source or f.endswith("/" + entry.source)), None)
    if path is None:
        return False
    from lint_rules.isolation import Unreadable, read_regular

    try:
        text = read_regular(path).decode("utf-8", "replace")
    except (Unreadable, OSError):
        return False
    leaf = entry.name.rsplit(".", 1)[-1].rsplit(":", 1)[-1]
    return re.search(rf"(?<![\w.]){re.escape(leaf)}(?!\w)", text) is not None


def limited_range(spec: str, version: str) -> str:
    """``spec`` narrowed to end before ``version``: always a valid PEP 440 specifier set, never
    with a local or pre-release part (``<2.12.0``, not ``<2.12.0+cu130``)."""
    bound = upper_bound(version)
    combined = ",".join(p for p in (spec.strip(), bound) if p)
    SpecifierSet(combined)  # raises if we ever build an invalid one
    return combined


def _root_of(entry: PassEntry) -> str:
    """The package an entry lives in: ``torch/_inductor`` for a source ``torch/_inductor/x.py``,
    ``lite_compiler`` for ``lite_compiler/decomposition.py``."""
    if entry.source:
        directories = entry.source.split("/")[:-1]
        return "/".join(directories[:2]) if directories else entry.source
    if entry.hook:
        return entry.hook.split(":")[0].split(".")[0]
    return ""
