"""Shapes that must not send name resolution into a loop: star-import and alias cycles, classes
that derive from each other, a class listed among its own bases."""

from torch._inductor import config
from torch._inductor.custom_graph_pass import CustomGraphPass

from .b import *  # noqa: F401,F403

A = B  # noqa: F405
p = q  # noqa: F405
q = p


class C(D):  # noqa: F405
    def __call__(self, g):
        return g


class D(C):
    x = D.y  # noqa: F405


class E(CustomGraphPass, E):  # noqa: F405
    def __call__(self, g):
        return g

    def uuid(self):
        return None


config.post_grad_custom_post_pass = p
config.post_grad_custom_pre_pass = C().x.y.z


def f(x=f):  # noqa: F405
    config.joint_custom_post_pass = f.g.h
