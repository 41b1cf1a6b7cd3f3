"""FX surgery for regions: group annotated nodes by region id and scoop each region into a
submodule of the fw/bw graph (its get_attr inputs inlined, its size symbols bound).

What happens to the submodules (Inductor compiles, calls from the graph) is lite_compiler.regions.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.fx

from lite_compiler.annotate import ANNOTATION_KEY, annotation_of, region_configs, region_key
from lite_compiler.errors import LiteCompilerError, LiteRegionConfigError
from lite_compiler.region_config import validate_configs

SUBMOD_PREFIX = "__lite_region_"


def is_annotated(node: torch.fx.Node) -> bool:
    return node.op not in ("placeholder", "output", "get_attr") and annotation_of(node.meta) is not None


def adopt_enclosed(gm: torch.fx.GraphModule) -> list[tuple[str, Any]]:
    """Unannotated ops that only feed one region and read from it join that region.

    AOTAutograd gives a backward node the annotation of the forward node it comes from (by
    seq_nr); the adds autograd inserts to sum the gradients of a tensor used twice (a norm's
    output feeding the gate and up projections, q/k/v reading one input) come from no forward
    node and carry none. Inside a region (a whole decoder layer) each one cut the region apart:
    one more boundary, no fusion across it. An op whose every user is in region R and that reads
    at least one input from R is part of R's computation; its value reaches nothing but R, so no
    value outside regions changes. Returns (node name, region id) per adopted node.
    """
    adopted: list[tuple[str, Any]] = []
    for node in reversed(gm.graph.nodes):  # users first: a chain of such ops joins as one
        if node.op != "call_function" or not node.users or is_annotated(node):
            continue
        users = [annotation_of(u.meta) if is_annotated(u) else None for u in node.users]
        if any(a is None for a in users) or len({region_key(a) for a in users}) != 1:
            continue
        if node.is_impure():  # asked last: the costly test (~1 ms a graph when asked first)
            continue
        key = region_key(users[0])
        if not any(is_annotated(i) and region_key(annotation_of(i.meta)) == key
                   for i in node.all_input_nodes):
            continue
        if _needs_decomposition(node.target):
            continue
        node.meta["custom"] = {**(node.meta.get("custom") or {}), ANNOTATION_KEY: users[0]}
        adopted.append((node.name, key))
    return adopted


def _needs_decomposition(target: Any) -> bool:
    """An op Inductor lowers only through its decomposition (aten.silu_backward: no lowering of its
    own, unlike aten.add, which has both): traced outside a region it was not decomposed, and
    Inductor refuses it whole ("both a fallback and a decomp for same op"). It stays outside, run
    as its ATen op. (The backward of an in-place op in a region, nn.SiLU(inplace=True), links to
    no forward node by seq_nr and arrives like this.)"""
    from torch._inductor.decomposition import select_decomp_table
    from torch._inductor.lowering import lowerings

    return target in select_decomp_table() and target not in lowerings


def group_regions(gm: torch.fx.GraphModule) -> dict[Any, list[torch.fx.Node]]:
    regions: dict[Any, list[torch.fx.Node]] = {}
    for node in gm.graph.nodes:
        if is_annotated(node):
            regions.setdefault(region_key(annotation_of(node.meta)), []).append(node)
    return regions


def configs_of(key: Any, nodes: list[torch.fx.Node]) -> dict[str, Any]:
    """The region's ``inductor_configs``; two different non-empty ones in one region is an error."""
    chosen: dict[str, Any] = {}
    for node in nodes:
        configs = region_configs(annotation_of(node.meta))
        if configs and chosen and configs != chosen:
            raise LiteRegionConfigError(
                f"region {key!r} is annotated with two different inductor_configs ({chosen} and"
                f" {configs}); give the regions different ids or use one config")
        chosen = configs or chosen
    return chosen


