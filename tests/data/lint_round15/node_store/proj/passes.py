"""Rewrites whose only change to the graph is a store on the nodes they walk."""
import torch


def retarget_adds(graph):
    for node in graph.nodes:
        if node.op == "call_function" and node.target is torch.add:
            node.target = torch.sub


def swap_operands(gm):
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch.sub:
            node.args = (node.args[1], node.args[0])
    gm.graph.lint()
    return gm


def count_adds(graph):
    return sum(node.target is torch.add for node in graph.nodes)


PASSES = [retarget_adds, swap_operands, count_adds]
