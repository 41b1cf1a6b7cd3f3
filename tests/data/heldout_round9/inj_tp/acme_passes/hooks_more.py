"""More install forms (injected)."""
import torch
from torch._inductor import config as inductor_config
from torch._inductor import custom_graph_pass as cgp
from torch._inductor.fx_passes.post_grad import pass_patterns
from torch._inductor.pattern_matcher import fwd_only, register_replacement
from torch.fx.passes.infra.pass_manager import PassManager


class SwapAdds(cgp.CustomGraphPass):
    def __call__(self, graph):
        for node in graph.nodes:
            if node.target is torch.ops.aten.add.Tensor:
                node.args = (node.args[1], node.args[0])

    def uuid(self):
        return "swap-adds"


class Fuser:
    def run(self, graph: torch.fx.Graph) -> None:
        for node in list(graph.nodes):
            if node.target is torch.ops.aten.relu.default and len(node.users) == 0:
                graph.erase_node(node)


def _retarget_gelu(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    for node in gm.graph.nodes:
        if node.target is torch.ops.aten.gelu.default:
            node.target = torch.ops.aten.relu.default
    return gm


def _pattern(x):
    return torch.ops.aten.mul.Tensor(x, 2.0)


def _replacement(x):
    return torch.ops.aten.add.Tensor(x, x)


def install_all():
    inductor_config.post_grad_custom_pre_pass = Fuser().run
    register_replacement(_pattern, _replacement, [torch.empty(4)], fwd_only, pass_patterns[0])
    return inductor_config.patch({"post_grad_custom_post_pass": SwapAdds()})


def passes():
    return PassManager(passes=[_retarget_gelu, lambda gm: gm.graph.eliminate_dead_code()])
