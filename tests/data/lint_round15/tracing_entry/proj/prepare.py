"""An entry that traces the module itself, annotated nowhere, then rewrites what it traced."""
import copy

import torch
from torch.fx import GraphModule, Tracer


def duplicate_shared_modules(graph, modules):
    seen = {}
    for node in graph.nodes:
        if node.op == "call_module":
            seen.setdefault(node.target, []).append(node)
    for target, nodes in seen.items():
        for i, node in enumerate(nodes[1:], 1):
            modules[f"{target}_dup{i}"] = copy.deepcopy(modules[target])
            node.target += f"_dup{i}"
    return graph


def prepare(model, concrete_args=None):
    tracer = Tracer()
    graph = tracer.trace(model, concrete_args)
    modules = dict(model.named_modules())
    graph = duplicate_shared_modules(graph, modules)
    return GraphModule(modules, graph)


def script(model, example):
    traced = torch.jit.trace(model, example)
    duplicate_shared_modules(traced, {})
    return traced