def scoop(gm: torch.fx.GraphModule) -> list[tuple[str, Any, dict[str, Any]]]:
    """Fuse each region's nodes into submodules. Returns (submodule name, region id, configs)."""
    regions = group_regions(gm)
    if not regions:
        return []  # before the partitioner's imports: a graph without regions never needs them
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
    from torch.fx.passes.operator_support import create_op_support
    from torch.fx.passes.utils.fuser_utils import fuse_by_partitions

    partitions: list[dict[torch.fx.Node, int | None]] = []
    owners: list[tuple[Any, dict[str, Any]]] = []
    order = {node: i for i, node in enumerate(gm.graph.nodes)}
    for key, nodes in regions.items():
        configs = configs_of(key, nodes)
        validate_configs(key, configs)
        members = set(nodes)
        support = create_op_support(lambda _mods, node, members=members: node in members)
        partitioner = CapabilityBasedPartitioner(gm, support, allows_single_node_partition=True)
        for partition in partitioner.propose_partitions():
            for chunk in _split_for_order(gm, partition.nodes, order):
                partitions.append(chunk)
                owners.append((key, configs))
    # Order partitions by their first node so submodule names follow graph order.
    ranked = sorted(range(len(partitions)), key=lambda i: min(order[n] for n in partitions[i]))
    partitions = [partitions[i] for i in ranked]
    owners = [owners[i] for i in ranked]
    position = {node.name: order[node] for node in order}
    firsts = [min(order[n] for n in partition) for partition in partitions]
    with torch.fx.traceback.preserve_node_meta(enable=False):
        fuse_by_partitions(gm, partitions, prefix=SUBMOD_PREFIX, always_return_tuple=True)
    names = [f"{SUBMOD_PREFIX}{i}" for i in range(len(owners))]
    _restore_order(gm, position, dict(zip(names, firsts)))
    for name in names:
        _inline_get_attr_inputs(gm, name)
        _bind_size_symbols(gm, name)
    gm.graph.lint()
    return [(name, key, configs) for name, (key, configs) in zip(names, owners)]


def _split_for_order(gm: torch.fx.GraphModule, members: dict[torch.fx.Node, Any],
                     order: dict[torch.fx.Node, int]) -> list[dict[torch.fx.Node, Any]]:
    """Split a partition where one call for it would reorder the graph outside it.

    The partitioner merges every node of one region id it can without a cycle, also nodes far
    apart (T5's encoder and decoder norms in one region "norm"). One call for a chunk of members
    must stand after every outside node they need and before every outside node that uses them;
    otherwise the nodes outside would run in another order than AOTAutograd's. So a chunk grows
    in graph order while the last outside node its members need comes before the first outside
    node that uses one of them, and is cut before a member that would break that. (Until round 6
    a chunk was cut at any outside user between its members, even where every member needed
    only earlier nodes and could run earlier: that kept llama's silu_backward away from the
    multiplies before it.)
    """
    ranked = sorted(members, key=order.__getitem__)
    chunks: list[dict[torch.fx.Node, Any]] = []
    current: dict[torch.fx.Node, Any] = {}
    last_input = -1  # the last outside node the chunk's members need
    users: set[torch.fx.Node] = set()  # the outside nodes that use the chunk's members
    for node in ranked:
        needs = max((order[i] for i in node.all_input_nodes if i not in current), default=-1)
        after = (users - {node}) | {u for u in node.users if u not in current}
        if current and max(last_input, needs) >= min((order[u] for u in after), default=len(order)):
            chunks.append(current)
            current, last_input = {}, -1
            needs = max((order[i] for i in node.all_input_nodes), default=-1)
            after = set(node.users)
        current[node] = members[node]
        last_input, users = max(last_input, needs), after
    chunks.append(current)
    return chunks


def _restore_order(gm: torch.fx.GraphModule, position: dict[str, int], calls: dict[str, int]) -> None:
    """Put the nodes outside regions back in AOTAutograd's order.

    fuse_by_partitions re-sorts the whole graph topologically, which can move an independent
    node outside the regions (a weight cast, a transpose) ahead of another: the same ops, but not
    the graph AOTAutograd produced (random ops would draw in another order). A topological sort
    that always takes the ready node with the smallest original position restores that order;
    a region call stands at its first member's position, its output getitems right after it.
    """
    import heapq

    nodes = list(gm.graph.nodes)
    key: dict[torch.fx.Node, float] = {}
    for node in nodes:
        if node.op == "call_module" and node.target in calls:
            key[node] = calls[node.target]
        elif node.name in position:
            key[node] = position[node.name]
        else:  # a node fusing made (the getitems of a region's outputs): right after its input
            key[node] = max((key[i] for i in node.all_input_nodes), default=-1) + 0.5
    waiting = {node: len(node.all_input_nodes) for node in nodes}
    rank = {node: i for i, node in enumerate(nodes)}
    ready = [(key[n], rank[n], n) for n in nodes if waiting[n] == 0]
    heapq.heapify(ready)
    ordered: list[torch.fx.Node] = []
    while ready:
        _, _, node = heapq.heappop(ready)
        ordered.append(node)
        for user in node.users:
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(ready, (key[user], rank[user], user))
    if len(ordered) != len(nodes) or ordered == nodes:
        return  # (a cycle cannot happen after a legal fuse; keep the graph as it is)
    output = gm.graph.output_node()
    for node in ordered:
        if node is not output:
            output.prepend(node)
    gm.graph.lint()


def _fetch_attr(root: torch.nn.Module, target: str) -> Any:
    owner: Any = root
    for part in target.split("."):
        owner = getattr(owner, part)
    return owner


