"""``backend="lite"``: AOTAutograd exactly as ``aot_eager`` runs it, plus regional Inductor.

Same partitioner and options as ``aot_eager`` (torch/_dynamo/backends/debugging.py), so the graph
outside annotated regions is literally what aot_eager runs. The decomposition table decomposes
only annotated ops, in the one trace. The forward/backward compilers scoop annotated nodes into
one submodule per region and compile those with Inductor; the rest runs as the plain FX graph.
"""

from __future__ import annotations

import contextlib
import itertools
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from lite_compiler import custom_passes, guard
from lite_compiler.config import derive_configs, forced_by_environment, registry, user_settings_overridden
from lite_compiler.annotate import LiteRegionNotCompiled
from lite_compiler.decomposition import (
    AnnotatedDuringTrace,
    check_unannotated,
    graph_has_regions,
    region_names,
    selective_decomposition_table,
)
from lite_compiler.effects import (
    EffectState,
    check_after_partition,
    check_outer_graph,
    check_partition,
    joint_before_partition,
    outer_fingerprint,
)
from lite_compiler.errors import LiteConfigError, LiteSettingOverridden
from lite_compiler.generated_code import check_forward_is_graph_code
from lite_compiler.ledger import Ledger, LedgerEntry, new_ledger
from lite_compiler.provenance import (check_call_path, check_torch_code, foreign_at_run_time,
                                      report_compile_callbacks)
from lite_compiler.regions import compile_regions, is_region_node, refuse_config_drift, sweep_inductor
from lite_compiler.scooping import adopt_enclosed
from lite_compiler.session import session

_frame_ids = itertools.count()
_WARNED_LOST: set[str] = set()  # regions already warned about as lost (once per process)


