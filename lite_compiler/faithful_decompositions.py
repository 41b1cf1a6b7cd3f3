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
- ``nll_loss_backward`` (Loss.cu ``nll_loss_backward_reduce_cuda_kernel_2d``, LossNLL.cpp on CPU),
  reductions mean and sum, fp32 and fp64: ATen zero-fills ``[N, C]`` and writes one value per row,
  ``grad = -(grad_output / total_weight)`` (mean) or ``-grad_output`` (sum), times ``weight[t]``
  when given, at column ``t = target[i]`` unless ``t == ignore_index``. Here, without a scatter:
  ``where((arange(C) == t) & (t != ignore_index), [weight *] grad, 0)``, with ``-x`` as ATen's
  unary minus computes it (a flip of the sign bit, a NaN made canonical; Triton's is ``0 - x``,
  which makes +0.0 of +0.0). The result
  has at most one element per row that is not +0.0, and lite_compiler.order_independent sees that
  in this structure. torch's decomposition (a scatter of -1.0, then a multiply) makes ``0 * g``
  everywhere else, NaN where ``g`` is infinite.
- ``_log_softmax_backward_data`` (SoftMax.cu ``LogSoftMaxBackwardEpilogue``): ``sum`` = the row
  sum of the gradient (fp32 accumulation), then ``gradOutput - exp(output) * sum``, which nvcc
  contracts into ``fma(-exp(output), sum, gradOutput)``. Here the same, as Inductor's ``addcmul``
  lowering (``fma(t1, t2, self)`` with value 1) of ``-exp(output)`` (a sign flip). On CPU ATen's
  vectorized loop computes ``g - exp(o) * sum`` without an fma: so does the CPU decomposition. The
  row sum is only bitwise when it does not depend on the order of its additions: a fusion group
  holding it is compiled only when lite_compiler.order_independent shows that from the structure
  of the group's graph (its gradient comes from a ``nll_loss_backward`` decomposed as above).
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


class Unfaithful(Exception):
    """This call of an op has no decomposition here that follows its ATen kernel (the op stays
    ATen; the message says why)."""


_SIGN_BIT = {torch.float32: (torch.int32, -(1 << 31)), torch.float64: (torch.int64, -(1 << 63)),
             torch.bfloat16: (torch.int16, -(1 << 15)), torch.float16: (torch.int16, -(1 << 15))}
# ATen's CUDA arithmetic writes this NaN for any NaN it computes (measured on the H200: fp32
# mul(x, 1.0) and neg gave 0x7fffffff; bf16 0x7fff), where a compiler folds x * 1.0 into x or
# -x into a sign flip that keeps the payload.
_CANONICAL_NAN = {torch.float32: (torch.int32, 0x7FFFFFFF), torch.bfloat16: (torch.int16, 0x7FFF),
                  torch.float16: (torch.int16, 0x7FFF), torch.float64: (torch.int64, 0x7FFFFFFFFFFFFFFF)}


def _canonical_nan(x: torch.Tensor) -> torch.Tensor:
    ints, nan = _CANONICAL_NAN[x.dtype]
    return torch.full((), nan, dtype=ints, device=x.device).view(x.dtype)


def _negate(x: torch.Tensor, canonical: bool = True) -> torch.Tensor:
    """ATen's unary minus: a flip of the sign bit (-0.0 of +0.0); on CUDA a NaN made canonical
    (the H200: fp32 neg of 0x7fc00000 gave 0x7fffffff, bf16 neg of 0x7f81 gave 0x7fff), on a CPU
    (``canonical=False``) the NaN's sign flipped with the rest."""
    ints, sign = _SIGN_BIT[x.dtype]
    flipped = torch.bitwise_xor(x.view(ints), sign).view(x.dtype)
    return torch.where(x != x, _canonical_nan(x), flipped) if canonical else flipped


_WIDE = (torch.float32, torch.float64)  # the loss tail's dtypes decomposed here


def _nll_loss_backward(canonical: bool) -> Callable[..., Any]:
    def decomposition(grad_output: torch.Tensor, self: torch.Tensor, target: torch.Tensor,
                      weight: torch.Tensor | None, reduction: int, ignore_index: int,
                      total_weight: torch.Tensor) -> torch.Tensor:
        return _nll_loss_backward_2d(grad_output, self, target, weight, reduction, ignore_index,
                                     total_weight, canonical)
    return decomposition


