"""Output of ``lite_guard check``: text lines, JSON and SARIF 2.1.0.

Paths and names are data: a file name may hold any byte (kept as surrogate escapes) and a pass
name any character. Text output escapes control characters, so a name with a newline cannot
forge a second finding line; SARIF URIs are percent-encoded per RFC 3986.
"""

from __future__ import annotations

import json
import os
import re
from urllib.parse import quote

from lint_rules.findings import Finding
from lite_guard import __version__
from lite_guard.errors import escape_text  # noqa: F401  (one escaper for every command)
from lite_guard.errors import strict_unicode

SRCROOT = "%SRCROOT%"


def to_text(finding: Finding) -> str:
    return escape_text(finding.text())


def artifact_location(path: str) -> dict:
    """A SARIF artifactLocation: an RFC 3986 URI of the file's bytes (relative to %SRCROOT%)."""
    raw = os.fsencode(path)  # the name's own bytes, undecodable ones included
    if os.path.isabs(path):
        return {"uri": "file://" + quote(raw, safe="/")}
    return {"uri": quote(raw, safe="/"), "uriBaseId": SRCROOT}


def _root_uri() -> str:
    try:
        here = os.getcwd()
    except FileNotFoundError:  # the directory was deleted under the run: only absolute paths lint
        here = "/"
    return "file://" + quote(os.fsencode(here), safe="/").rstrip("/") + "/"


# A registry problem line, ``path:line: message`` (lite_guard.errors.RegistryError's shape).
PROBLEM = re.compile(r"^(?P<path>.*?):(?P<line>\d+): (?P<message>.*)$", re.DOTALL)
_REGISTRY_RULE = "LG-REGISTRY"  # registry cross-entry problems (not a lint rule of a source file)


def to_json(findings: list[Finding], registry_problems: list[str], errors: list[str]) -> str:
    return json.dumps(strict_unicode({
        "findings": [f.to_dict() for f in findings],
        "registry_problems": registry_problems,
        "errors": errors,
        "count": len(findings) + len(registry_problems),
    }), indent=1)


def _rules() -> list[dict]:
    # Each rule declares its own SARIF metadata (lint_rules.rule.Rule.metadata); the two codes
    # below are not rules of a source file. Reading the rules does not import libcst.
    from lint_rules.rules import ALL_RULES

    return [rule.metadata() for rule in ALL_RULES] + [
        {"id": "LG900", "name": "uncheckable-file",
         "shortDescription": {"text": "file could not be read, decoded or parsed"}},
        {"id": _REGISTRY_RULE, "name": "registry-problem",
         "shortDescription": {"text": "registry entry refers to something no registry declares"}},
    ]


def to_sarif(findings: list[Finding], registry_problems: list[str], errors: list[str]) -> str:
    results = [{
        "ruleId": f.code,
        "level": "error",
        "message": {"text": f.message + (f"\n\n{f.hint}" if f.hint else "")},
        "locations": [{"physicalLocation": {
            "artifactLocation": artifact_location(f.path),
            "region": {"startLine": f.line, "startColumn": f.col},
        }}],
    } for f in findings]
    for problem in registry_problems:
        # 'path:line: message', where the path may itself hold ": " (a registry "my: reg.toml"
        # was reported on a file "my", its message starting "reg.toml:1:"): split where the
        # lintrunner adapter splits, at the first ":<digits>: ".
        match = PROBLEM.match(problem)
        path, line, message = match.group("path", "line", "message") if match else ("", "1", problem)
        results.append({
            "ruleId": _REGISTRY_RULE, "level": "error", "message": {"text": message},
            "locations": [{"physicalLocation": {
                "artifactLocation": artifact_location(path or "."),
                "region": {"startLine": max(int(line), 1)},
            }}],
        })
    run = {
        "tool": {"driver": {"name": "lite-guard", "version": __version__,
                            "informationUri": "https://github.com/", "rules": _rules()}},
        "results": results,
        "originalUriBaseIds": {SRCROOT: {"uri": _root_uri()}},
    }
    if errors:
        run["invocations"] = [{"executionSuccessful": False, "toolExecutionNotifications": [
            {"level": "error", "message": {"text": e}} for e in errors]}]
    return json.dumps(strict_unicode({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [run],
    }), indent=1)
