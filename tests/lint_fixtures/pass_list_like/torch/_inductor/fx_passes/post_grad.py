from torch._inductor.pattern_matcher import PatternMatcherPass
from torch.fx.passes.graph_transform_observer import GraphTransformObserver

# First pass_patterns[0] are applied, then [1], then [2], then [3]
pass_patterns = [
    PatternMatcherPass(),
    PatternMatcherPass(),
    PatternMatcherPass(),
    PatternMatcherPass(),
]


def post_grad_passes(gm, is_inference):
    for i, patterns in enumerate(pass_patterns):
        GraphTransformObserver(gm, f"pass_pattern_{i}").apply_graph_pass(patterns.apply)
