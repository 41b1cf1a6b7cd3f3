"""Bitwise pointwise fusion outside regions: ``options={"bitwise_fusion": True}``.

Outside annotated regions lite mode runs aot_eager's ATen graph, one kernel per op. This pass
fuses connected pointwise ops into Inductor kernels only where it can show, by running them,
that the fused kernel computes the same bits as the ATen kernels; everything else stays ATen.

1. Candidates, by structure and effect (kind()): "pointwise" (``call_function`` nodes on ATen
   overloads tagged ``torch.Tag.pointwise``, or a dtype-only ``aten._to_copy``, a pointwise
   conversion torch does not tag because ``_to_copy`` also moves devices), "view" (an aliasing
   schema) and "mover" (copies, fills, cats, scatters: lite_compiler.data_movement's probe), never
   ``nondeterministic_seeded`` or mutable, outside every region, with static shapes and every
   tensor on one device.
2. Groups: maximal connected groups that stay convex (no path leaves a group and comes back;
   torch.fx's CapabilityBasedPartitioner, checked again here) and that scooping keeps whole
   (lite_compiler.scooping's order split), with at least two ops that run a kernel in ATen.
3. Proof by effect, fail closed: (a) each op signature is compiled and run on stress values
   next to ATen (lite_compiler.bitwise_check); a signature that differs in any bit is not a
   candidate. (b) each group, on its first real call, runs both the fused kernel and its ATen
   nodes on the real inputs; if any output differs in bits, dtype, shape or strides, the group
   runs its ATen nodes from then on, and the ledger says which output differed.
4. Each group becomes a region of its own id with the eager-numerics Inductor configs
   (FUSION_CONFIGS, allowed by the registry's region policy) and compiles through the region
   path, so the guard sees every Inductor pass, and the outer-graph effect check still holds
   everything outside the groups to AOTAutograd's graph.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

import torch
import torch.fx

from lite_compiler.annotate import ANNOTATION_KEY, region_annotation
from lite_compiler.bitwise_check import Verdict, check_signatures, describe, signature
from lite_compiler.data_movement import is_mover, is_view, tensor_args
from lite_compiler.faithful_decompositions import COMPOSITE, faithful
from lite_compiler.fusion_regions import FUSION_CONFIGS, OPTION, REGION_PREFIX, FusionHooks, VerifiedFusion
from lite_compiler.ledger import Ledger, LedgerEntry
from lite_compiler.scooping import _split_for_order, is_annotated


# ---- 1. candidates ------------------------------------------------------------------------------

def _static_tensor(val: Any) -> bool:
    return isinstance(val, torch.Tensor) and all(
        isinstance(d, int) for d in (*val.shape, *val.stride(), val.storage_offset()))


def _dtype_only_conversion(node: torch.fx.Node) -> bool:
    """``aten._to_copy(x, dtype=...)``: elementwise, but untagged since it may also move devices."""
    if node.target is not torch.ops.aten._to_copy.default or set(node.kwargs) - {"dtype", "layout", "device"}:
        return False
    (source,) = node.args if len(node.args) == 1 else (None,)
    src, out = getattr(source, "meta", {}).get("val"), node.meta.get("val")
    return (isinstance(src, torch.Tensor) and isinstance(out, torch.Tensor)
            and src.device == out.device and out.layout == torch.strided)


def kind(node: torch.fx.Node) -> str | None:
    """How ``node`` may join a fusion group, by its schema, tags and values (never its name):
    "pointwise" (tagged, or a dtype-only conversion), "view" (an aliasing schema), "mover" (only
    copies input elements and constants: lite_compiler.data_movement's probe), or None."""
    target = node.target
    if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload) or is_annotated(node):
        return None
    schema = target._schema
    if torch.Tag.nondeterministic_seeded in target.tags or schema.is_mutable or len(schema.returns) != 1:
        return None
    val = node.meta.get("val")
    if not _static_tensor(val) or val.numel() == 0:
        return None
    pointwise = schema.returns[0].alias_info is None and (
        torch.Tag.pointwise in target.tags or _dtype_only_conversion(node))
    composite = target in COMPOSITE and faithful(target, val.device.type) is not None
    if pointwise or composite:
        for arg in (*node.args, *node.kwargs.values()):
            if isinstance(arg, torch.fx.Node):
                arg_val = arg.meta.get("val")
                if not _static_tensor(arg_val) or arg_val.device != val.device:
                    return None
            elif isinstance(arg, (list, tuple, torch.Tensor)):
                return None  # tensor lists and tensor constants: not a plain elementwise argument
        return "pointwise" if pointwise else "faithful"
    # Data movement: every tensor argument (a cat's list too) static and on the output's device.
    if any(isinstance(a, torch.Tensor) for a in (*node.args, *node.kwargs.values())):
        return None
    for arg in tensor_args(node):
        arg_val = arg.meta.get("val")
        if not _static_tensor(arg_val) or arg_val.device != val.device:
            return None
    if is_view(node):
        return "view"
    return "mover" if is_mover(node) else None


