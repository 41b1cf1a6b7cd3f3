"""Selective decomposition in the one AOTAutograd trace (no second make_fx retrace).

Every entry of Inductor's decomposition table is wrapped: while tracing, the wrapper looks at the
annotation of the op being traced and decomposes only inside an annotated region; elsewhere it
returns ``NotImplemented``, which make_fx treats as "no decomposition" and records the ATen op
itself, exactly as ``aot_eager`` does. Forward ops read the annotation from the current node meta;
backward ops, traced by the autograd engine, find it through the forward node with the same
``seq_nr`` (the same link AOTAutograd later uses to copy annotations onto backward nodes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from lite_compiler.annotate import annotation_of
from lite_compiler.guard import timed
from lite_compiler.provenance import check_region_decomposition


def current_annotation() -> Any:
    import torch.fx.traceback as fx_traceback

    meta = fx_traceback.get_current_meta()
    found = annotation_of(meta)
    if found is not None:
        return found
    if meta.get("in_grad_fn", 0) > 0 and meta.get("grad_fn_seq_nr"):
        return _forward_annotation(meta["grad_fn_seq_nr"][-1])
    return None


class _SeqNrIndex:
    """seq_nr -> annotation of the first forward node with it, built incrementally per graph."""

    def __init__(self) -> None:
        self.graph: Any = None
        self.seen = 0
        self.by_seq_nr: dict[Any, Any] = {}

    def lookup(self, graph: Any, seq_nr: Any) -> Any:
        if graph is not self.graph:
            self.graph, self.seen, self.by_seq_nr = graph, 0, {}
        nodes = list(graph.nodes)
        for node in nodes[self.seen:]:
            if "seq_nr" in node.meta and not node.meta.get("autograd_backward"):
                self.by_seq_nr.setdefault(node.meta["seq_nr"], annotation_of(node.meta))
        self.seen = len(nodes)
        return self.by_seq_nr.get(seq_nr)


_INDEX = _SeqNrIndex()


def _forward_annotation(seq_nr: Any) -> Any:
    from torch.fx.experimental.proxy_tensor import get_proxy_mode

    mode = get_proxy_mode()
    if mode is None:
        return None
    return _INDEX.lookup(mode.tracer.graph, seq_nr)


def _selective(op: Any, decomposition: Callable[..., Any]) -> Callable[..., Any]:
    def decompose_if_annotated(*args: Any, **kwargs: Any) -> Any:
        if current_annotation() is None:
            return NotImplemented
        # An entry edited into Inductor's table runs as itself: registered, or refused; torch's
        # decomposition of another op moved under this one too (lite_compiler.provenance).
        check_region_decomposition(op, decomposition)
        return decomposition(*args, **kwargs)

    decompose_if_annotated.__wrapped__ = decomposition  # type: ignore[attr-defined]
    return decompose_if_annotated


class AnnotatedDuringTrace(Exception):
    """AOTAutograd traced without the decomposition table (Dynamo's graph had no region) and made
    annotated nodes all the same: code that opens a region only while AOTAutograd traces, e.g. a
    custom op's backward formula. The lite compiler traces again, with the table."""


def graph_has_regions(gm: Any) -> bool:
    """Whether a node of ``gm``, or of a graph nested in it (a higher-order op's body), carries a
    region annotation: without one, no op of the trace decomposes and the table is not needed."""
    import torch.fx

    return any(annotation_of(node.meta) is not None
               for module in gm.modules() if isinstance(module, torch.fx.GraphModule)
               for node in module.graph.nodes)


def region_names(gm: Any) -> set[str]:
    """The regions (as warnings name them) annotated on nodes of ``gm`` or of graphs nested in it."""
    import torch.fx

    from lite_compiler.annotate import describe

    return {describe(annotation) for module in gm.modules() if isinstance(module, torch.fx.GraphModule)
            for node in module.graph.nodes
            if (annotation := annotation_of(node.meta)) is not None}


def check_unannotated(gm: Any) -> None:
    """Raise AnnotatedDuringTrace if a graph traced without the table has a region after all."""
    if graph_has_regions(gm):
        raise AnnotatedDuringTrace


def selective_decomposition_table(
    base: Mapping[Any, Callable[..., Any]] | None = None,
) -> dict[Any, Callable[..., Any]]:
    """Inductor's decompositions, each applied only to ops traced inside an annotated region."""
    if base is None:
        from torch._inductor.decomposition import select_decomp_table

        base = select_decomp_table()
    with timed("lite_selective_decomposition", "aot"):
        return {op: _wrapper_of(op, fn) for op, fn in base.items()}


# op -> (decomposition, its selective wrapper): ~1,000 closures were built afresh at every
# compile; an op whose decomposition is another object (a user registered one) gets a new one.
_WRAPPERS: dict[Any, tuple[Callable[..., Any], Callable[..., Any]]] = {}


def _wrapper_of(op: Any, decomposition: Callable[..., Any]) -> Callable[..., Any]:
    held = _WRAPPERS.get(op)
    if held is None or held[0] is not decomposition:
        held = _WRAPPERS[op] = (decomposition, _selective(op, decomposition))
    return held[1]
