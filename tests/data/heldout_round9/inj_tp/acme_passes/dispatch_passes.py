"""Rewrites chosen by a dict dispatch (injected)."""
import torch


def _sink_views(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target is torch.ops.aten.view.default:
            with gm.graph.inserting_after(node):
                new = gm.graph.call_function(torch.ops.aten.reshape.default, node.args)
            node.replace_all_uses_with(new)
            gm.graph.erase_node(node)
    gm.recompile()
    return gm


def _hoist_constants(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    placeholder = next(iter(gm.graph.nodes))
    for node in list(gm.graph.nodes):
        if node.op == "get_attr":
            placeholder.prepend(node)
    gm.recompile()
    return gm


BY_LEVEL = {"views": _sink_views, "constants": _hoist_constants}


def run_level(gm, level: str):
    return BY_LEVEL[level](gm)