def candidate(node: torch.fx.Node) -> bool:
    """Whether ``node`` may join a fusion group (kind(node) says how)."""
    return kind(node) is not None


# ---- 2. groups ----------------------------------------------------------------------------------

def convex(gm: torch.fx.GraphModule, members: set[torch.fx.Node], order: Mapping[torch.fx.Node, int]) -> bool:
    """No path leaves ``members`` and comes back (else one call for the group would wait on a node
    that waits on the group)."""
    last = max(order[n] for n in members)
    seen: set[torch.fx.Node] = set()
    todo = [u for n in members for u in n.users if u not in members]
    while todo:
        node = todo.pop()
        if node in seen or order[node] > last:
            continue
        seen.add(node)
        for user in node.users:
            if user in members:
                return False
            todo.append(user)
    return True


def find_groups(gm: torch.fx.GraphModule, fusible: set[torch.fx.Node]) -> list[list[torch.fx.Node]]:
    """Maximal connected convex groups of ``fusible`` nodes, as scooping will keep them, with at
    least two ops that run a kernel in ATen (a group must save one); an op that runs none (a
    view) whose users are all outside is left out."""
    if len(fusible) < 2:
        return []
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
    from torch.fx.passes.operator_support import create_op_support

    support = create_op_support(lambda _mods, node: node in fusible)
    partitioner = CapabilityBasedPartitioner(gm, support, allows_single_node_partition=False)
    order = {node: i for i, node in enumerate(gm.graph.nodes)}
    groups = []
    # The partitioner's partitions are cycle-free but may hold unconnected pieces; scooping cuts
    # a region where an outside node between its members uses an earlier one. Both cuts, until
    # nothing changes, give groups that scooping compiles whole. (A connected piece or an
    # order-interval of a convex set is convex; convex() checks it again, fail closed.)
    todo = [set(p.nodes) for p in partitioner.propose_partitions()]
    while todo:
        members = todo.pop()
        pieces = [set(chunk) for component in _components(members)
                  for chunk in _split_for_order(gm, dict.fromkeys(component), order)]
        if len(pieces) > 1:
            todo += [piece for piece in pieces if len(piece) >= 2]
            continue
        # A view whose users are all outside computes nothing in the group: leave it out (what
        # stays is still convex: a path through it would have left the group and come back).
        trimmed = {n for n in members if not (_no_kernel(n) and all(u not in members for u in n.users))}
        if trimmed != members:
            todo.append(trimmed)
        elif sum(not _no_kernel(n) for n in members) >= 2 and convex(gm, members, order):
            groups.append(sorted(members, key=order.__getitem__))
    return sorted(groups, key=lambda g: order[g[0]])


def _no_kernel(node: torch.fx.Node) -> bool:
    """A view, or an op whose traced result shares an input's storage (``_unsafe_view`` of a
    contiguous tensor): ATen runs no kernel for it, so fusing it saves none."""
    if is_view(node):
        return True
    try:
        storage = node.meta["val"].untyped_storage()._cdata
        return any(storage == i.meta["val"].untyped_storage()._cdata for i in node.all_input_nodes)
    except Exception:  # noqa: BLE001 - no fake storage to compare: count it as a kernel
        return False


def _components(members: set[torch.fx.Node]) -> list[set[torch.fx.Node]]:
    """``members`` split into pieces connected by edges between members."""
    left, pieces = set(members), []
    while left:
        piece, todo = set(), [left.pop()]
        while todo:
            node = todo.pop()
            piece.add(node)
            for other in (*node.all_input_nodes, *node.users):
                if other in left:
                    left.discard(other)
                    todo.append(other)
        pieces.append(piece)
    return pieces


VIEW_COVERAGE = "a view (its schema returns an alias of its input): no bits are computed"


# ---- 3a'. ops that join through a faithful decomposition ----------------------------------------

