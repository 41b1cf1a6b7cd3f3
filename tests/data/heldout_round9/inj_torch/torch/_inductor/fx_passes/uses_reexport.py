import torch._inductor.fx_passes as fx_passes
from torch._inductor import config


def enable():
    config.post_grad_custom_post_pass = fx_passes.canonicalize
