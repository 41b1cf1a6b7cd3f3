"""Inline examples of a rule (Fixit style): source it must accept or report, run by the tests.

Kept apart from ``lint_rules.rule`` so the tree-level rule can use it without importing libcst.
"""

from __future__ import annotations

from dataclasses import dataclass

# The registry the examples run against, unless a rule brings its own.
EXAMPLE_REGISTRY = """
[[pass]]
name = "remove_noop_ops"
stage = "post_grad"
lite = "always"
why = "removes ops that do nothing; numerics-neutral"

[[pass]]
name = "registered_pass"
stage = "post_grad"
lite = "never"

[[pass]]
name = "RegisteredGraphPass"
stage = "post_grad"
lite = "never"
kind = "class"

[[config]]
key = "reorder_for_peak_memory"
kind = "reorder"
lite_value = false

[[config]]
key = "triton.reorder_for_reducing_graph_partitions"
kind = "reorder"
lite_value = false

[[config]]
key = "use_post_grad_passes"
lite_value = false
"""


@dataclass(frozen=True)
class Example:
    """Source a rule is run on; ``path`` matters for config modules (``config.py``)."""

    code: str
    path: str = "example.py"
    registry: str | None = None  # TOML text; EXAMPLE_REGISTRY when None
