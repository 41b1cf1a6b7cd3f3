"""``lite_guard check``: validate every registry in use (and, with the lint rules, source trees)."""

from __future__ import annotations

import argparse
import sys

from lite_guard.commands._common import add_registry_args, load_registry
from lite_guard.registry import Registry


def register(subparsers) -> None:
    parser = subparsers.add_parser("check", help="validate the registries in use")
    add_registry_args(parser)
    parser.set_defaults(run=run)


def registry_findings(registry: Registry) -> list[str]:
    """Cross-entry problems the per-file loader cannot see."""
    findings = []
    declared = {c.key for c in registry.configs}
    for entry in registry.passes:
        for key in entry.gated_by:
            if key not in declared:
                findings.append(
                    f"{entry.origin}:{entry.line}: pass '{entry.name}' is gated by '{key}', which"
                    " no [[config]] entry declares; add one with the value lite mode forces"
                )
    return findings


def run(args: argparse.Namespace) -> int:
    registry = load_registry(args)
    findings = registry_findings(registry)
    for line in findings:
        print(line)
    files = ", ".join(str(p) for p in registry.files) or "none"
    print(f"registries: {len(registry.passes)} passes, {len(registry.configs)} configs"
          f" from {len(registry.files)} file(s): {files}", file=sys.stderr)
    print(f"{len(findings)} finding(s)", file=sys.stderr)
    return 1 if findings else 0
