"""Which ops only move bits: views by their schema, copies, fills and scatters by a probe.

Bitwise fusion (lite_compiler.bitwise_fusion) fuses pointwise ops (torch.Tag.pointwise) and, since
they compute no bits, the ops between them that only move data: a view, a clone, a slice's
backward (a zero fill and a copy), a cat, a constant fill. They are recognised by structure and by
effect, never by name:

- a **view**: the schema returns an alias of an input (``Tensor(a)``, not written): the output is
  the input's memory, indexed differently;
- a **mover**: any other deterministic ATen op (the probe runs it: never a collective or a
  custom op) with one fresh tensor return whose tensor inputs all
  have the output's dtype, and whose output, on a probe run at the node's real shapes and strides,
  holds only copies of input elements or constants its arguments give (or 0 and 1, for zeros and
  ones), always from the same places: its inputs are filled with random distinct codes twice,
  in two draws, and the source of every output element must be the same in both. An op that
  computes (a sum, a mean, a product) makes values that are no code; one that picks elements by
  their values (a max, a sort) picks other places in the second draw.

A mover still is no proof of bitwise equality: Inductor might convert the bits it moves (a bf16
NaN's payload through float). lite_compiler.bitwise_check runs every mover signature at its real
shapes on bit patterns and compares bit for bit; each group is checked again on its first call.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.fx

# Probe runs above this many elements (inputs and output together) are not made: not a mover.
PROBE_LIMIT = 1 << 26
_PROBES: dict[tuple[Any, ...], bool] = {}


def tensor_args(node: torch.fx.Node) -> list[torch.fx.Node]:
    """The tensor arguments of ``node``, in order, lists (a cat's inputs) flattened."""
    out: list[torch.fx.Node] = []
    for arg in (*node.args, *node.kwargs.values()):
        for item in (arg if isinstance(arg, (list, tuple)) else (arg,)):
            if isinstance(item, torch.fx.Node):
                out.append(item)
    return out


def _aten(target: object) -> bool:
    """An ATen op: the probe runs the op (a collective or a custom op might act beyond its
    result, so only ATen's own, whose schemas say what they touch)."""
    return isinstance(target, torch._ops.OpOverload) and target.namespace == "aten"


def _one_fresh_tensor(target: torch._ops.OpOverload) -> bool:
    schema = target._schema
    return (len(schema.returns) == 1 and isinstance(schema.returns[0].type, torch.TensorType)
            and not schema.is_mutable and torch.Tag.nondeterministic_seeded not in target.tags)


def is_view(node: torch.fx.Node) -> bool:
    """An ATen view: its one return aliases an input and is not written (``Tensor(a)``)."""
    target = node.target
    if node.op != "call_function" or not _aten(target):
        return False
    schema = target._schema
    if len(schema.returns) != 1 or schema.is_mutable:
        return False
    alias = schema.returns[0].alias_info
    return alias is not None and not alias.is_write and isinstance(schema.returns[0].type, torch.TensorType)


def is_mover(node: torch.fx.Node) -> bool:
    """Whether ``node`` only copies input elements and constants into a fresh tensor (the probe)."""
    target = node.target
    if node.op != "call_function" or not _aten(target):
        return False
    if not _one_fresh_tensor(target) or target._schema.returns[0].alias_info is not None:
        return False
    if torch.Tag.reduction in target.tags:  # (a max picks an input element: not a move)
        return False
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor) or val.dtype in (torch.bool,) or val.is_complex():
        return False
    # Integer codes may be read as indices (index, gather, index_select on int64 tensors); off the
    # CPU an out-of-range index is a device-side assert that poisons the whole process, so integer
    # ops are never probed there (seen on the H200: llama's label ops).
    if not val.dtype.is_floating_point and val.device.type != "cpu":
        return False
    inputs = tensor_args(node)
    vals = [i.meta.get("val") for i in inputs]
    if any(not isinstance(v, torch.Tensor) or v.dtype != val.dtype or v.device != val.device
           for v in vals):
        return False
    sizes = [val.numel(), *(v.numel() for v in vals)]
    if sum(sizes) > PROBE_LIMIT or not all(_static(v) for v in (val, *vals)):
        return False
    key = (str(target), str(val.dtype), val.device.type,
           tuple((tuple(v.shape), v.stride(), v.storage_offset()) for v in vals), _constants_key(node))
    if key not in _PROBES:
        _PROBES[key] = _probe(node, val, vals)
    return _PROBES[key]


def _static(t: torch.Tensor) -> bool:
    return all(isinstance(d, int) for d in (*t.shape, *t.stride(), t.storage_offset()))


def _constants_key(node: torch.fx.Node) -> str:
    def text(arg: Any) -> Any:
        if isinstance(arg, torch.fx.Node):
            return "T"
        if isinstance(arg, (list, tuple)):
            return [text(a) for a in arg]
        return repr(arg)
    return repr((text(node.args), sorted((k, text(v)) for k, v in node.kwargs.items())))


