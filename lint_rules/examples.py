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
source = "torch/_inductor/fx_passes/post_grad.py"
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

[[pass]]
name = "example:registered_pass"
stage = "post_grad"
lite = "never"

[[pass]]
name = "example:RegisteredGraphPass"
stage = "post_grad"
lite = "never"
kind = "class"

[[pass]]
name = "post_grad_custom_pre_pass"
stage = "post_grad"
lite = "never"
kind = "custom_hook"
hook = "torch._inductor.config:post_grad_custom_pre_pass"

[[pass]]
name = "post_grad_custom_post_pass"
stage = "post_grad"
lite = "never"
kind = "custom_hook"
hook = "torch._inductor.config:post_grad_custom_post_pass"

[[pass]]
name = "joint_custom_pre_pass"
stage = "joint_graph"
lite = "never"
kind = "custom_hook"
hook = "torch._inductor.config:joint_custom_pre_pass"

[[pass]]
name = "joint_custom_post_pass"
stage = "joint_graph"
lite = "never"
kind = "custom_hook"
hook = "torch._inductor.config:joint_custom_post_pass"

[[pass]]
name = "joint_custom_pass"
stage = "aot"
lite = "never"
kind = "custom_hook"
hook = "torch._functorch.config:joint_custom_pass"

[[config]]
key = "custom_backend_passes"
kind = "custom_hook"
type = "dict"
why = "per-device user passes: a dict-valued custom hook"

[[base]]
name = "torch._inductor.custom_graph_pass:CustomGraphPass"
role = "pass_class"

[[base]]
name = "torch.fx.passes.infra.pass_base:PassBase"
role = "pass_class"

[[base]]
name = "torch.fx.passes.graph_transform_observer:GraphTransformObserver"
role = "observer"
name_arg = "passname"
name_position = 1

[[base]]
name = "torch._inductor.pattern_matcher:PatternMatcherPass"
role = "pattern_pass"
name_arg = "pass_name"
name_position = 0

[[base]]
name = "torch.fx.graph:Graph"
role = "graph_type"
members = ["nodes", "erase_node", "eliminate_dead_code", "owning_module", "lint"]

[[base]]
name = "torch.fx.graph_module:GraphModule"
role = "graph_type"
members = ["graph", "recompile"]

[[base]]
name = "torch.fx.graph:Graph"
role = "graph_mutation"
members = ["erase_node", "eliminate_dead_code"]

[[base]]
name = "torch._dynamo.backends.common:aot_autograd"
role = "pass_argument"
name_arg = "partition_fn"
stage = "aot"

[[base]]
name = "torch._dynamo.backends.common:aot_autograd"
role = "compiler_argument"
name_arg = "fw_compiler"

[[base]]
name = "torch._inductor.lowering:make_fallback"
role = "lowering_registration"

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
    """Source a rule is run on; ``path`` matters for config modules (``config.py``) and for the
    module a pass is defined in (its identity is ``module:qualname``).

    An INVALID example states what the rule must report, exactly: ``line`` and ``message`` of
    its one finding, or ``expect`` = ((line, message), ...) when it reports several."""

    code: str
    path: str = "example.py"
    registry: str | None = None  # TOML text; EXAMPLE_REGISTRY when None
    line: int | None = None
    message: str | None = None
    expect: tuple[tuple[int, str], ...] = ()

    @property
    def expected(self) -> list[tuple[int, str]]:
        if self.expect:
            return list(self.expect)
        if self.line is not None and self.message is not None:
            return [(self.line, self.message)]
        return []