class Composite:
    """An op decomposed the way its ATen kernel computes (lite_compiler.faithful_decompositions),
    judged by the pieces of that decomposition: each pointwise piece and each constant fill is an
    op signature checked like any other (enumerated where it applies); views compute nothing; each
    sum must be order-independent by structure (lite_compiler.order_independent) given what its
    producers in this graph show. Anything else in the decomposition, or a decomposition that
    does not apply, leaves the op ATen with the reason."""

    def __init__(self, node: torch.fx.Node, facts_in: dict[int, Any]):
        from lite_compiler.faithful_decompositions import Unfaithful
        from lite_compiler.order_independent import NOTHING, analyse, is_reduction

        self.node, self.pieces, self.why = node, {}, None
        self.out_facts = NOTHING
        try:
            self.graph = _decomposed(node)
        except Unfaithful as exc:
            self.why = f"no decomposition follows ATen's kernel here: {exc}"
            return
        except Exception as exc:  # noqa: BLE001 - not traceable: not fusible (fail closed)
            self.why = f"its decomposition could not be traced: {type(exc).__name__}: {exc}"[:300]
            return
        problems, outs = analyse(self.graph, facts_in)
        self.out_facts = outs[0] if outs else NOTHING
        if problems:
            self.why = problems[0]
            return
        for piece in self.graph.graph.nodes:
            if piece.op != "call_function" or is_view(piece) or is_reduction(piece):
                continue
            piece_kind = kind(piece)
            factory = not piece.all_input_nodes and isinstance(piece.meta.get("val"), torch.Tensor)
            if piece_kind == "pointwise" or factory:
                self.pieces[signature(piece, exact=piece_kind != "pointwise")] = piece
            else:
                self.why = (f"its decomposition holds {piece.target}, which is neither pointwise, a"
                            " view, a constant nor an order-independent sum")
                return

    def refusal(self, verdicts: Mapping[tuple[Any, ...], Verdict], proven_only: bool) -> str | None:
        if self.why is not None:
            return self.why
        for sig in self.pieces:
            verdict = verdicts[sig]
            if not verdict.bitwise:
                return f"its piece {describe(sig)} is not bitwise: {verdict.reason} ({verdict.coverage})"
            if proven_only and not verdict.proven:
                return (f"its piece {describe(sig)} is bitwise but not proven ({verdict.coverage}),"
                        " and bitwise_fusion = \"proven\" fuses proven signatures only")
        return None

    def summary(self, verdicts: Mapping[tuple[Any, ...], Verdict]) -> str:
        proven = all(verdicts[sig].proven for sig in self.pieces)
        pieces = "; ".join(f"{describe(sig)}: {'proven' if verdicts[sig].proven else 'not proven'}"
                           f" ({verdicts[sig].coverage})" for sig in self.pieces)
        return (f"decomposed as its ATen kernel computes (faithful_decompositions), every piece"
                f" bitwise, {'proven' if proven else 'not proven'}: {pieces}; its sums, if any, are"
                " order-independent by structure (order_independent)")


def _decomposed(node: torch.fx.Node) -> torch.fx.GraphModule:
    """``node`` alone through the faithful decomposition table a fusion group of its device uses
    (the very graph its group's compile will hold, node for node)."""
    from torch._guards import detect_fake_mode
    from torch._inductor.decomposition import select_decomp_table
    from torch.fx.experimental.proxy_tensor import make_fx

    from lite_compiler.faithful_decompositions import decomposition_table

    fakes = [a.meta["val"] for a in node.all_input_nodes]
    device = node.meta["val"].device
    table = decomposition_table(select_decomp_table(), {device.type})
    positions = {a: i for i, a in enumerate(node.all_input_nodes)}

    def call(*tensors: Any) -> Any:
        put = lambda a: tensors[positions[a]] if isinstance(a, torch.fx.Node) else a  # noqa: E731
        return node.target(*[put(a) for a in node.args], **{k: put(v) for k, v in node.kwargs.items()})

    fake_mode = detect_fake_mode(fakes)
    with fake_mode if fake_mode is not None else contextlib.nullcontext():
        return make_fx(call, decomposition_table=table)(*fakes)


def _composites(gm: torch.fx.GraphModule, nodes: list[torch.fx.Node]) -> dict[torch.fx.Node, Composite]:
    """Each faithful-kind node's Composite, in graph order, its inputs' facts taken from the
    composites before it (an input made elsewhere: nothing known)."""
    out: dict[torch.fx.Node, Composite] = {}
    for node in nodes:
        facts_in = {i: out[a].out_facts for i, a in enumerate(node.all_input_nodes) if a in out}
        out[node] = Composite(node, facts_in)
    return out


