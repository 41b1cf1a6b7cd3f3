"""The rules: one file each, found by walking this package (as Fixit's ``walk_module`` does).

Adding a rule is adding a file here that defines a ``Rule`` subclass with a ``CODE``. Nothing
else lists the rules: the engine, the output formats and the tests read them from here.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

_NAMES = ("ALL_RULES", "FILE_RULES", "INDEX_RULES", "TREE_RULES")


def walk_rules(package: str | ModuleType = __name__) -> tuple[type, ...]:
    """Every concrete rule class defined in the modules of ``package``, ordered by code."""
    from lint_rules.rule import Rule

    if isinstance(package, str):
        package = importlib.import_module(package)
    found: dict[str, type] = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Rule) \
                    and value.__module__ == module.__name__ and "CODE" in vars(value):
                found[value.CODE] = value
    return tuple(found[code] for code in sorted(found))


def by_kind(rules: tuple[type, ...]) -> dict[str, tuple[type, ...]]:
    from lint_rules.rule import IndexRule, LintRule, TreeRule

    return {
        "ALL_RULES": rules,
        "FILE_RULES": tuple(r for r in rules if issubclass(r, LintRule)),
        "INDEX_RULES": tuple(r for r in rules if issubclass(r, IndexRule)),
        "TREE_RULES": tuple(r for r in rules if issubclass(r, TreeRule)),
    }


def __getattr__(name: str):
    if name not in _NAMES:
        raise AttributeError(name)
    kinds = by_kind(walk_rules())
    globals().update(kinds)
    return kinds[name]
