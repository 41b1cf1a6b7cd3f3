from torch._inductor.pattern_matcher import PatternMatcherPass  # noqa: F401

from acme.compilation.base import AcmeFusionBase


class DirectFusion(AcmeFusionBase):
    def __init__(self, config):
        super().__init__(config, pass_name="acme_direct_fusion")
