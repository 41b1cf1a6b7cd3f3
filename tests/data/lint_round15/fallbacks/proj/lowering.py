"""Fallbacks registered in Inductor's lowering table: of a custom op alone, what Inductor does by
itself; with a layout constraint, or of a builtin op, a change."""
import torch
from torch._inductor.lowering import make_fallback, require_contiguous


def register():
    make_fallback(torch.ops.mylib.fused_conv)
    make_fallback(torch.ops.mylib.fused_conv_backward, warn=False)
    make_fallback(torch.ops.mylib.packed_linear, layout_constraint=require_contiguous)
    make_fallback(torch.ops.aten.cummax)
