"""A pass whose cache key hashes the source of its own steps."""
import hashlib
import inspect

from torch import fx
from torch._inductor.custom_graph_pass import CustomGraphPass


def _fuse_relu(graph: fx.Graph) -> int:
    count = 0
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target == "relu":
            node.replace_all_uses_with(node.args[0])
            graph.erase_node(node)
            count += 1
    return count


class FuseRelu(CustomGraphPass):
    def __call__(self, graph: fx.Graph) -> None:
        _fuse_relu(graph)

    def uuid(self) -> str:
        hasher = hashlib.sha256()
        for item in (FuseRelu, _fuse_relu):
            hasher.update(inspect.getsource(item).encode("utf-8"))
        return hasher.hexdigest()