# ---- 3b + 4. the plan for one graph and the verified call ----------------------------------------

def plan(gm: torch.fx.GraphModule, graph_name: str, ledger: Ledger,
         lite_config: Mapping[str, Any], signature_check: bool = True, proven_only: bool = False) -> int:
    """Annotate each fusible group of ``gm`` as a region of its own; returns how many."""
    # Only candidates that could be in a group at all are worth a signature check.
    kinds = {n: k for n in gm.graph.nodes if (k := kind(n)) is not None}
    nodes = [n for group in find_groups(gm, set(kinds)) for n in group]
    if len(nodes) < 2:
        return 0
    # An op joining through its faithful decomposition is judged by that decomposition's pieces.
    composites = _composites(gm, [n for n in nodes if kinds[n] == "faithful"])
    by_sig: dict[tuple[Any, ...], list[torch.fx.Node]] = {}
    for node in nodes:  # data movement is checked at its real shapes (its sizes are arguments)
        if kinds[node] != "faithful":
            by_sig.setdefault(signature(node, exact=kinds[node] != "pointwise"), []).append(node)
    for composite in composites.values():
        for sig, piece in composite.pieces.items():
            by_sig.setdefault(sig, []).append(piece)
    # A view computes no bits: Inductor indexes the same elements (each group's first-call check
    # still compares its outputs' bits, dtypes, shapes and strides).
    views = {sig: Verdict(True, "", VIEW_COVERAGE, proven=True)
             for sig, members in by_sig.items() if is_view(members[0])}
    if signature_check:
        verdicts = {**views, **check_signatures(
            {sig: group[0] for sig, group in by_sig.items() if sig not in views}, graph_name,
            lite_config, FUSION_CONFIGS)}
    else:
        ledger.add(LedgerEntry(
            name=OPTION, stage="fusion", graph=graph_name, allowed=True, lite="option", kind="fusion",
            reason="bitwise_fusion_signature_check = False: no signature was checked on stress"
                   " values; each group's first-call check against ATen is the only proof"))
        verdicts = {sig: Verdict(True) for sig in by_sig}
    fusible: set[torch.fx.Node] = set()
    for node, composite in composites.items():
        why = composite.refusal(verdicts, proven_only)
        if why is None:
            fusible.add(node)
        ledger.add(LedgerEntry(
            name=f"{OPTION} {describe(signature(node, exact=True))}", stage="fusion",
            graph=graph_name, allowed=why is None, lite="option", kind="fusion",
            reason=composite.summary(verdicts) if why is None else
            f"not fused, it stays an ATen op: {why}"))
    pieces = {piece for c in composites.values() for piece in c.pieces.values()}
    for sig, members in by_sig.items():
        members = [m for m in members if m not in pieces]
        if not members:
            continue  # only pieces of decompositions: their rows are their ops' rows
        verdict = verdicts[sig]
        if verdict.bitwise and (verdict.proven or not proven_only):
            fusible.update(members)
            if signature_check and sig not in views:
                ledger.add(LedgerEntry(
                    name=f"{OPTION} {describe(sig)}", stage="fusion", graph=graph_name, allowed=True,
                    lite="option", kind="fusion",
                    reason=f"signature bitwise, {'proven' if verdict.proven else 'not proven'}:"
                           f" {verdict.coverage}"))
            continue
        why = (f"signature not bitwise, its {len(members)} node(s) stay ATen ops: {verdict.reason}"
               f" ({verdict.coverage})" if not verdict.bitwise else
               f"signature bitwise but not proven ({verdict.coverage}), and bitwise_fusion ="
               f" \"proven\" fuses proven signatures only; its {len(members)} node(s) stay ATen ops")
        ledger.add(LedgerEntry(
            name=f"{OPTION} {describe(sig)}", stage="fusion", graph=graph_name, allowed=False,
            lite="option", kind="fusion", reason=why))
    groups = find_groups(gm, fusible)
    for i, group in enumerate(groups):
        annotation = region_annotation(f"{REGION_PREFIX}{i}", FUSION_CONFIGS)
        for node in group:
            node.meta["custom"] = {**(node.meta.get("custom") or {}), ANNOTATION_KEY: annotation}
    return len(groups)


__all__ = ["FUSION_CONFIGS", "OPTION", "FusionHooks", "VerifiedFusion", "candidate", "convex",
           "find_groups", "plan"]
