"""A rewrite registered through a decorator defined in another module (injected)."""
import torch

from .registry_helpers import graph_pass


@graph_pass("drop_noops")
def drop_noops(graph: torch.fx.Graph) -> None:
    for node in list(graph.nodes):
        if node.target is torch.ops.aten.alias.default:
            node.replace_all_uses_with(node.args[0])
            graph.erase_node(node)
