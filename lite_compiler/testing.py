"""Test helpers for users' own suites: is lite mode bitwise equal to aot_eager on my code?

    from lite_compiler.testing import assert_bitwise_equal
    assert_bitwise_equal(model, x, backward=True)
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import torch

from lite_compiler.fuzz.runner import bitwise_equal


class BitwiseMismatch(AssertionError):
    """Lite mode and the reference backend disagree bit for bit."""


def run_compiled(fn: Callable[..., Any], args: tuple, backend: str, backward: bool,
                 dynamic: bool | None, seed: int) -> list[tuple[str, torch.Tensor]]:
    """Named results of one compiled run on private copies: outputs, then gradients."""
    fn = copy.deepcopy(fn) if isinstance(fn, torch.nn.Module) else fn
    args = tuple(a.detach().clone().requires_grad_(a.requires_grad)
                 if isinstance(a, torch.Tensor) else a for a in args)
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=backend, dynamic=dynamic)
    torch.manual_seed(seed)
    outputs = compiled(*args)
    flat = [o for o in torch.utils._pytree.tree_leaves(outputs) if isinstance(o, torch.Tensor)]
    named = [(f"output[{i}]", o.detach()) for i, o in enumerate(flat)]
    if backward:
        differentiable = [o for o in flat if o.requires_grad]
        if not differentiable:
            raise ValueError("backward=True but no output requires grad; pass backward=False")
        generator = torch.Generator().manual_seed(seed + 1)
        torch.autograd.backward(
            differentiable, [torch.randn(o.shape, generator=generator).to(o) for o in differentiable])
        named += [(f"grad of arg {i}", a.grad) for i, a in enumerate(args)
                  if isinstance(a, torch.Tensor) and a.grad is not None]
        if isinstance(fn, torch.nn.Module):
            named += [(f"grad of {n}", p.grad) for n, p in fn.named_parameters() if p.grad is not None]
    return named


def assert_bitwise_equal(fn: Callable[..., Any], *args: Any, backward: bool = True,
                         dynamic: bool | None = False, backend: str = "lite",
                         reference: str = "aot_eager", seed: int = 0) -> None:
    """Compile ``fn`` (function or module) with ``backend`` and ``reference``; outputs and, with
    ``backward``, gradients of every tensor argument and parameter must agree bit for bit."""
    import lite_compiler  # noqa: F401  (registers backend="lite")

    expected = run_compiled(fn, args, reference, backward, dynamic, seed)
    actual = run_compiled(fn, args, backend, backward, dynamic, seed)
    if [n for n, _ in expected] != [n for n, _ in actual]:
        raise BitwiseMismatch(f"{backend} produced {[n for n, _ in actual]},"
                              f" {reference} produced {[n for n, _ in expected]}")
    for (name, want), (_, got) in zip(expected, actual):
        if not bitwise_equal(want, got):
            diff = (want.float() - got.float()).abs().max().item() if want.shape == got.shape else "shape"
            raise BitwiseMismatch(f"{name} differs between {backend} and {reference}"
                                  f" (max abs diff {diff}); run `lite_guard fuzz` or"
                                  " `lite_guard trace` to find the pass responsible")


# Schemas of torchvision's C++ operators (torchvision/csrc/ops/*.cpp, 0.2x). PyPI's torchvision
# wheel is built against CUDA torch; next to a CPU torch its extension does not load and importing
# torchvision (or transformers, which imports it) fails with "operator torchvision::nms does not
# exist" while registering fake kernels. The models are pure Python: the schemas are enough.
_TORCHVISION_SCHEMAS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "box_iou_rotated(Tensor boxes1, Tensor boxes2) -> Tensor",
    "roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height,"
    " SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor",
    "_roi_align_backward(Tensor grad, Tensor rois, float spatial_scale, SymInt pooled_height,"
    " SymInt pooled_width, SymInt batch_size, SymInt channels, SymInt height, SymInt width,"
    " int sampling_ratio, bool aligned) -> Tensor",
    "qroi_align(Tensor input, Tensor rois, float input_scale, int input_zero_point, float rois_scale,"
    " int rois_zero_point, float spatial_scale, SymInt pooled_height, SymInt pooled_width,"
    " int sampling_ratio, bool aligned) -> Tensor",
    "ps_roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height,"
    " SymInt pooled_width, int sampling_ratio) -> (Tensor, Tensor)",
    "_ps_roi_align_backward(Tensor grad, Tensor rois, Tensor channel_mapping, float spatial_scale,"
    " SymInt pooled_height, SymInt pooled_width, int sampling_ratio, SymInt batch_size,"
    " SymInt channels, SymInt height, SymInt width) -> Tensor",
    "roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height,"
    " SymInt pooled_width) -> (Tensor, Tensor)",
    "_roi_pool_backward(Tensor grad, Tensor rois, Tensor argmax, float spatial_scale,"
    " SymInt pooled_height, SymInt pooled_width, SymInt batch_size, SymInt channels,"
    " SymInt height, SymInt width) -> Tensor",
    "ps_roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height,"
    " SymInt pooled_width) -> (Tensor, Tensor)",
    "_ps_roi_pool_backward(Tensor grad, Tensor rois, Tensor channel_mapping, float spatial_scale,"
    " SymInt pooled_height, SymInt pooled_width, SymInt batch_size, SymInt channels,"
    " SymInt height, SymInt width) -> Tensor",
    "deform_conv2d(Tensor input, Tensor weight, Tensor offset, Tensor mask, Tensor bias,"
    " SymInt stride_h, SymInt stride_w, SymInt pad_h, SymInt pad_w, SymInt dilation_h,"
    " SymInt dilation_w, SymInt groups, SymInt offset_groups, bool use_mask) -> Tensor",
    "_deform_conv2d_backward(Tensor grad, Tensor input, Tensor weight, Tensor offset, Tensor mask,"
    " Tensor bias, SymInt stride_h, SymInt stride_w, SymInt pad_h, SymInt pad_w,"
    " SymInt dilation_h, SymInt dilation_w, SymInt groups, SymInt offset_groups, bool use_mask)"
    " -> (Tensor, Tensor, Tensor, Tensor, Tensor)",
)
_TORCHVISION_LIBRARY: list[Any] = []


def ensure_torchvision_importable() -> str:
    """Make ``import torchvision`` work when its C extension cannot load against this torch.

    Returns "extension" (the real operators loaded), "schemas" (defined here: the operators exist
    but have no kernels, so detection ops raise if called) or "absent" (torchvision not installed).
    Call it before importing torchvision or transformers.
    """
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return "absent"
    if _TORCHVISION_LIBRARY or hasattr(torch.ops.torchvision, "nms"):
        return "schemas" if _TORCHVISION_LIBRARY else "extension"
    for location in spec.submodule_search_locations:
        for extension in Path(location).glob("_C*.so"):
            try:
                torch.ops.load_library(str(extension))
            except (OSError, RuntimeError):
                continue
            if hasattr(torch.ops.torchvision, "nms"):
                return "extension"
    library = torch.library.Library("torchvision", "DEF")  # noqa: TOR901 (kept alive below)
    for schema in _TORCHVISION_SCHEMAS:
        library.define(schema)
    _TORCHVISION_LIBRARY.append(library)
    return "schemas"
