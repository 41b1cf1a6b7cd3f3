"""``lite_guard check --fix``: write the entries the findings ask for into the project's registry.

Fail closed: every entry written is the finding's own hint (lite_guard.hints, the one TOML
writer): a pass is ``lite = "never"``, a gate or reorder config nobody classified is forced off
(``lite_value = false``), and each carries ``WHY_PLACEHOLDER`` for ``why``, which ``check``
reports until a person replaces it. Style-preserving (tomlkit keeps the file's comments and
layout), idempotent (an identity already in the file is not written again), and never touches a
shipped registry: the target is the project's own file, created and added to
``[tool.lite_guard] registries`` when the project has none.
"""

from __future__ import annotations

import difflib
import re

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import AoT

from lint_rules.findings import Finding
from lite_guard.atomic import write_text_atomic
from lite_guard.hints import WHY_PLACEHOLDER
from lite_guard.registry import FORCED_CONFIG_KINDS, SHIPPED_DIR

# The registry file ``--fix`` creates beside pyproject.toml when the project lists none.
DEFAULT_REGISTRY_NAME = "lite_guard_registry.toml"
_HEADER = ("Registry entries of this project (lite_guard). Entries added by `lite_guard check --fix`"
           " are fail-closed\n(lite = \"never\"); replace each placeholder `why` after deciding.")


class FixError(Exception):
    """--fix cannot write anywhere safe (exit 2); the message is one line for a person."""


@dataclass
class FixResult:
    target: Path
    added: list[str] = field(default_factory=list)  # "pass NAME" / "config MODULE:KEY"
    created: bool = False
    pyproject_updated: bool = False
    unwritable: list[str] = field(default_factory=list)  # names TOML cannot hold


def _is_shipped(path: Path) -> bool:
    try:
        return path.resolve().is_relative_to(SHIPPED_DIR.resolve())
    except OSError:
        return False


def choose_target(project_registries: list[Path], extra_registries: list[Path],
                  pyproject: Path | None) -> tuple[Path, bool]:
    """The file to write and whether it must be added to [tool.lite_guard] registries."""
    for path in [*project_registries, *extra_registries]:
        if not _is_shipped(path):
            return path, False
    if project_registries or extra_registries:
        raise FixError("the only registries in use are shipped with lite_guard, which --fix never"
                       " edits; add a project registry to [tool.lite_guard] registries")
    if pyproject is None:
        raise FixError("the only registries in use are shipped with lite_guard, which --fix never"
                       " edits; create pyproject.toml with a [tool.lite_guard] table (or pass"
                       " --registry PATH of your own file), then rerun --fix")
    return pyproject.parent / DEFAULT_REGISTRY_NAME, True


def _identity(header: str, table: Any) -> str:
    if header == "pass":
        return f"pass {table['name']}"
    return f"config {table.get('module', 'inductor')}:{table['key']}"


def entries_of(findings: list[Finding], unwritable: list[str] | None = None) -> list[tuple[str, Any]]:
    """(``pass`` | ``config``, tomlkit table) for each finding's hint, first occurrence only.
    A name holding a lone surrogate (``"\\ud800"`` in the code, or an undecodable byte of the
    file's name, kept as ``\\udcff``) has no TOML spelling: TOML and UTF-8 hold Unicode scalar
    values only. It is left out (its name added to ``unwritable``) and stays a finding."""
    seen: set[str] = set()
    entries = []
    for finding in findings:
        if not finding.hint:
            continue
        try:
            finding.hint.encode("utf-8")
        except UnicodeEncodeError:
            if unwritable is not None and finding.name not in unwritable:
                unwritable.append(finding.name)
            continue
        document = tomlkit.parse(finding.hint)
        for header in ("pass", "config"):
            for table in document.get(header, []):
                # The placeholder check reports until a person decides, whatever the hint said.
                table["why"] = WHY_PLACEHOLDER
                if header == "config" and table.get("kind") in FORCED_CONFIG_KINDS \
                        and "lite_value" not in table:
                    # A gate or reorder nobody classified yet: forced off, the safe side.
                    table.add("lite_value", False)
                    table.add("why", table.pop("why"))  # keep why last, as hints write it
                identity = _identity(header, table)
                if identity not in seen:
                    seen.add(identity)
                    entries.append((header, table))
    return entries


def _existing(document: Any) -> set[str]:
    found = set()
    for header in ("pass", "config"):
        for table in document.get(header, []):
            if header == "pass" and "name" in table or header == "config" and "key" in table:
                found.add(_identity(header, table))
    return found


_BOM = "\ufeff"


def _parse(path: Path) -> tuple[Any, Any]:
    """``path`` as a tomlkit document, and how to write it back as it was saved: the loaders
    accept a UTF-8 BOM (Windows editors), which tomlkit refuses, and reading as text turned
    CRLF line ends into LF, so --fix rewrote every line of a Windows file."""
    raw = path.read_bytes().decode("utf-8")
    bom = _BOM if raw.startswith(_BOM) else ""
    before = raw[len(bom):]
    try:
        document = tomlkit.parse(before)  # tomlkit keeps each line's own end, CR LF or LF
    except TOMLKitError as exc:  # tomllib read it; tomlkit may still refuse
        raise FixError(f"cannot edit {path}: tomlkit cannot parse it ({exc}); add the entries"
                       " by hand") from None

    def saved(text: str) -> str:
        return bom + _with_line_ends_of(before, text)
    return document, saved


_LINE = re.compile(r"[^\n]*\n|[^\n]+$")  # lines by LF only: a CR or U+2028 in a string is text


