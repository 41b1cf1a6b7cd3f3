import torch


def canonicalize_slices(graph: torch.fx.Graph) -> None:
    for node in list(graph.nodes):
        if node.target is torch.ops.aten.slice.Tensor and node.args[2:] == (0,):
            node.replace_all_uses_with(node.args[0])
            graph.erase_node(node)
