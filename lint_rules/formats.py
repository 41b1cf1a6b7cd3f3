"""Machine-readable output of ``lite_guard check``: JSON and SARIF 2.1.0."""

from __future__ import annotations

import json

from lint_rules.findings import Finding
from lite_guard import __version__

_REGISTRY_RULE = "LG-REGISTRY"  # registry cross-entry problems (not a lint rule of a source file)


def to_json(findings: list[Finding], registry_problems: list[str], errors: list[str]) -> str:
    return json.dumps({
        "findings": [f.to_dict() for f in findings],
        "registry_problems": registry_problems,
        "errors": errors,
        "count": len(findings) + len(registry_problems),
    }, indent=1)


def _rules() -> list[dict]:
    # Only rule metadata is needed here; reading it does not import libcst.
    descriptions = {
        "LG001": "graph pass that no registry names",
        "LG002": "reorder or pass-gating config that no registry names",
        "LG003": "registry entry whose pass or config no longer exists in the tree",
        "LG004": "lite_mode_options disagrees with the derived lite config",
        "LG900": "file could not be read, decoded or parsed",
        _REGISTRY_RULE: "registry entry refers to something no registry declares",
    }
    return [{"id": code, "shortDescription": {"text": text}} for code, text in descriptions.items()]


def to_sarif(findings: list[Finding], registry_problems: list[str], errors: list[str]) -> str:
    results = [{
        "ruleId": f.code,
        "level": "error",
        "message": {"text": f.message + (f"\n\n{f.hint}" if f.hint else "")},
        "locations": [{"physicalLocation": {
            "artifactLocation": {"uri": f.path},
            "region": {"startLine": f.line, "startColumn": f.col},
        }}],
    } for f in findings]
    for problem in registry_problems:
        where, _, message = problem.partition(": ")
        path, _, line = where.rpartition(":")
        results.append({
            "ruleId": _REGISTRY_RULE, "level": "error", "message": {"text": message},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": path or where},
                "region": {"startLine": int(line) if line.isdigit() and int(line) > 0 else 1},
            }}],
        })
    run = {
        "tool": {"driver": {"name": "lite-guard", "version": __version__,
                            "informationUri": "https://github.com/", "rules": _rules()}},
        "results": results,
    }
    if errors:
        run["invocations"] = [{"executionSuccessful": False, "toolExecutionNotifications": [
            {"level": "error", "message": {"text": e}} for e in errors]}]
    return json.dumps({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [run],
    }, indent=1)
