"""The one writer of registry entries to paste (or to add with ``check --fix``).

Written with tomlkit so any name, however odd (quotes, newlines, markup), stays one valid TOML
string. Fail closed: a new pass is ``lite = "never"`` and carries ``WHY_PLACEHOLDER``, which
``lite_guard check`` reports until a person replaces it.
"""

from __future__ import annotations

from typing import Any

import tomlkit

WHY_PLACEHOLDER = "TODO: say why this pass is (or is not) safe in lite mode"


def pass_table(name: str, stage: str, kind: str, **extra: Any) -> "tomlkit.items.Table":
    table = tomlkit.table()
    table.add("name", name)
    table.add("stage", stage)
    table.add("lite", "never")
    table.add("kind", kind)
    for key, value in extra.items():
        if value not in (None, "", (), []):
            table.add(key, list(value) if isinstance(value, tuple) else value)
    table.add("why", WHY_PLACEHOLDER)
    return table


def config_table(key: str, module: str, kind: str, type: str = "", lite_value: Any = None) -> "tomlkit.items.Table":
    table = tomlkit.table()
    table.add("key", key)
    table.add("module", module or "inductor")
    table.add("kind", kind)
    if type:
        table.add("type", type)
    if lite_value is not None:
        table.add("lite_value", lite_value)
    table.add("why", WHY_PLACEHOLDER)
    return table


def _as_entry(header: str, table: "tomlkit.items.Table") -> str:
    document = tomlkit.document()
    array = tomlkit.aot()
    array.append(table)
    document.add(header, array)
    return tomlkit.dumps(document)


def pass_hint(name: str, stage: str, kind: str, **extra: Any) -> str:
    """A ``[[pass]]`` entry as TOML text (``extra``: hook, when, source, gated_by, torch)."""
    return _as_entry("pass", pass_table(name, stage, kind, **extra))


def config_hint(key: str, module: str, kind: str, type: str = "", lite_value: Any = None) -> str:
    """A ``[[config]]`` entry as TOML text; forced kinds need a ``lite_value``."""
    return _as_entry("config", config_table(key, module, kind, type, lite_value))


def one_line(hint: str) -> str:
    """A hint folded onto a finding's line: ``[[pass]] name = "x", stage = "..." ...``."""
    # tomlkit ends its lines with "\n" and writes U+0085, U+2028, U+001C-1E raw inside a string:
    # str.splitlines() would cut a name there (and strip() eat its ends).
    header, *fields = [line for line in hint.split("\n") if line]
    return f"{header} " + ", ".join(f for f in fields if not f.startswith("why"))
