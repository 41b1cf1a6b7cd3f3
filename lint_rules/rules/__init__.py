"""One rule per file. ``ALL_RULES`` is the rule set the engine runs.

Loaded lazily: the file rules import libcst, which a fully cached run never needs.
"""

from __future__ import annotations

_NAMES = ("FILE_RULES", "TREE_RULES", "ALL_RULES")


def __getattr__(name: str):
    if name not in _NAMES:
        raise AttributeError(name)
    from lint_rules.rules.lg001_unregistered_pass import UnregisteredPass
    from lint_rules.rules.lg002_unregistered_config import UnregisteredConfig
    from lint_rules.rules.lg003_stale_entry import StaleEntry
    from lint_rules.rules.lg004_lite_mode_drift import LiteModeDrift

    # Rules that visit one file's tree; StaleEntry looks at the tree as a whole instead.
    rules = {"FILE_RULES": (UnregisteredPass, UnregisteredConfig, LiteModeDrift),
             "TREE_RULES": (StaleEntry,)}
    rules["ALL_RULES"] = rules["FILE_RULES"] + rules["TREE_RULES"]
    globals().update(rules)
    return rules[name]
