"""A pass of this project named like one of torch's own: it is this project's pass."""

from torch._inductor import config


def fx_graph_cse(graph):
    return graph


config.post_grad_custom_pre_pass = fx_graph_cse