def _nll_loss_backward_2d(grad_output: torch.Tensor, self: torch.Tensor, target: torch.Tensor,
                          weight: torch.Tensor | None, reduction: int, ignore_index: int,
                          total_weight: torch.Tensor, canonical: bool) -> torch.Tensor:
    if self.dim() != 2 or target.dim() != 1 or reduction not in (1, 2):
        raise Unfaithful("only [N, C] inputs with reduction mean or sum follow ATen's reduce kernel")
    if self.dtype not in _WIDE or grad_output.dtype != self.dtype \
            or (weight is not None and weight.dtype != self.dtype):
        raise Unfaithful(f"{self.dtype}: ATen computes its value in that dtype's arithmetic; only"
                         " float32 and float64 are decomposed")
    grad = grad_output / total_weight if reduction == 1 else grad_output
    grad = _negate(grad, canonical)
    column = torch.arange(self.shape[1], device=self.device, dtype=target.dtype).unsqueeze(0)
    rows = target.unsqueeze(1)
    hit = torch.logical_and(column == rows, rows != ignore_index)
    value = grad if weight is None else weight.unsqueeze(0) * grad
    return torch.where(hit, value, torch.zeros((), dtype=self.dtype, device=self.device))


def _neg(self: torch.Tensor) -> Any:
    """ATen's ``-a`` (fp32 ``neg.f32``; bf16/fp16 ``-float(a)`` converted back): a sign flip, a
    NaN made canonical. Triton's unary minus is ``0 - x`` (+0.0 of +0.0), and ``float(x) * -1.0``
    converted back became a bf16 sign flip that kept the payload (H200). Other dtypes: Inductor's."""
    if self.dtype in _SIGN_BIT:
        return _negate(self)
    return NotImplemented


def _mul(self: Any, other: Any) -> Any:
    """``x * 1`` as ATen's CUDA kernel computes it at run time: ``x`` itself (no flush of
    subnormals), a NaN made canonical. LLVM folds ``x * 1.0`` into ``x`` and keeps the NaN's
    payload, so the product is spelled out: ``where(x != x, canonical NaN, x)``. Any other
    multiply: Inductor's own."""
    if not (isinstance(self, torch.Tensor) and isinstance(other, (int, float))
            and not isinstance(other, bool) and other == 1 and self.dtype in _CANONICAL_NAN):
        return NotImplemented
    return torch.where(self != self, _canonical_nan(self), self)


def _log_softmax_backward(fma: bool) -> Callable[..., Any]:
    def decomposition(grad_output: torch.Tensor, output: torch.Tensor, dim: int,
                      input_dtype: torch.dtype) -> torch.Tensor:
        if not (grad_output.dtype == output.dtype == input_dtype) or input_dtype not in _WIDE:
            raise Unfaithful("only float32 and float64 with one dtype throughout are decomposed")
        total = torch.sum(grad_output, dim, keepdim=True)
        if fma:  # nvcc: fma(-exp(output), sum, gradOutput)
            # (-exp: a sign flip; a NaN's payload does not matter, the fma makes any NaN canonical)
            return torch.addcmul(grad_output, _negate(torch.exp(output), canonical=False), total)
        return grad_output - torch.exp(output) * total
    return decomposition


# Per device type: op overload -> a decomposition following that device's ATen kernel.
FAITHFUL: dict[str, dict[Any, Callable[..., Any]]] = {
    "cuda": {aten.silu_backward.default: _silu_backward, aten.relu.default: _relu,
             aten.nll_loss_backward.default: _nll_loss_backward(canonical=True),
             aten._log_softmax_backward_data.default: _log_softmax_backward(fma=True),
             aten.neg.default: _neg, aten.mul.Tensor: _mul},
    "cpu": {aten.nll_loss_backward.default: _nll_loss_backward(canonical=False),
            aten._log_softmax_backward_data.default: _log_softmax_backward(fma=False)},
}
# Ops that no tag marks pointwise and that join fusion groups only through the decomposition
# here (lite_compiler.bitwise_fusion's "faithful" kind): each is judged by the pieces of its
# decomposition, and its reductions by lite_compiler.order_independent.
COMPOSITE: frozenset[Any] = frozenset({aten.nll_loss_backward.default,
                                       aten._log_softmax_backward_data.default})
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


def faithful(target: Any, device_type: str) -> Callable[..., Any] | None:
    """The decomposition following ``target``'s ATen kernel on that device type, if any."""
    return FAITHFUL.get(device_type, {}).get(target)


__all__ = ["COMPOSITE", "FAITHFUL", "KEEP_FOR_LOWERING", "Unfaithful", "decomposition_table",
           "faithful"]
