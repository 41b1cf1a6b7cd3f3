# Patterns registered into torch's own pattern passes, the way torchao's x86 quantization does.
import functools

import torch
from torch._inductor import pattern_matcher as pm
from torch._inductor.fx_passes.freezing_patterns import register_freezing_graph_pattern
from torch._inductor.fx_passes.post_grad import pass_patterns
from torch._inductor.pattern_matcher import PatternMatcherPass, register_lowering_pattern

acme_patterns = PatternMatcherPass(pass_name="acme_quant_patterns")


def _register_weight_prepack(pattern, pass_number):
    @register_freezing_graph_pattern(pattern, pass_number=pass_number)
    def prepack_weight(match, *args, **kwargs):
        return None


@register_lowering_pattern(pm.CallFunction(torch.ops.aten.relu, pm.Arg()), pass_dict=pass_patterns[1])
def lower_relu(match, x):
    return x


@pm.register_graph_pattern(pm.CallFunction(torch.ops.aten.gelu, pm.Arg()), pass_dict=acme_patterns)
def own_gelu(match, x):  # into the project's own pattern pass: that pass is reported instead
    return x


def _search(x):
    return x * 2


def _replace(x):
    return x + x


def register_doubling():
    pm.register_replacement(_search, _replace, [torch.empty(2)], pm.fwd_only, [pass_patterns[0]])
    pm.register_replacement(_search, _replace, [torch.empty(2)], pm.fwd_only, acme_patterns)


_register_weight_prepack(functools.partial(print), 1)
