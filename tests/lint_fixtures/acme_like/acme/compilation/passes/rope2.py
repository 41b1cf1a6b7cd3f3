"""Names no pass vocabulary at all: only its base, which lives outside this directory."""
from acme.compilation.base import AcmeFusionBase


class Rope2Fusion(AcmeFusionBase):
    def __init__(self, config):
        super().__init__(config, "acme_rope2_fusion")
