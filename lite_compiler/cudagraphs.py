"""CUDA graphs for lite mode: replay the lite forward and backward graphs with cudagraph trees.

The switch: ``torch.compile(f, backend="lite", options={"cudagraphs": True})`` (or
``mode="lite"`` with the same ``options``). A CUDA graph replays exactly the kernels its capture
launched, so numerics are those of the graph it captured: the ATen ops aot_eager runs, plus the
regions' Inductor kernels. What it removes is the per-op Python and launch cost, which is what a
lite step pays at GPU sizes where training is launch-bound.

Capture uses PyTorch's own cudagraph trees (``torch._inductor.cudagraph_trees.cudagraphify_impl``),
the mechanism default Inductor's ``mode="reduce-overhead"`` and Dynamo's ``cudagraphs`` backend use
(torch/_dynamo/backends/cudagraphs.py, which this follows): one memory pool per device shared by
forward and backward, parameters and buffers as static inputs (re-recorded if their address
changes, never copied), other CUDA inputs read in place while they stay at their address, then
copied into the pool (``in_place_inputs``). A graph that cannot be captured
(CPU tensors, dynamic shapes, an op that cannot be captured, an in-place update of a non-static
input) runs as it would without the switch; the ledger and a ``CudaGraphsSkipped`` warning say why.
One Dynamo frame is captured whole or not at all: when its forward is skipped, so is its backward.

Nothing here imports ``torch._inductor.cudagraph_trees`` before a graph is actually captured.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch

from lite_compiler.ledger import Ledger, LedgerEntry

OPTION = "cudagraphs"  # its name in options={...} (parsed by lite_compiler.options)


class CudaGraphsSkipped(UserWarning):
    """``options={"cudagraphs": True}`` was asked for, but a graph runs without a CUDA graph."""


# ---- why a graph cannot be captured ------------------------------------------------------------

def _fake(node: torch.fx.Node) -> Any:
    return node.meta.get("val", node.meta.get("example_value"))


def _is_symbolic(value: Any) -> bool:
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return True
    if isinstance(value, torch.Tensor):
        return any(isinstance(d, torch.SymInt) for d in (*value.shape, *value.stride()))
    return False


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def dynamic_shape_reason(gm: torch.fx.GraphModule) -> str | None:
    for node in gm.graph.find_nodes(op="placeholder"):
        if _is_symbolic(_fake(node)):
            return f"dynamic shapes (input '{node.name}' is {_fake(node)!r})"
    return None


def device_reason(gm: torch.fx.GraphModule) -> str | None:
    """CPU tensors anywhere in the graph, or tensors on several GPUs. A CPU scalar (0-dim) input
    is fine: the captured kernels read it as a constant, as Inductor's own check allows."""
    cuda: set[torch.device] = set()
    for node in gm.graph.nodes:
        for tensor in _tensors(_fake(node)):
            if tensor.device.type == "cuda":
                cuda.add(tensor.device)
            elif not (node.op == "placeholder" and tensor.dim() == 0):
                return f"CPU tensors ('{node.name}' is on {tensor.device})"
    if len(cuda) > 1:
        return f"tensors on several devices ({', '.join(sorted(map(str, cuda)))})"
    if not cuda:
        return "no CUDA tensors in the graph"
    return None


def _reads_a_device_scalar(node: torch.fx.Node) -> bool:
    """``.item()`` and friends: the host waits for a value the graph computes, which a replay
    would not recompute (torch 2.11 traces it as aten.item or aten._local_scalar_dense)."""
    target = str(node.target)
    return target.startswith(("aten._local_scalar_dense", "aten.item")) or target in (
        "<built-in method item of type object>",)


def op_reason(gm: torch.fx.GraphModule) -> str | None:
    """An op CUDA graphs cannot capture (CPU sync, data-dependent output size, ...), by
    Inductor's own list; for a region, the reason Inductor recorded while lowering it."""
    from torch._inductor.utils import get_first_incompatible_cudagraph_node

    node = get_first_incompatible_cudagraph_node(gm)
    if node is None:  # torch 2.11's list names it without its overload, so it never matches
        node = next((n for n in gm.graph.nodes if n.op == "call_function"
                     and _reads_a_device_scalar(n)), None)
    if node is not None:
        return f"op '{node.name}' ({node.target}) cannot be captured"
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        compiled = getattr(node.target, "compiled", None)
        region_reason = getattr(compiled, "disabled_cudagraphs_reason", None)
        if region_reason:
            return f"region {getattr(node.target, '__name__', node.name)}: {region_reason}"
    return None


