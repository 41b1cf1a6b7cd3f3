import functools

from torch.fx.passes.graph_transform_observer import GraphTransformObserver

from ..custom_graph_pass import CustomGraphPass
from ..pattern_matcher import PatternMatcherPass

pass_patterns = [PatternMatcherPass(), PatternMatcherPass()]
fusion_patterns = PatternMatcherPass(pass_name="my_new_fusion")


def remove_noop_ops(graph):
    return graph


def my_new_pass(graph):
    return graph


def post_grad_passes(gm):
    Observer = functools.partial(GraphTransformObserver, subsystem="post_grad_passes")
    Observer(gm, "remove_noop_ops").apply_graph_pass(remove_noop_ops)
    Observer(gm, "my_new_pass").apply_graph_pass(my_new_pass)
    for i, patterns in enumerate(pass_patterns):
        GraphTransformObserver(gm, f"pass_pattern_{i}").apply_graph_pass(patterns.apply)


class NewGraphPass(CustomGraphPass):
    def __call__(self, graph):
        return graph

    def uuid(self):
        return None
