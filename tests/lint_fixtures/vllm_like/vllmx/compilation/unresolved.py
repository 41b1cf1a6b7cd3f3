"""A pass whose base class lives outside the tree and outside the registry."""

from some_vendor.passes import VendorBase
from torch._inductor import config


class VendorFusion(VendorBase):
    def __call__(self, graph):
        return graph


config.post_grad_custom_post_pass = VendorFusion()