def mutation_reason(gm: torch.fx.GraphModule, static: Sequence[int]) -> str | None:
    """An in-place update of an input that is not static: its copy in the graph's pool would be
    updated instead of the caller's tensor."""
    from torch._dynamo.backends.cudagraphs import find_input_mutations

    mutated = sorted(find_input_mutations(gm.graph) - set(static))
    if mutated:
        names = [n.name for n in gm.graph.find_nodes(op="placeholder")]
        return f"in-place update of input '{names[mutated[0]]}', which is not a parameter or buffer"
    return None


def skip_reason(gm: torch.fx.GraphModule, static: Sequence[int]) -> str | None:
    """Why ``gm`` cannot be replayed as a CUDA graph, or None. Cheapest checks first."""
    if not torch.cuda.is_available():
        reason = device_reason(gm)
        return reason if reason and reason.startswith("CPU") else "CUDA is not available"
    return (device_reason(gm) or dynamic_shape_reason(gm) or op_reason(gm)
            or mutation_reason(gm, static))


# ---- capture -----------------------------------------------------------------------------------

def _static_forward_inputs(num_dynamo_inputs: int, example_inputs: Sequence[Any]) -> list[int]:
    """Parameters and buffers: AOTAutograd's static input indices (what Inductor uses), else the
    inputs AOTAutograd added in front of Dynamo's (lifted parameters)."""
    context = torch._guards.TracingContext.try_get()
    if context is not None and context.fw_metadata is not None:
        return sorted(context.fw_metadata.static_input_indices)
    return list(range(max(0, len(example_inputs) - num_dynamo_inputs)))


def _static_backward_inputs(gm: torch.fx.GraphModule) -> list[int]:
    """Saved tensors come first and, the forward being a CUDA graph, live at fixed addresses in
    its pool; only the tangents change from step to step (Inductor's count_tangents)."""
    from torch._inductor.utils import count_tangents

    return list(range(count_tangents(gm)))


def in_place_inputs(example_inputs: Sequence[Any], static: Sequence[int]) -> list[int]:
    """The other tensor inputs (a batch, a flex-attention mask read from a global, a backward's
    tangents): read where they live while they stay there, instead of copied into the graph's
    pool before every replay (a ``_foreach_copy_`` launch and a device copy per replay). The
    kernels read the caller's tensor at the address they were recorded with; cudagraph trees
    check that address at every replay and record again where it changed, so a replay never
    reads a stale tensor. No input left here is updated in place (``mutation_reason``)."""
    kept = set(static)  # (a CPU scalar stays copied: its value is baked into the capture)
    return [i for i, value in enumerate(example_inputs)
            if i not in kept and isinstance(value, torch.Tensor) and value.is_cuda]


# An input read in place whose tensor moves to another address this many times is copied from
# then on: each move records the graph again, which pays off for a batch or mask that stays put
# (the caching allocator usually hands a step's tensor the last step's block), not for one that
# moves at every step.
REBINDS_BEFORE_COPYING = 2


class _InPlaceInputsWatch:
    """A replay that reads some inputs in place (``in_place``), until their addresses have moved
    more than ``REBINDS_BEFORE_COPYING`` times; then ``copying()`` gives a replay that copies
    them like cudagraph trees copy any non-static input, and a ledger row says so."""

    def __init__(self, replay: Callable[..., Any], in_place: list[int],
                 copying: Callable[[], Callable[..., Any]], on_switch: Callable[[str], None]):
        self.replay, self.in_place, self.copying, self.on_switch = replay, in_place, copying, on_switch
        self.addresses: list[int] | None = None
        self.rebinds = 0
        self._boxed_call = True

    def __call__(self, inputs: list[Any]) -> Any:
        if self.in_place:
            addresses = [inputs[i].data_ptr() for i in self.in_place]
            if self.addresses is not None and addresses != self.addresses:
                self.rebinds += 1
                if self.rebinds > REBINDS_BEFORE_COPYING:
                    self.in_place = []
                    self.replay = self.copying()
                    self.on_switch(f"inputs read in place moved to another address {self.rebinds}"
                                   " times: copied into the graph's pool from now on")
            self.addresses = addresses
        return self.replay(inputs)


