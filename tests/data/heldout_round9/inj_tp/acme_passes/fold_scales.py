"""A new post-grad module (injected): a pattern pass of its own and a GraphTransformObserver."""
import functools

import torch
from torch._inductor.pattern_matcher import (
    CallFunction, KeywordArg, Match, PatternMatcherPass, register_graph_pattern)
from torch.fx.passes.graph_transform_observer import GraphTransformObserver

aten = torch.ops.aten

fold_scale_patterns = PatternMatcherPass(pass_name="fold_scale_pass")


@register_graph_pattern(CallFunction(aten.mul.Tensor, KeywordArg("x"), 1.0),
                        pass_dict=fold_scale_patterns)
def _drop_unit_scale(match: Match, x):
    match.replace_by_example(lambda x: x, [x])


def apply_fold_scales(gm: torch.fx.GraphModule) -> None:
    with GraphTransformObserver(gm, "apply_fold_scales"):
        fold_scale_patterns.apply(gm.graph)


def _strip_clones(graph: torch.fx.Graph) -> None:
    for node in list(graph.nodes):
        if node.target is aten.clone.default:
            node.replace_all_uses_with(node.args[0])
            graph.erase_node(node)


# a rewrite kept as a class attribute and run through it
class _Cleanups:
    strip = staticmethod(_strip_clones)


def run_cleanups(gm: torch.fx.GraphModule) -> None:
    _Cleanups.strip(gm.graph)


# a rewrite bound through functools.partial and a lambda
_drop_detach = functools.partial(
    lambda graph, op: [graph.erase_node(n) for n in list(graph.nodes) if n.target is op],
    op=aten.detach.default)
