"""Every way a pass gets into an Inductor or functorch hook."""

import torch
import torch._functorch.config as functorch_config
from torch._inductor import config
from torch._inductor import config as inductor_config

from .fusion import NoOpElimination
from .passes import PASSES, FxCleanup


def strip_causal_mask(graph):
    return graph


def pre_pass(graph):
    return graph


def joint_pass(graph):
    return graph


def partition(joint, inputs, **kwargs):
    return joint


def reorder_overlap(snodes):
    return snodes


def setattr_pass(graph):
    return graph


def item_pass(graph):
    return graph


def patched_pass(graph):
    return graph


def dict_pass(graph):
    return graph


def local_dict_pass(graph):
    return graph


def options_pass(graph):
    return graph


pass_fn = strip_causal_mask
config.post_grad_custom_post_pass = pass_fn
inductor_config.post_grad_custom_pre_pass = NoOpElimination()
torch._inductor.config.pre_grad_custom_pass = pre_pass
functorch_config.joint_custom_pass = joint_pass
config.custom_partitioner_fn = partition
config.reorder_for_compute_comm_overlap_passes = [reorder_overlap, "sink_waits"]
config.reorder_for_compute_comm_overlap_passes.append(reorder_overlap)
setattr(config, "joint_custom_pre_pass", setattr_pass)
options = {}
options["post_grad_custom_post_pass"] = item_pass
with config.patch(joint_custom_post_pass=patched_pass):
    pass
with config.patch({"post_grad_custom_pre_pass": dict_pass}):
    pass
PATCH = {"post_grad_custom_post_pass": FxCleanup()}


def compile_with_options(fn):
    local = {"joint_custom_pre_pass": local_dict_pass}
    with config.patch(local):
        return torch.compile(fn, options={"post_grad_custom_post_pass": options_pass})


def install(passes=PASSES):
    config.post_grad_custom_post_pass = passes