class CudaGraphs:
    """The CUDA-graph state of one Dynamo frame, shared by its forward and backward compiles."""

    def __init__(self, ledger: Ledger, num_dynamo_inputs: int):
        self.ledger = ledger
        self.num_dynamo_inputs = num_dynamo_inputs
        self.forward_captured = True  # a skipped forward skips its backward too
        self.device_index: int | None = None

    def _record(self, graph: str, captured: bool, reason: str) -> None:
        self.ledger.add(LedgerEntry(name=OPTION, stage="runtime", graph=graph, allowed=captured,
                                    lite="option", kind="cudagraphs", reason=reason))
        if not captured:
            warnings.warn(f"lite_compiler: {graph} runs without CUDA graphs: {reason}",
                          CudaGraphsSkipped, stacklevel=2)

    def wrap(self, kind: str, graph: str, gm: torch.fx.GraphModule, example_inputs: list[Any],
             compiled: Callable[..., Any]) -> Callable[..., Any]:
        """``compiled`` (the boxed lite graph) as a CUDA-graph replay, or unchanged with a reason."""
        is_backward = kind == "bw"
        if is_backward and not self.forward_captured:
            self._record(graph, False, "its forward graph runs without CUDA graphs")
            return self._backward_without_graph(compiled)
        static = (_static_backward_inputs(gm) if is_backward
                  else _static_forward_inputs(self.num_dynamo_inputs, example_inputs))
        reason = skip_reason(gm, static)
        if reason is not None:
            if is_backward:
                self._record(graph, False, reason)
                return self._backward_without_graph(compiled)
            self.forward_captured = False
            self._record(graph, False, reason)
            return compiled
        in_place = in_place_inputs(example_inputs, static)
        replay = self._replay(kind, gm, example_inputs, compiled, sorted([*static, *in_place]))
        self._record(graph, True, f"replayed as a CUDA graph (cudagraph trees, device"
                                  f" {self.device_index}, {len(static)} static inputs,"
                                  f" {len(in_place)} read in place)")
        if not in_place:
            return replay
        return _InPlaceInputsWatch(
            replay, in_place,
            copying=lambda: self._replay(kind, gm, example_inputs, compiled, static),
            on_switch=lambda why: self._record(graph, True, why))

    def _replay(self, kind: str, gm: torch.fx.GraphModule, example_inputs: list[Any],
                compiled: Callable[..., Any], static: list[int]) -> Callable[..., Any]:
        from torch._dynamo.backends.cudagraphs import (
            find_input_mutations, get_device_index, get_stack_traces,
        )
        from torch._inductor.cudagraph_trees import cudagraphify_impl
        from torch._inductor.cudagraph_utils import get_placeholder_info

        device_index = get_device_index(gm)
        if kind != "bw":
            self.device_index = device_index
        replay = cudagraphify_impl(
            compiled, example_inputs, static,
            device_index=device_index,
            is_backward=kind == "bw",
            is_inference=kind == "inference",
            stack_traces=get_stack_traces(gm),
            placeholders=get_placeholder_info(gm.graph),
            mutated_input_idxs=find_input_mutations(gm.graph),
        )
        replay._boxed_call = True  # type: ignore[attr-defined]
        return replay

    def _backward_without_graph(self, compiled: Callable[..., Any]) -> Callable[..., Any]:
        """A backward that runs eagerly after a captured forward must tell the tree manager, so
        it does not hand the forward's pool to the next replay while the backward still reads
        it (Dynamo's cudagraphs backend: "Backward Generation Handling")."""
        if not self.forward_captured or self.device_index is None:
            return compiled
        from torch._inductor.cudagraph_trees import get_manager

        device_index = self.device_index

        def run(inputs: list[Any]) -> Any:
            manager = get_manager(device_index, create_if_none_exists=False)
            if manager is not None:
                manager.set_to_running_backward()
            return compiled(inputs)

        run._boxed_call = True  # type: ignore[attr-defined]
        return run
