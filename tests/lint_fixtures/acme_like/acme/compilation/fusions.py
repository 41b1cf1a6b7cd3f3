from acme.compilation.base import AcmeFusionBase

ROPE = "acme_rope_fusion"


class RopeFusion(AcmeFusionBase):
    def __init__(self, config):
        super().__init__(config, ROPE)


class NormFusion(AcmeFusionBase):
    def __init__(self, config):
        super().__init__(config, pass_name="acme_norm_fusion")
