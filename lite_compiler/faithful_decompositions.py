"""Decompositions that follow ATen's own CUDA kernels, for fusion groups only.

Inductor's decomposition of an op computes the same math as ATen's kernel, not always with the
same roundings. Where ATen's functor is known, a fusion group (and the signature check that
judges it: both go through lite_compiler.fusion_regions.FusionHooks.decompose) is decomposed
the way the functor computes instead. Nothing here is trusted: the signature check enumerates
the op as for any other, and a decomposition that is not bitwise leaves the op ATen.

- ``silu_backward`` (aten/src/ATen/native/cuda/ActivationSiluKernel.cu), in opmath (float for
  bf16 and fp16): ``s = 1 / (1 + exp(-x)); dy * s * (1 + x * (1 - s))``; nvcc contracts
  ``1 + x * (1 - s)`` into ``fma(x, 1 - s, 1)``. torch's decomposition takes ``sigmoid`` (in
  Triton, an approximate division) and rounds ``x * (1 - s)`` before the add: on the H200 that
  was 1 ulp on 506 of the 2^32 bf16 pairs. Here the division is a division (rounded as ATen's
  with ``eager_numerics.division_rounding``) and the fma is Inductor's ``addcmul`` lowering
  (``fma(t1, t2, self)`` on CUDA). Some torch versions (2.11) keep a mul-then-add decomposition
  of ``addcmul`` in Inductor's table unless ``emulate_precision_casts`` is on when the table is
  read, which would undo the fma before Inductor sees it: the table of a CUDA group drops every
  decomposition of the ops the faithful ones rely on (KEEP_FOR_LOWERING).
- ``relu`` (ATen: ``clamp_min(x, 0)``; its CUDA functor returns a NaN as it is, else
  ``max(x, 0)``, which makes -0.0 +0.0): Inductor's ``maximum(0, x)`` keeps -0.0 (on the H200:
  bf16 relu in resnet18 was not bitwise). Here: ``where(x != x, x, where(x > 0, x, 0))``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

aten = torch.ops.aten


def _opmath(dtype: torch.dtype) -> torch.dtype:
    return torch.float32 if dtype in (torch.bfloat16, torch.float16) else dtype


def _silu_backward(grad_output: torch.Tensor, self: torch.Tensor) -> torch.Tensor:
    opmath = _opmath(grad_output.dtype)
    dy, x = grad_output.to(opmath), self.to(opmath)
    one = torch.ones_like(x)
    s = torch.div(one, one + torch.exp(-x))
    return (dy * s * torch.addcmul(one, x, one - s)).to(grad_output.dtype)


def _relu(self: torch.Tensor) -> torch.Tensor:
    zero = torch.zeros_like(self)
    return torch.where(self != self, self, torch.where(self > zero, self, zero))


# Per device type: op overload -> a decomposition following that device's ATen kernel.
FAITHFUL: dict[str, dict[Any, Callable[..., Any]]] = {
    "cuda": {aten.silu_backward.default: _silu_backward, aten.relu.default: _relu},
}
# Per device type: op packets the faithful decompositions emit and Inductor must lower as they are
# (its addcmul lowering is the fma); the base table's decompositions of them are dropped.
KEEP_FOR_LOWERING: dict[str, tuple[Any, ...]] = {"cuda": (aten.addcmul,)}


def decomposition_table(base: dict[Any, Callable[..., Any]], device_types: set[str]
                        ) -> dict[Any, Callable[..., Any]]:
    """``base`` (Inductor's table) with the faithful decompositions of the one device type the
    group runs on; unchanged for several or none."""
    if len(device_types) != 1:
        return base
    device = next(iter(device_types))
    extra = FAITHFUL.get(device, {})
    if not extra:
        return base
    keep = KEEP_FOR_LOWERING.get(device, ())
    kept = {op: fn for op, fn in base.items() if getattr(op, "overloadpacket", op) not in keep}
    return {**kept, **extra}


__all__ = ["FAITHFUL", "KEEP_FOR_LOWERING", "decomposition_table"]
