"""Bit-for-bit comparison of results: floats as integers, so NaN payloads and -0 count."""

from __future__ import annotations

from typing import Any

import torch


def bits(t: torch.Tensor) -> torch.Tensor:
    if t.dtype.is_floating_point or t.dtype.is_complex:
        ints = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
        return t.contiguous().view(ints)
    return t


def difference(want: Any, got: Any, check_strides: bool) -> str | None:
    """How ``got`` differs from ``want`` (ATen's) in dtype, shape, strides or bits; None if not."""
    if isinstance(want, (list, tuple)):
        if not isinstance(got, (list, tuple)) or len(want) != len(got):
            return f"{len(want)} outputs expected, got {got!r:.60}"
        for i, (w, g) in enumerate(zip(want, got)):
            why = difference(w, g, check_strides)
            if why is not None:
                return f"output {i}: {why}"
        return None
    if not isinstance(want, torch.Tensor):
        return None if want == got else f"{got!r} instead of {want!r}"
    if not isinstance(got, torch.Tensor):
        return f"{type(got).__name__} instead of a tensor"
    if want.dtype != got.dtype:
        return f"dtype {got.dtype} instead of {want.dtype}"
    if want.shape != got.shape:
        return f"shape {tuple(got.shape)} instead of {tuple(want.shape)}"
    if check_strides and _strides(want) != _strides(got):
        return f"strides {got.stride()} instead of {want.stride()}"
    a, b = bits(want), bits(got)
    if torch.equal(a, b):
        return None
    wrong = (a != b).view(-1)
    first = int(wrong.nonzero()[0])
    return (f"{int(wrong.sum())} of {wrong.numel()} elements differ in bits (first at flat index"
            f" {first}: ATen {_show(want, first)}, Inductor {_show(got, first)})")


def _strides(t: torch.Tensor) -> tuple[int, ...]:
    """Strides that matter: a dim of size 1 is never stepped over."""
    return tuple(s for s, d in zip(t.stride(), t.shape) if d > 1)


def _show(t: torch.Tensor, i: int) -> str:
    value = t.contiguous().view(-1)[i]
    if t.dtype.is_floating_point:
        raw = int(bits(value.reshape(1))[0]) & ((1 << (8 * t.element_size())) - 1)
        return f"{value.item()!r} (0x{raw:0{2 * t.element_size()}x})"
    return repr(value.item())
