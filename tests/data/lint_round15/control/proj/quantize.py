"""No pass: module swaps, a kernel registered as a custom op, objects with args / target."""
import torch


class Job:
    def __init__(self, args, target):
        self.args = args
        self.target = target


def swap_linears(model, make):
    for name, child in model.named_children():
        if isinstance(child, torch.nn.Linear):
            setattr(model, name, make(child))
    return model


def relabel(jobs, target):
    for job in jobs:
        job.target = target
    return jobs


def script(model, example):
    traced = torch.jit.trace(model, example)
    relabel([traced], "cpu")
    return traced


@torch.library.custom_op("ctrl::scale", mutates_args=())
def scale(x: torch.Tensor, factor: float) -> torch.Tensor:
    return x * factor