def _probe(node: torch.fx.Node, val: torch.Tensor, vals: list[torch.Tensor]) -> bool:
    """A cheap first run on one code per input (a matmul, a sum fail here), then two runs on
    distinct random codes: every output element a code or a constant, from the same place in
    both runs. On the node's device; one host sync per run."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    wide = torch.float64 if val.dtype.is_floating_point else torch.int64
    device = val.device
    constants = [0, 1] + [a for a in (*node.args, *node.kwargs.values())
                          if isinstance(a, (int, float)) and not isinstance(a, bool)]
    spans = [_span(v) for v in vals]
    total = sum(spans)
    try:
        with unset_fake_temporarily(), torch.no_grad():
            gen = torch.Generator(device=device).manual_seed(0)
            # One code per input, 2**41 + k * 2**20: a sum or a product of them is none.
            single = torch.tensor([(1 << 41) + (k << 20) for k in range(len(vals))], dtype=wide,
                                  device=device)
            inputs = [single[k].expand(max(span, 1)).clone().as_strided(
                tuple(v.shape), v.stride(), v.storage_offset()) for k, (v, span) in enumerate(zip(vals, spans))]
            if _sources(_output(node, inputs, wide, val), single, constants) is None:
                return False
            sources = []
            for _ in range(2):
                # Distinct codes, random in order and in their low bits, exact in float64 (below
                # 2**53): a sum, a mean or a product of codes is almost never a code, and never
                # the same one in both draws.
                codes = ((1 << 41) + torch.randperm(total, generator=gen, device=device) * 1024
                         + torch.randint(0, 1024, (total,), generator=gen, device=device)).to(wide)
                inputs, at = [], 0
                for v, span in zip(vals, spans):
                    inputs.append(codes[at:at + span].as_strided(
                        tuple(v.shape), v.stride(), v.storage_offset()))
                    at += span
                found = _sources(_output(node, inputs, wide, val), codes, constants)
                if found is None:
                    return False
                sources.append(found)
            return bool(torch.equal(sources[0], sources[1]))
    except Exception:  # noqa: BLE001 - an op the probe cannot run is not a mover (fail closed)
        return False


def _output(node: torch.fx.Node, inputs: list[torch.Tensor], wide: torch.dtype,
            val: torch.Tensor) -> torch.Tensor | None:
    """The op's flat output in the probe's dtype, or None when it is not one such tensor."""
    out = _run(node, inputs, wide, val.device)
    if not isinstance(out, torch.Tensor) or out.dtype != wide or tuple(out.shape) != tuple(val.shape):
        return None
    return out.reshape(-1)


def _sources(out: torch.Tensor | None, codes: torch.Tensor, constants: list[Any]) -> torch.Tensor | None:
    """Per output element: the index of its code among the inputs' codes, or -1 - k for the k-th
    constant (compared exactly, in the probe's dtype); None when some element is neither."""
    if out is None:
        return None
    missing = -(1 << 62)
    src = torch.full(out.shape, missing, dtype=torch.int64, device=out.device)
    if codes.numel():
        order = codes.argsort()
        ranked = codes[order]
        where = torch.searchsorted(ranked, out).clamp(max=ranked.numel() - 1)
        src = torch.where(ranked[where] == out, order[where], src)
    for k, value in enumerate(constants):
        src = torch.where((src == missing) & (out == value), torch.full_like(src, -1 - k), src)
    return None if bool((src == missing).any()) else src


def _span(v: torch.Tensor) -> int:
    """Elements of the storage a view reaches (the codes behind an expanded input repeat)."""
    if v.numel() == 0:
        return 0
    return v.storage_offset() + 1 + sum((d - 1) * s for d, s in zip(v.shape, v.stride()))


def _run(node: torch.fx.Node, inputs: list[torch.Tensor], wide: torch.dtype, device: torch.device) -> Any:
    it = iter(inputs)

    def put(arg: Any) -> Any:
        if isinstance(arg, torch.fx.Node):
            return next(it)
        if isinstance(arg, (list, tuple)) and any(isinstance(a, torch.fx.Node) for a in arg):
            return type(arg)(put(a) for a in arg)
        return arg

    args = [put(a) for a in node.args]
    kwargs = {k: put(v) for k, v in node.kwargs.items()}
    names = {a.name for a in node.target._schema.arguments if a.kwarg_only}
    if "dtype" in names:
        kwargs["dtype"] = wide  # a factory (full, new_zeros): made in the probe's dtype
    if "device" in kwargs and kwargs["device"] is not None:
        kwargs["device"] = device
    return node.target(*args, **kwargs)


__all__ = ["PROBE_LIMIT", "is_mover", "is_view", "tensor_args"]
