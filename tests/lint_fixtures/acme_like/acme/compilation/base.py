"""A project base deriving from vLLM's, which is neither in the linted tree nor installed."""
import torch
from torch._inductor.pattern_matcher import PatternMatcherPass
from vllm.compilation.passes.vllm_inductor_pass import VllmInductorPass


class AcmeFusionBase(VllmInductorPass):
    """Builds one pattern pass, named by each subclass."""

    def __init__(self, config, pass_name):
        super().__init__(config)
        self.patterns = PatternMatcherPass(pass_name=pass_name)

    def __call__(self, graph: torch.fx.Graph) -> None:
        self.patterns.apply(graph)