def _free_attr_name(module: torch.nn.Module, target: str) -> str:
    base = target.replace(".", "_")
    name, i = base, 0
    while hasattr(module, name):
        i += 1
        name = f"{base}_{i}"
    return name


def _inline_get_attr_inputs(gm: torch.fx.GraphModule, submod_name: str) -> None:
    """Move the region's ``get_attr`` inputs into the region submodule.

    The partitioner keeps ``get_attr`` nodes (they carry no annotation) in the outer graph and
    passes them to the region as inputs: the score_mod/mask_mod graphs of flex_attention, the
    branches of ``torch.cond``, ``invoke_subgraph`` bodies, lifted constants. Such inputs are
    modules (or constants), not runtime tensors with a fake "val": Inductor must see them as
    attributes of the region graph, as in the graph the higher-order op was traced in.
    """
    (call,) = gm.graph.find_nodes(op="call_module", target=submod_name)
    submod = getattr(gm, submod_name)
    placeholders = list(submod.graph.find_nodes(op="placeholder"))
    if len(placeholders) != len(call.args):
        raise LiteCompilerError(
            f"region submodule {submod_name} has {len(placeholders)} inputs but is called with"
            f" {len(call.args)}; this is a lite_compiler bug, please report it")
    kept: list[Any] = []
    for placeholder, arg in zip(placeholders, call.args):
        if not (isinstance(arg, torch.fx.Node) and arg.op == "get_attr"):
            kept.append(arg)
            continue
        value = _fetch_attr(gm, str(arg.target))
        if isinstance(value, torch.Tensor) and ("val" in arg.meta or "example_value" in arg.meta):
            kept.append(arg)  # a lifted tensor constant with a fake value: an ordinary input
            continue
        attr_name = _free_attr_name(submod, str(arg.target))
        if isinstance(value, torch.nn.Module):
            submod.add_module(attr_name, value)
        elif isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter):
            submod.register_buffer(attr_name, value)
        else:
            setattr(submod, attr_name, value)
        with submod.graph.inserting_before(placeholder):
            inner = submod.graph.get_attr(attr_name)
        inner.meta = dict(arg.meta)
        placeholder.replace_all_uses_with(inner)
        submod.graph.erase_node(placeholder)
    if len(kept) != len(call.args):
        dropped = [a for a in call.args if a not in kept]
        call.args = tuple(kept)
        for node in dropped:
            if not node.users:
                gm.graph.erase_node(node)
        # get_attr nodes must come first, after the placeholders: move them up.
        first = next(n for n in submod.graph.nodes if n.op != "placeholder" and n.op != "get_attr") \
            if any(n.op not in ("placeholder", "get_attr") for n in submod.graph.nodes) else None
        if first is not None:
            for node in list(submod.graph.find_nodes(op="get_attr")):
                first.prepend(node)
        submod.recompile()


def _bind_size_symbols(gm: torch.fx.GraphModule, submod_name: str) -> None:
    """Pass the region the SymInt inputs its shapes are written in.

    With dynamic shapes a region input can be sized by an expression (``4*(5 - s11)*...``) from
    which Inductor cannot recover the symbols; the outer graph has them as SymInt placeholders.
    """
    import sympy

    (call,) = gm.graph.find_nodes(op="call_module", target=submod_name)
    needed: set[Any] = set()
    bound: set[Any] = set()
    for arg in call.args:
        val = arg.meta.get("val") if isinstance(arg, torch.fx.Node) else None
        if isinstance(val, torch.SymInt):
            needed |= val.node.expr.free_symbols
            if isinstance(val.node.expr, sympy.Symbol):
                bound.add(val.node.expr)
        elif isinstance(val, torch.Tensor):
            for dim in (*val.shape, *val.stride(), val.storage_offset()):
                if isinstance(dim, torch.SymInt):
                    needed |= dim.node.expr.free_symbols
                    if isinstance(dim.node.expr, sympy.Symbol):
                        bound.add(dim.node.expr)
    missing = needed - bound
    if not missing:
        return
    providers = {}
    for node in gm.graph.find_nodes(op="placeholder"):
        val = node.meta.get("val")
        if isinstance(val, torch.SymInt) and isinstance(val.node.expr, sympy.Symbol):
            providers.setdefault(val.node.expr, node)
    extra = [providers[sym] for sym in sorted(missing, key=str) if sym in providers]
    if not extra:
        return
    submod = getattr(gm, submod_name)
    last = list(submod.graph.find_nodes(op="placeholder"))[-1]
    for provider in extra:
        with submod.graph.inserting_after(last):
            last = submod.graph.placeholder(f"{provider.name}_size")
        last.meta = {"val": provider.meta["val"]}
    call.args = (*call.args, *extra)
    submod.recompile()
