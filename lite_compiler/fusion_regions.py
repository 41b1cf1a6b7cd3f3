"""Fusion groups as regions: their Inductor configs, their decomposition, their verified call.

lite_compiler.bitwise_fusion decides which nodes form a group and annotates each group as a region
of its own id (``bitwise_fusion/<n>``); lite_compiler.regions compiles it like any region, asking
FusionHooks to decompose its graph first (its ops were not decomposed in the AOTAutograd trace)
and for the callable to put in the graph: a VerifiedFusion, which checks its first call.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
import torch.fx

from lite_compiler.bits import difference
from lite_compiler.errors import LiteCompilerError
from lite_compiler.ledger import Ledger, LedgerEntry
from lite_compiler.regions import CompiledRegion

OPTION = "bitwise_fusion"
# Inductor configs of every fusion group (and signature check), on top of the lite config, which
# already forces emulate_precision_casts (rounding at every cast, no FMA contraction in Triton).
FUSION_CONFIGS: dict[str, Any] = {
    "eager_numerics.division_rounding": True,  # a / b rounded as ATen's div (not a * (1/b))
    "eager_numerics.disable_ftz": True,  # subnormals kept, as ATen keeps them
}
REGION_PREFIX = "bitwise_fusion/"


def is_fusion_key(key: Any) -> bool:
    return isinstance(key, str) and key.startswith(REGION_PREFIX)


class VerifiedFusion(CompiledRegion):
    """A fusion group's call: on its first call both the fused kernel and the group's ATen nodes
    run and are compared; from then on the one that matched ATen (or ATen itself) runs alone."""

    def __init__(self, region: CompiledRegion | None, aten: torch.fx.GraphModule, graph: str,
                 ops: list[str], ledger: Ledger):
        # A CompiledRegion still (the effect check counts it as a region; CUDA graphs read its
        # ``compiled``); None when Inductor could not compile the group: ATen from the start.
        if region is not None:
            self.__dict__.update(region.__dict__)
        else:
            super().__init__(None, aten.__class__.__name__)
        self.region, self.aten, self.graph, self.ops, self.ledger = region, aten, graph, ops, ledger
        self.chosen: Any = None

    def __call__(self, *args: Any) -> Any:
        if self.chosen is not None:
            return self.chosen(*args)
        if any(isinstance(a, torch.Tensor) and a.is_cuda for a in args) \
                and torch.cuda.is_current_stream_capturing():
            return self._decide(None, "its first call was inside a CUDA graph capture, where it"
                                      " cannot be checked")(*args)
        want = self.aten(*args)
        got = self.region(*args)
        why = difference(list(want), list(got), check_strides=True)
        self._decide(self.region if why is None else None, why)
        return want  # bitwise equal to the fused result when fused; ATen's own when not

    def _decide(self, fused: Any, why: str | None) -> Any:
        self.chosen = fused if fused is not None else self.aten
        what = f"{len(self.ops)} ops ({', '.join(self.ops)})"
        reason = (f"fused: {what}; bitwise equal to ATen on its first call (bits, dtypes, shapes,"
                  " strides)" if fused is not None else
                  f"fell back to ATen: {what}; {why}")
        if fused is not None and getattr(fused, "_restride", False):
            # Same values, one more copy per call: worth knowing when it is measured.
            reason += ("; an input's real strides differ from its traced ones, so it is copied"
                       " into the compiled layout at every call")
        self.ledger.add(LedgerEntry(name=OPTION, stage="runtime", graph=self.graph,
                                    allowed=fused is not None, lite="option", kind="fusion",
                                    reason=reason))
        return self.chosen


def _keep_output_strides(traced: torch.fx.GraphModule, decomposed: torch.fx.GraphModule) -> None:
    """Each output of the group in the strides ATen gives it. A decomposition may lay an output
    out otherwise (Inductor's cat of an empty cache tensor and a transposed one keeps the
    transposed layout, ATen's cat is contiguous), and Inductor keeps the decomposed graph's
    strides; the first-call check would then refuse the group (a matmul after it picks its
    algorithm by layout). Inductor's own prim asks for ATen's stride order."""
    from torch._inductor import inductor_prims

    from lite_compiler.bits import _strides

    (want_out,) = traced.graph.find_nodes(op="output")
    (got_out,) = decomposed.graph.find_nodes(op="output")
    wants = want_out.args[0] if isinstance(want_out.args[0], (list, tuple)) else [want_out.args[0]]
    gots = got_out.args[0] if isinstance(got_out.args[0], (list, tuple)) else [got_out.args[0]]
    if len(wants) != len(gots):
        return
    new = list(gots)
    for i, (want, got) in enumerate(zip(wants, gots)):
        w = want.meta.get("val") if isinstance(want, torch.fx.Node) else None
        g = got.meta.get("val") if isinstance(got, torch.fx.Node) else None
        if not (isinstance(w, torch.Tensor) and isinstance(g, torch.Tensor)) or _strides(w) == _strides(g):
            continue
        with decomposed.graph.inserting_before(got_out):
            forced = decomposed.graph.call_function(inductor_prims.force_stride_order,
                                                    (got, list(w.stride())))
        forced.meta["val"] = w
        new[i] = forced
    if new != list(gots):
        got_out.args = (type(got_out.args[0])(new) if isinstance(got_out.args[0], (list, tuple))
                        else new[0],)
        decomposed.recompile()


class OrderDependentReduction(Exception):
    """A fusion group's graph holds a reduction whose result may depend on its order."""


class FusionHooks:
    """What compile_regions does differently for fusion groups (and signature checks)."""

    def __init__(self, ledger: Ledger | None, also: tuple[Any, ...] = ()):
        self.ledger = ledger
        self.keys = also  # more region ids to decompose (bitwise_check's check region)
        self.failures: dict[Any, str] = {}  # group key -> why Inductor could not compile it
        self.compiled: dict[Any, tuple[Any, str]] = {}  # structure -> (compiled, its region graph)
        self.reused: dict[Any, str] = {}  # group key -> the region graph whose compile it reuses
        self._pending: dict[Any, Any] = {}  # group key -> its structure, between the two calls

    def _ours(self, key: Any) -> bool:
        return is_fusion_key(key) or key in self.keys

    def decompose(self, key: Any, submod: torch.fx.GraphModule, fake_inputs: list[Any]
                  ) -> torch.fx.GraphModule:
        """The group's graph with Inductor's decompositions applied, as a user region's ops are
        decomposed in the AOTAutograd trace (lite_selective_decomposition); the guard records the
        pass, and the effect check expects its result at lowering."""
        if not self._ours(key):
            return submod
        from torch._guards import detect_fake_mode
        from torch._inductor.decomposition import select_decomp_table
        from torch.fx.experimental.proxy_tensor import make_fx

        from lite_compiler import guard
        from lite_compiler.effects import registered_pass
        from lite_compiler.faithful_decompositions import decomposition_table

        name = "lite_selective_decomposition"
        fake_mode = detect_fake_mode(fake_inputs)  # constants a decomposition makes are fake too
        # Where ATen's kernel on this device is known, ops decompose the way it computes.
        table = decomposition_table(select_decomp_table(), {
            t.device.type for t in fake_inputs if isinstance(t, torch.Tensor)})
        with guard.timed(name, "aot") as record, registered_pass(name, "aot", (submod,), record) as done, \
                fake_mode if fake_mode is not None else contextlib.nullcontext():
            decomposed = make_fx(submod, decomposition_table=table)(*fake_inputs)
            _keep_output_strides(submod, decomposed)
            done(decomposed)
        # A sum is fused only where its result cannot depend on the order of its additions, as
        # this graph's structure shows (fail closed: the group then runs its ATen nodes).
        from lite_compiler.order_independent import order_dependent

        problems = order_dependent(decomposed)
        if problems:
            raise OrderDependentReduction(problems[0])
        return decomposed

    def _structure(self, key: Any, lowered: torch.fx.GraphModule, fake_inputs: list[Any]) -> Any:
        """What the compiled code of a group depends on: its decomposed graph node for node
        (names by position), its inputs' dtypes, shapes and strides, the Inductor config in force.
        None (no reuse) for a graph holding constants (get_attr), whose values the rows omit."""
        if not is_fusion_key(key) or lowered.graph.find_nodes(op="get_attr"):
            return None
        import torch._inductor.config as inductor_config

        from lite_compiler.effects import fingerprint

        position = {node: f"n{i}" for i, node in enumerate(lowered.graph.nodes)}
        rows = fingerprint(lowered.graph, rename=position.__getitem__)
        inputs = tuple((str(t.dtype), str(t.device), tuple(t.shape), t.stride(), t.storage_offset())
                       if isinstance(t, torch.Tensor) else repr(t) for t in fake_inputs)
        config = repr(sorted(inductor_config.get_config_copy().items(), key=lambda kv: kv[0]))
        return rows, inputs, config

    def compiled_before(self, key: Any, lowered: torch.fx.GraphModule, fake_inputs: list[Any]) -> Any:
        """The compile of an identical group of this graph, if any: the ledger says whose; the
        guard saw its passes run on the very same graph under the very same config."""
        structure = self._pending[key] = self._structure(key, lowered, fake_inputs)
        held = self.compiled.get(structure) if structure is not None else None
        if held is None:
            return None
        compiled, first = held
        self.reused[key] = first
        return compiled

    def remember(self, key: Any, lowered: torch.fx.GraphModule, fake_inputs: list[Any],
                 compiled: Any, graph: str) -> None:
        structure = self._pending.pop(key, None)  # taken before Inductor annotated the graph
        if structure is not None:
            self.compiled.setdefault(structure, (compiled, graph))

    @contextlib.contextmanager
    def contained(self, key: Any) -> Iterator[None]:
        """A fusion group Inductor cannot decompose or compile runs as its ATen nodes (wrap sees
        no compiled region); a lite error (a guard refusal) still stops the compile."""
        if not is_fusion_key(key):
            yield
            return
        try:
            yield
        except LiteCompilerError:
            raise
        except Exception as exc:  # noqa: BLE001 - fail closed: ATen, with the reason
            text = str(exc).strip()
            self.failures[key] = f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"[:300]

    def wrap(self, key: Any, aten: torch.fx.GraphModule, region: CompiledRegion | None,
             graph: str) -> Any:
        if not is_fusion_key(key) or self.ledger is None:
            return region
        ops = [str(n.target) for n in aten.graph.nodes if n.op == "call_function"]
        fused = VerifiedFusion(region, aten, graph, ops, self.ledger)
        if region is None:
            fused._decide(None, f"Inductor could not compile it: {self.failures.get(key, '?')}")
            return fused
        how = (f"reuses the Inductor code of {self.reused[key]} (the same decomposed graph, inputs"
               " and config)" if key in self.reused else f"compiled with {FUSION_CONFIGS}")
        self.ledger.add(LedgerEntry(name=OPTION, stage="fusion", graph=graph, allowed=True,
                                    lite="option", kind="fusion",
                                    reason=f"group of {len(ops)} ops {how}; checked against ATen on"
                                           " its first call"))
        return fused