class LiteCompiler:
    """One compile of one Dynamo graph: its registry, its derived config, its ledger."""

    def __init__(self, registry_paths: Sequence[str] = (), options: Mapping[str, Any] | None = None):
        # options={"cudagraphs": True, "bitwise_fusion": True}: lite_compiler.options (without
        # options, neither the CUDA-graph nor the fusion module is even imported).
        self.cudagraphs = self.bitwise_fusion = False
        self.signature_check, self.proven_only = True, False
        if options:
            from lite_compiler.options import parse_options

            parsed = parse_options(options)
            self.cudagraphs, self.bitwise_fusion = parsed.cudagraphs, bool(parsed.bitwise_fusion)
            self.signature_check = parsed.bitwise_fusion_signature_check
            self.proven_only = parsed.bitwise_fusion == "proven"
        self.graphs: Any = None  # the frame's CudaGraphs state, made in __call__
        self.functorch_patch: dict[str, Any] = {}  # what _aot set on functorch's config
        self.decomposing = False  # tracing with the selective decomposition table (__call__)
        # Regions in Dynamo's graph, and those that reached a forward / inference graph.
        self.regions_in_dynamo: set[str] = set()
        self.regions_reached: set[str] = set()
        self.registry = registry(tuple(registry_paths))
        self.inductor_config, self.functorch_config = derive_configs(self.registry)
        self.frame = f"graph{next(_frame_ids)}"
        self.ledger: Ledger = new_ledger("lite", self.frame)
        self.effects = EffectState()  # what the effect checks expect next, for this compile
        self.region_user_config: dict[str, Any] = {}  # the user's numerics settings regions keep
        self._record_overridden_settings()

    def _record_overridden_settings(self) -> None:
        """A lite-off optimization the user switched on globally does not run in lite mode: the
        ledger and a warning say so, rather than the setting being silently ignored."""
        for module, patch in (("inductor", self.inductor_config), ("functorch", self.functorch_config)):
            for key, lite_value, forced in forced_by_environment(patch, module):
                raise LiteConfigError(
                    f"torch._{module}.config.{key} is forced to {forced!r} by an environment variable"
                    f" torch reads for it (Config(env_name_force=...) in torch/_{module}/config.py: no"
                    f" config.patch can change it), but lite mode must set it to {lite_value!r}"
                    " (registry); unset that variable for lite compiles")
        overridden = [("inductor", *row) for row in user_settings_overridden(self.inductor_config)]
        overridden += [("functorch", *row)
                       for row in user_settings_overridden(self.functorch_config, "functorch")]
        for module, key, user_value, lite_value in overridden:
            entry = self.registry.get_config(key, module)
            in_regions = module == "inductor" and entry is not None and entry.region_allows(user_value)[0]
            if in_regions and entry.kind == "numerics":
                # A request about numbers (torch.use_deterministic_algorithms(True) turns Inductor's
                # `deterministic` on) is kept where Inductor computes in lite mode: in regions.
                # Outside them aot_eager's ATen ops run, which never read Inductor's config.
                self.region_user_config[key] = user_value
                self.ledger.add(LedgerEntry(
                    name=f"config {key}", stage="config", graph=self.frame, allowed=True,
                    lite="region", kind="config",
                    reason=f"torch._inductor.config.{key} = {user_value!r} (the user's setting) is"
                           " kept inside regions, where Inductor compiles (registry: a numerics"
                           " key regions may set); outside them aot_eager's ATen ops run"))
                continue
            reason = (f"torch._{module}.config.{key} = {user_value!r} is overridden: lite mode"
                      f" forces {lite_value!r} (registry); " + (
                          f"annotate a region with lite_compiler.region(..., **{{{key!r}:"
                          f" {user_value!r}}}) to ask for it there" if in_regions else
                          "the registry does not let regions change it either"))
            self.ledger.add(LedgerEntry(name=f"config {key}", stage="config", graph=self.frame,
                                        allowed=False, lite="never", kind="config", reason=reason))
            warnings.warn(reason, LiteSettingOverridden, stacklevel=2)

    @contextlib.contextmanager
    def active(self, graph: str) -> Any:
        with session("lite", self.registry, self.ledger, graph=graph, effects=self.effects):
            yield

    def _run_always_custom_passes(self, gm: torch.fx.GraphModule, stage: str) -> None:
        """The user passes of one stage's custom hooks (registry: kind = "custom_hook"), on the
        whole graph: every configured pass that is not lite = "region" (an unregistered or
        lite = "never" one is refused by the guard). A "region" pass runs on region graphs only
        (lite_compiler.regions), so no pass runs twice."""
        for hook, custom_pass in custom_passes.configured(self.registry, stages=(stage,)):
            if hook.module != "torch._inductor.config":
                continue  # functorch's hooks are called by AOTAutograd itself (see __call__)
            entry = custom_passes.entry_of(self.registry, custom_pass)
            if entry is not None and entry.lite == "region":
                if stage != "post_grad":
                    # Regions run post-grad custom passes only: this one would never run.
                    raise LiteConfigError(
                        f"custom pass '{entry.name}' is registered lite = \"region\" but installed"
                        f" as {hook.key}, which never runs inside regions; install it as"
                        " post_grad_custom_pre_pass / post_grad_custom_post_pass, or register it"
                        " lite = \"always\" to run it on the whole graph")
                continue
            custom_passes.run(hook, custom_pass, gm.graph)
            gm.recompile()

    def _torch_called_custom_passes(self) -> dict[str, Any]:
        """functorch config patch: the user passes AOTAutograd calls itself (joint_custom_pass),
        each wrapped so the guard sees it run. Inductor-only hooks the lite compiler never calls
        (custom_partitioner_fn: lite partitions exactly as aot_eager) are refused if set."""
        custom_passes.refuse_disallowed(self.registry)  # never / unregistered: refused up front
        patch: dict[str, Any] = {}
        for hook in custom_passes.custom_hooks(self.registry):
            value = getattr(hook.config, hook.key, None)
            if not custom_passes.expand(value):
                continue
            if hook.module == "torch._functorch.config":
                patch[hook.key] = custom_passes.guarded_value(hook, value)
            elif hook.stage not in ("pre_grad", "joint_graph", "post_grad", "scheduler"):
                raise LiteConfigError(
                    f"torch._inductor.config.{hook.key} is set, but lite mode never calls it"
                    f" (stage {hook.stage}: lite partitions and compiles exactly as aot_eager does"
                    " outside regions); unset it for lite compiles")
        return patch

    def compiler(self, kind: str) -> Callable[..., Any]:
        from torch._dynamo.backends.debugging import boxed_nop

        def compile_graph(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
            is_backward, is_inference = kind == "bw", kind == "inference"
            if not is_backward and self.decomposing:
                self.regions_reached |= region_names(gm)
            if is_inference and not self.decomposing:
                check_unannotated(gm)  # a region only AOTAutograd saw: trace again (__call__)
            name = f"{self.frame}/{kind}"
            with self.active(name):
                # AOTAutograd traced and partitioned under the settings lite mode set (_aot; the
                # lazy backward compiles after that patch is gone: its graph was partitioned then).
                if not is_backward:
                    refuse_config_drift(self.functorch_patch, "functorch", "aot",
                                        f"when the {kind} graph reached the lite compiler")
                # Code patched into torch's places between Dynamo and here runs as itself.
                check_call_path("aot", f"the lite compiler's {kind} graph")
                self.effects.expect(gm.graph, f"AOTAutograd's {kind} graph")
                check_after_partition(kind, gm.graph)  # AOTAutograd's steps since: reported
                self._run_always_custom_passes(gm, "post_grad")
                adopt_enclosed(gm)  # gradient sums inside a region belong to it (scooping.py)
                fusion = None
                if self.bitwise_fusion:  # fusion groups become regions of their own (before the
                    from lite_compiler import bitwise_fusion  # outer fingerprint: region nodes)

                    if bitwise_fusion.plan(gm, name, self.ledger, self.inductor_config,
                                           signature_check=self.signature_check,
                                           proven_only=self.proven_only):
                        fusion = bitwise_fusion.FusionHooks(self.ledger)
                # Outside regions, what runs must be what AOTAutograd produced (effects.py). The
                # reference is taken, then the graph is held to the entry fingerprint (moved only
                # by registered passes; adopt_enclosed and fusion planning change annotations
                # only): a change made in between is refused, never becomes the reference.
                outer = outer_fingerprint(gm.graph, is_region_node, self.effects.outer_rows,
                                          self.effects.rows)
                self.effects.verify(gm.graph, "lowering", "the outside-regions reference",
                                    required=True)
                compile_regions(gm, name, is_inference=is_inference, is_backward=is_backward,
                                lite_config={**self.inductor_config, **self.region_user_config},
                                fusion=fusion)
                check_outer_graph(outer, gm.graph, is_region_node, f"{kind} graph after regions")
                check_torch_code(boxed_nop, "boxed_nop", "lowering")  # runs the graph: torch's?
                self.ledger.graph_code[name] = gm.code
                compiled = boxed_nop(gm, example_inputs)
                # The hand-over comes after every other check: the graph boxed_nop compiled must
                # still be the checked one (a profile callback at its call could rewrite it).
                check_outer_graph(outer, gm.graph, is_region_node, f"{kind} graph boxed_nop compiled")
                # ...and what runs is that graph's code, as torch.fx compiles it (generated_code.py).
                check_forward_is_graph_code(gm, compiled, f"{kind} graph")
                self.effects.reset()
            if self.graphs is not None:
                compiled = self.graphs.wrap(kind, name, gm, example_inputs, compiled)
            return compiled

        return compile_graph

    def partition(self, joint: torch.fx.GraphModule, *args: Any, **kwargs: Any) -> Any:
        from functorch.compile import min_cut_rematerialization_partition

        if not self.decomposing:
            check_unannotated(joint)  # a region only AOTAutograd saw: trace again (__call__)
        with self.active(f"{self.frame}/joint"):
            refuse_config_drift(self.functorch_patch, "functorch", "aot",
                                "when the joint graph reached the partitioner")
            self._run_always_custom_passes(joint, "joint_graph")
            joint_rows = joint_before_partition(joint)
            check_torch_code(min_cut_rematerialization_partition, "min_cut_rematerialization_partition", "aot")
            with guard.timed("min_cut_rematerialization_partition", "aot"):
                fw_module, bw_module = min_cut_rematerialization_partition(joint, *args, **kwargs)
            check_partition(joint_rows, (fw_module, bw_module))
            self.effects.reset()
            return fw_module, bw_module

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any], **kwargs: Any) -> Any:
        if self.cudagraphs:
            from lite_compiler.cudagraphs import CudaGraphs

            self.graphs = CudaGraphs(self.ledger, num_dynamo_inputs=len(example_inputs))
        with self.active(f"{self.frame}/dynamo"):
            report_compile_callbacks()  # Dynamo's, from outside torch: ledger rows (provenance.py)
            torch_called = self._torch_called_custom_passes()
            self._run_always_custom_passes(gm, "pre_grad")
            # No region in Dynamo's graph: AOTAutograd traces exactly as for aot_eager, with no
            # decomposition table (building and consulting ~1,000 entries was ~3 ms a compile).
            self.decomposing = graph_has_regions(gm)
            decompositions = self._decompositions() if self.decomposing else None
        regions_by_module = sys.modules.get("lite_compiler.module_regions")  # never imported: none
        if regions_by_module is not None:  # a module in a region a fast path skipped: reported
            regions_by_module.report_skipped(gm, self.ledger, f"{self.frame}/dynamo")
        start = len(self.ledger.entries)
        if self.decomposing:
            self.regions_in_dynamo = region_names(gm)
        try:
            compiled = self._aot(gm, example_inputs, decompositions, torch_called, **kwargs)
            self._report_lost_regions()
            return compiled
        except AnnotatedDuringTrace:
            # A region opened only while AOTAutograd traced (a custom op's backward formula):
            # the trace starts again with the table; the first attempt's ledger rows go.
            del self.ledger.entries[start:]
            self.effects.reset()
            self.decomposing = True
            with self.active(f"{self.frame}/dynamo"):
                decompositions = self._decompositions()
            return self._aot(gm, example_inputs, decompositions, torch_called, **kwargs)

    def _report_lost_regions(self) -> None:
        """A region in Dynamo's graph none of whose nodes reached the forward (or inference)
        graph compiled nothing, and no other check says so: AOTAutograd's trace dropped its
        annotation (a region inside flex_attention's score_mod, traced again on scalars) or its
        ops (unused results). A ledger row and, once per region per process, a warning."""
        lost = sorted(self.regions_in_dynamo - self.regions_reached)
        for name in lost:
            reason = (f"region {name} is in Dynamo's graph, but none of its ops reached"
                      f" {self.frame}'s forward graph with the region's annotation, so nothing of"
                      " it was compiled: AOTAutograd's trace dropped the annotation (a region"
                      " inside a body traced again, such as flex_attention's score_mod) or the"
                      " ops (results nothing uses); put the region around the op instead")
            self.ledger.add(LedgerEntry(name=f"region {name}", stage="regions", graph=self.frame,
                                        allowed=False, lite="region", kind="region",
                                        reason=reason))
            if name not in _WARNED_LOST:
                _WARNED_LOST.add(name)
                warnings.warn(f"lite_compiler: {reason}", LiteRegionNotCompiled, stacklevel=3)

    def _decompositions(self) -> dict[Any, Any]:
        # Inductor picks its decomposition table by config (fallback_random keeps random
        # ops whole): select it under the lite config the region compiles use. Its keys are the
        # registry's derived lite config (lite_compiler.config.derive_configs), reviewed there.
        # The table is imported first (its module's top level is torch's registrations): the
        # sweep reads the modules its decompositions live in (a helper they call by name).
        import torch._inductor.decomposition  # noqa: F401

        sweep_inductor()  # foreign code in Inductor is refused before the trace runs any of it
        with torch._inductor.config.patch(self.inductor_config):  # lite-guard: ignore[LG006]
            return selective_decomposition_table()

    def _aot(self, gm: torch.fx.GraphModule, example_inputs: list[Any], decompositions: Any,
             torch_called: dict[str, Any], **kwargs: Any) -> Any:
        from torch._dynamo.backends.common import aot_autograd

        backend = aot_autograd(
            fw_compiler=self.compiler("fw"),
            bw_compiler=self.compiler("bw"),
            inference_compiler=self.compiler("inference"),
            partition_fn=self.partition,
            keep_inference_input_mutations=True,
            decompositions=decompositions,
        )
        self.functorch_patch = {**self.functorch_config, **torch_called}
        with torch._functorch.config.patch(self.functorch_patch), \
                self.active(f"{self.frame}/aot"):
            check_torch_code(aot_autograd, "aot_autograd", "aot")
            compiled = backend(gm, example_inputs, **kwargs)
            if not any(name.startswith(f"{self.frame}/") for name in self.ledger.graph_code):
                # By effect: whatever ran in AOTAutograd's place never handed a graph over.
                guard.refuse_effect("aot", "AOTAutograd returned a compiled function without"
                                    " passing a forward or inference graph to the lite compiler")
            # What runs the checked graphs (AOTAutograd's run-time wrappers, torch.fx's __call__)
            # is torch's code: foreign code there runs as itself (provenance.foreign_at_run_time).
            for name, where in foreign_at_run_time(compiled).items():
                guard.check(name, "aot", "function", where=(
                    f"it runs each time the compiled function is called ({where}), around the"
                    " checked graphs; register it under this name, or remove the patch for lite"
                    " compiles"))
            return compiled


def lite_backend(gm: torch.fx.GraphModule, example_inputs: list[Any],
                 options: Mapping[str, Any] | None = None, **kwargs: Any) -> Any:
    """The ``torch_dynamo_backends`` entry point ``lite``; ``torch.compile(..., options=...)``
    arrives as ``options`` (lite_compiler.options lists what it may hold)."""
    return LiteCompiler(options=options)(gm, example_inputs, **kwargs)
