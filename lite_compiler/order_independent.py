"""Reductions whose result does not depend on the order of their additions, seen in a graph's structure.

A fused kernel sums in another order than ATen's kernel (a Triton tree, a vector loop), so a sum in
a fusion group is in general not bitwise. One kind is: a sum whose input has, in every reduced
row, at most one element that is not +0.0. Adding +0.0 to a value returns that value exactly (and
+0.0 + -0.0 is +0.0), so every order of the additions, starting from 0, gives the same bits. The
gradient of a cross-entropy loss is such a tensor: ``nll_loss_backward`` writes one value per row
into zeros (lite_compiler.faithful_decompositions decomposes it as ``where(one-hot, value, 0)``),
and ``_log_softmax_backward_data`` sums that gradient over the same rows.

This module establishes the property from the producers' structure, never from a name or from
values: a small abstract interpretation over a decomposed graph, with facts per node

- ``distinct``: dims along which the values are pairwise distinct (``iota``, ``arange``);
- ``sparse``: dims along which each row holds at most one element that is not +0.0 (or, for a
  bool, at most one True);
- ``zero``: every element is +0.0 (or False);

and rules: a zero fill; ``eq(a, b)`` with ``a`` distinct along d and ``b`` of size 1 there (each
row meets b's one value at most once); ``logical_and``/``bitwise_and`` keep either side's sparse
dims; ``where(c, x, zero)`` keeps c's; views that add dims of size 1 shift them; a dtype
conversion keeps them. Anything else knows nothing (fail closed). A sum over one dim along which
its input is sparse (or whose input is zero) is order-independent; any other reduction in a
fusion group's graph is reported, and the group stays ATen (lite_compiler.fusion_regions).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx

aten = torch.ops.aten
prims = torch.ops.prims


@dataclass(frozen=True)
class Facts:
    distinct: frozenset[int] = field(default_factory=frozenset)
    sparse: frozenset[int] = field(default_factory=frozenset)
    zero: bool = False


NOTHING = Facts()


def _shape(node: Any) -> tuple[int, ...] | None:
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return tuple(val.shape) if isinstance(val, torch.Tensor) else None


def _aligned(facts: Facts, shape: tuple[int, ...], out: tuple[int, ...], which: str) -> set[int]:
    """``facts``' dims of kind ``which`` as dims of the broadcast output (right-aligned), kept only
    where the operand is not broadcast along them (its size there is the output's)."""
    offset = len(out) - len(shape)
    return {d + offset for d in getattr(facts, which) if shape[d] == out[d + offset]}


def _size_one(shape: tuple[int, ...], out: tuple[int, ...]) -> set[int]:
    """Output dims along which an operand of ``shape`` is one value (broadcast or missing)."""
    offset = len(out) - len(shape)
    return {d for d in range(len(out)) if d < offset or shape[d - offset] == 1}


def _is_zero_constant(node: torch.fx.Node) -> bool:
    """A fill with +0.0 (or False / 0): ``full``, ``zeros``, ``scalar_tensor``, ``new_zeros``."""
    target, args = node.target, node.args
    if target in (aten.full.default, aten.new_full.default, aten.full_like.default):
        value = args[-1] if target is not aten.full_like.default else args[1]
    elif target in (aten.zeros.default, aten.new_zeros.default, aten.zeros_like.default):
        value = 0
    elif target is aten.scalar_tensor.default:
        value = args[0]
    else:
        return False
    return isinstance(value, (int, float, bool)) and value == 0 and not str(float(value)).startswith("-")


def facts(node: torch.fx.Node, known: dict[torch.fx.Node, Facts]) -> Facts:
    """What ``node``'s structure says about its value, given its inputs' facts."""
    if node.op != "call_function":
        return NOTHING
    target, args = node.target, node.args
    out = _shape(node)
    if out is None:
        return NOTHING
    if _is_zero_constant(node):
        return Facts(zero=True, sparse=frozenset(range(len(out))))
    if target is prims.iota.default and args and args[0] > 0 and node.kwargs.get("step", 1) != 0:
        return Facts(distinct=frozenset({0}))
    if target in (aten.arange.default, aten.arange.start, aten.arange.start_step):
        step = args[2] if target is aten.arange.start_step and len(args) > 2 else 1
        return Facts(distinct=frozenset({0})) if step != 0 else NOTHING
    ins = [a for a in args if isinstance(a, torch.fx.Node)]
    if target is aten.unsqueeze.default:
        src, dim = known.get(args[0], NOTHING), args[1] % len(out)
        shift = lambda dims: frozenset(d + (d >= dim) for d in dims)  # noqa: E731
        return Facts(shift(src.distinct), shift(src.sparse), src.zero)
    if target in (prims.convert_element_type.default, aten._to_copy.default, aten.clone.default,
                  aten.alias.default, aten.detach.default):
        src = known.get(args[0], NOTHING)
        return Facts(frozenset(), src.sparse, src.zero)  # (a conversion may merge distinct values)
    if target in (aten.eq.Tensor,) and len(ins) == 2:
        (a, b), shapes = ins, (_shape(ins[0]), _shape(ins[1]))
        if None in shapes:
            return NOTHING
        sparse = set()
        for (x, sx), (_, sy) in (((a, shapes[0]), (b, shapes[1])), ((b, shapes[1]), (a, shapes[0]))):
            sparse |= _aligned(known.get(x, NOTHING), sx, out, "distinct") & _size_one(sy, out)
        return Facts(sparse=frozenset(sparse))
    if target in (aten.logical_and.default, aten.bitwise_and.Tensor) and len(ins) == 2:
        sparse = set()
        for x in ins:
            shape = _shape(x)
            if shape is not None:
                sparse |= _aligned(known.get(x, NOTHING), shape, out, "sparse")
        return Facts(sparse=frozenset(sparse))
    if target is aten.where.self and len(ins) == 3:
        cond, _, other = ins
        if known.get(other, NOTHING).zero and _shape(cond) is not None:
            return Facts(sparse=frozenset(_aligned(known.get(cond, NOTHING), _shape(cond), out, "sparse")))
    return NOTHING


def _summed_dims(node: torch.fx.Node) -> list[int] | None:
    """The dims ``aten.sum.dim_IntList`` reduces (None: another reduction, or all dims)."""
    if node.target is not aten.sum.dim_IntList or len(node.args) < 2 or node.kwargs.get("dtype"):
        return None
    src = _shape(node.args[0])
    dims = node.args[1]
    if src is None or not dims:
        return None
    return sorted({d % len(src) for d in dims})


def is_reduction(node: torch.fx.Node) -> bool:
    target = node.target
    return node.op == "call_function" and isinstance(target, torch._ops.OpOverload) \
        and torch.Tag.reduction in target.tags


def order_dependent(gm: torch.fx.GraphModule, inputs: dict[int, Facts] | None = None) -> list[str]:
    """Every reduction of ``gm`` whose result could depend on the order of its additions, one line
    each (empty: every reduction is a sum over one dim along which its input is sparse, or of
    zeros). ``inputs``: facts known about placeholders, by position."""
    return analyse(gm, inputs)[0]


def analyse(gm: torch.fx.GraphModule, inputs: dict[int, Facts] | None = None
            ) -> tuple[list[str], list[Facts]]:
    """order_dependent's lines, and the facts of each output of ``gm``."""
    known: dict[torch.fx.Node, Facts] = {}
    problems = []
    for i, node in enumerate(gm.graph.find_nodes(op="placeholder")):
        known[node] = (inputs or {}).get(i, NOTHING)
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        if is_reduction(node):
            dims = _summed_dims(node)
            src = known.get(node.args[0], NOTHING) if node.args else NOTHING
            if src.zero:
                known[node] = Facts(zero=True)
                continue
            if dims is None or len(dims) != 1 or dims[0] not in src.sparse:
                problems.append(
                    f"{node.target}({node.name}) over dims {dims}: its input is not shown, by its"
                    " producers' structure, to hold at most one element that is not +0.0 per"
                    " reduced row, so the fused kernel could add in another order than ATen")
            known[node] = NOTHING
            continue
        known[node] = facts(node, known)
    (output,) = gm.graph.find_nodes(op="output")
    outs = output.args[0] if isinstance(output.args[0], (list, tuple)) else [output.args[0]]
    return problems, [known.get(o, NOTHING) if isinstance(o, torch.fx.Node) else NOTHING for o in outs]


__all__ = ["Facts", "analyse", "facts", "is_reduction", "order_dependent"]
