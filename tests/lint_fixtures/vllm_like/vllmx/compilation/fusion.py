"""Fusion passes: project bases from other files, an aliased pattern-pass import, names held in
constants and attributes."""

from torch._inductor.pattern_matcher import PatternMatcherPass as PMP

from vllmx.compilation import names

from . import VllmInductorPass
from .inductor_pass import VllmPatternMatcherPass
from .names import RMS_FUSION


class RMSNormQuantFusionPass(VllmPatternMatcherPass):
    pass_name = RMS_FUSION

    def __init__(self):
        self.patterns = PMP(pass_name=self.pass_name)

    def __call__(self, graph):
        self.patterns.apply(graph)


class AttnFusionPass(VllmInductorPass):
    def __init__(self):
        self.patterns = PMP(pass_name=names.ATTN_FUSION)

    def __call__(self, graph):
        return self.patterns.apply(graph)


class NoOpElimination(VllmInductorPass):
    def __call__(self, graph):
        return graph


def make_dynamic(name):
    return PMP(pass_name=name)
