"""Pass objects kept in lists, dicts and comprehensions; a torch.fx PassBase pass."""

from torch._inductor.pattern_matcher import PatternMatcherPass
from torch.fx.passes.infra.pass_base import PassBase, PassResult

from .fusion import AttnFusionPass, NoOpElimination, RMSNormQuantFusionPass


class FxCleanup(PassBase):
    def call(self, graph_module):
        return PassResult(graph_module, False)


class HalfDone(PassBase):
    """Abstract: PassBase.call is not implemented."""

    def requires(self, graph_module):
        return None


PASSES = [RMSNormQuantFusionPass(), NoOpElimination()]
BY_NAME = {"attn": AttnFusionPass(), "cleanup": FxCleanup()}
STAGES = [PatternMatcherPass() for _ in range(3)]
NAMED = [PatternMatcherPass(pass_name=n) for n in ("stage_a", "stage_b")]
