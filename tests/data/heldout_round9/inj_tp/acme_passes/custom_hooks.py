"""Custom-pass hooks set inside torch (injected): assignment and config.patch of hook configs."""
import torch
from torch._inductor import config
from torch._inductor.custom_graph_pass import CustomGraphPass, get_hash_for_files


class ReorderCollectives(CustomGraphPass):
    def __call__(self, graph: torch.fx.Graph) -> None:
        for node in list(graph.nodes):
            if node.target is torch.ops._c10d_functional.wait_tensor.default:
                node.args[0].append(node)

    def uuid(self):
        return get_hash_for_files((__file__,))


def _strip_asserts(graph: torch.fx.Graph) -> None:
    for node in list(graph.nodes):
        if node.target is torch.ops.aten._assert_async.msg:
            graph.erase_node(node)


def install_defaults():
    config.post_grad_custom_pre_pass = ReorderCollectives()


def compile_without_asserts(fn):
    with config.patch(joint_custom_post_pass=_strip_asserts):
        return torch.compile(fn)