def _with_line_ends_of(before: str, after: str) -> str:
    """``after`` (tomlkit's text of the edited document) with the lines --fix wrote ending as the
    file's lines mostly do. Every line it kept stays byte for byte: a file mixing CR LF and LF
    lines had all of them rewritten to CR LF (or all to LF) before."""
    crlf = before.count("\r\n")
    if not crlf:
        return after
    ending = "\r\n" if crlf * 2 >= before.count("\n") else "\n"
    old, new = _LINE.findall(before), _LINE.findall(after)
    out: list[str] = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for k, line in enumerate(new[j1:j2]):
            if tag != "equal" and line.endswith("\n") and not line.endswith("\r\n"):
                own = old[i1 + k] if tag == "replace" and i1 + k < i2 else None
                line = line[:-1] + ("\n" if own is not None and not own.endswith("\r\n")
                                    else "\r\n" if own is not None else ending)
            out.append(line)
    return "".join(out)


def _with_registry(pyproject: Path, target: Path) -> str:
    """pyproject.toml's text with the new file appended to [tool.lite_guard] registries,
    keeping the file's own style."""
    document, saved = _parse(pyproject)
    tool = document.setdefault("tool", tomlkit.table(is_super_table=True))
    section = tool.setdefault("lite_guard", tomlkit.table())
    registries = section.setdefault("registries", tomlkit.array())
    relative = target.relative_to(pyproject.parent).as_posix()
    if relative not in [str(item) for item in registries]:
        registries.append(relative)
    return saved(tomlkit.dumps(document))


def apply_fix(findings: list[Finding], project_registries: list[Path],
              extra_registries: list[Path], pyproject: Path | None) -> FixResult:
    """Write the missing entries; returns what was written where (nothing when all are there)."""
    target, add_to_project = choose_target(project_registries, extra_registries, pyproject)
    result = FixResult(target)
    entries = entries_of(findings, result.unwritable)
    saved = str  # a new file: as tomlkit writes it
    if target.exists():
        document, saved = _parse(target)
    else:
        document = tomlkit.document()
        for line in _HEADER.splitlines():
            document.add(tomlkit.comment(line))
        result.created = True
    present = _existing(document)
    new = [(header, table) for header, table in entries if _identity(header, table) not in present]
    if not new:
        result.created = False
        return result  # idempotent: nothing to add, nothing written
    for header, table in new:
        if header in document and not isinstance(document[header], AoT):
            # `pass = []` (an empty inline array, which the loader accepts): a table appended to
            # it was written as `pass = [name = ...]`, a registry no TOML reader could load.
            if len(document[header]):
                raise FixError(f"cannot edit {target}: its '{header}' entries are not written as"
                               f" [[{header}]] tables; rewrite them so, or add the entries by hand")
            del document[header]
        if header not in document:
            document.add(tomlkit.nl())
            document.add(header, tomlkit.aot())
        document[header].append(table)
        result.added.append(_identity(header, table))
    # Both texts first: a pyproject.toml that cannot be edited leaves no new registry behind.
    project_text = _with_registry(pyproject, target) if add_to_project and pyproject else None
    write_text_atomic(target, saved(tomlkit.dumps(document)))
    if project_text is not None:
        write_text_atomic(pyproject, project_text)
        result.pyproject_updated = True
    return result


def placeholder_whys(registry: Any) -> list[str]:
    """Registry problems for entries whose ``why`` is still the placeholder --fix wrote."""
    problems = [f"{e.origin}:{e.line}: pass '{e.name}' still has the placeholder why written by"
                " --fix; decide its lite flag and replace the why with the reason"
                for e in registry.passes if e.why.strip() == WHY_PLACEHOLDER]
    problems += [f"{e.origin}:{e.line}: config '{e.key}' still has the placeholder why written by"
                 " --fix; decide its lite_value and replace the why with the reason"
                 for e in registry.configs if e.why.strip() == WHY_PLACEHOLDER]
    return problems


def run_fix(args: Any, findings: list[Finding]) -> int:
    """The ``--fix`` step of ``lite_guard check``: 0 written (or nothing to write), 2 nowhere safe."""
    import os
    import sys

    from lite_guard.errors import escape_text
    from lite_guard.project_config import load_project_config

    project = None if getattr(args, "no_project", False) else load_project_config()
    try:
        result = apply_fix(findings, list(project.registries) if project else [],
                           [Path(p) for p in getattr(args, "registry", [])],
                           project.pyproject if project else None)
    except FixError as exc:
        print(escape_text(f"lite_guard check --fix: {exc}"), file=sys.stderr)
        return 2
    except OSError as exc:  # a read-only or full file system, a directory in the file's place
        where = escape_text(os.fsdecode(exc.filename)) if exc.filename else "the registry"
        print(f"lite_guard check --fix: cannot write {where}: {exc.strerror or exc}; make it"
              " writable (or its folder) and run --fix again", file=sys.stderr)
        return 2
    if result.added:
        # Names and paths may hold any character: escaped, one line (lite_guard.errors).
        print(escape_text(f"lite_guard check --fix: {'created' if result.created else 'added to'}"
                          f" {result.target}: {len(result.added)} fail-closed"
                          f" entr{'y' if len(result.added) == 1 else 'ies'}"
                          f" ({', '.join(result.added)})"), file=sys.stderr)
    if result.pyproject_updated:
        print(escape_text(f"lite_guard check --fix: listed {result.target.name} in"
                          " [tool.lite_guard] registries"), file=sys.stderr)
    for name in result.unwritable:
        print(escape_text(f"lite_guard check --fix: not written: '{name}' holds a lone surrogate"
                          " (an undecodable byte of a file name, or a \\ud800-style escape),"
                          " which no TOML registry can hold; rename it"), file=sys.stderr)
    return 0
