import torch
from torch._dynamo.backends.common import aot_autograd

from proj.passes import cpu_pipeline


def _compile(gm: torch.fx.GraphModule, example_inputs):
    gm = cpu_pipeline(gm, example_inputs)
    return gm.forward


backend = aot_autograd(fw_compiler=_compile)
