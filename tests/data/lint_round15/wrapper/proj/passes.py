"""A backend's pass pipeline that is a one-call wrapper of a decomposition step."""
import torch
from torch._decomp import get_decompositions
from torch.fx.experimental.proxy_tensor import make_fx

DECOMPOSE = [torch.ops.aten.addmm.default]


def decompose(gm: torch.fx.GraphModule, example_inputs, ops=None):
    if ops is None:
        return gm
    return make_fx(gm, decomposition_table=get_decompositions(ops))(*example_inputs)


def cpu_pipeline(gm: torch.fx.GraphModule, example_inputs):
    return decompose(gm, example_inputs, DECOMPOSE)
