"""``backend="lite"``: AOTAutograd exactly as ``aot_eager`` runs it, plus regional Inductor.

Same partitioner and options as ``aot_eager`` (torch/_dynamo/backends/debugging.py), so the graph
outside annotated regions is literally what aot_eager runs. The decomposition table decomposes
only annotated ops, in the one trace. The forward/backward compilers scoop annotated nodes into
one submodule per region and compile those with Inductor; the rest runs as the plain FX graph.
"""

from __future__ import annotations

import contextlib
import itertools
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from lite_compiler import guard
from lite_compiler.config import derive_configs, registry, user_settings_overridden
from lite_compiler.decomposition import selective_decomposition_table
from lite_compiler.errors import LiteConfigError, LiteSettingOverridden
from lite_compiler.ledger import Ledger, LedgerEntry, new_ledger
from lite_compiler.regions import compile_regions

_frame_ids = itertools.count()


class LiteCompiler:
    """One compile of one Dynamo graph: its registry, its derived config, its ledger."""

    def __init__(self, registry_paths: Sequence[str] = (), options: Mapping[str, Any] | None = None):
        from lite_compiler.cudagraphs import parse_options

        self.cudagraphs = parse_options(options)  # options={"cudagraphs": True}: lite_compiler.cudagraphs
        self.graphs: Any = None  # the frame's CudaGraphs state, made in __call__
        self.registry = registry(tuple(registry_paths))
        self.inductor_config, self.functorch_config = derive_configs(self.registry)
        self.frame = f"graph{next(_frame_ids)}"
        self.ledger: Ledger = new_ledger("lite", self.frame)
        self._record_overridden_settings()

    def _record_overridden_settings(self) -> None:
        """A lite-off optimization the user switched on globally does not run in lite mode: the
        ledger and a warning say so, rather than the setting being silently ignored."""
        for key, user_value, lite_value in user_settings_overridden(self.inductor_config):
            reason = (f"torch._inductor.config.{key} = {user_value!r} is overridden: lite mode"
                      f" forces {lite_value!r} (registry); annotate a region with"
                      f" lite_compiler.region(..., **{{{key!r}: {user_value!r}}}) to ask for it there")
            self.ledger.add(LedgerEntry(name=f"config {key}", stage="config", graph=self.frame,
                                        allowed=False, lite="never", kind="config", reason=reason))
            warnings.warn(reason, LiteSettingOverridden, stacklevel=2)

    @contextlib.contextmanager
    def active(self, graph: str) -> Any:
        with guard.session("lite", self.registry, self.ledger, graph=graph):
            yield

    def _run_always_custom_passes(self, gm: torch.fx.GraphModule, keys: tuple[str, ...]) -> None:
        """Custom passes on the whole graph: every configured pass that is not lite = "region"
        (an unregistered or lite = "never" one is refused here by the guard). A "region" pass
        runs on region graphs only (lite_compiler.regions), so no pass runs twice."""
        for key, custom_pass in guard.configured_custom_passes():
            if key not in keys:
                continue
            entry = guard.custom_pass_entry(self.registry, custom_pass)
            if entry is not None and entry.lite == "region":
                if not key.startswith("post_grad_custom_"):
                    # Regions run post-grad custom passes only: this one would never run.
                    raise LiteConfigError(
                        f"custom pass '{entry.name}' is registered lite = \"region\" but installed"
                        f" as {key}, which never runs inside regions; install it as"
                        " post_grad_custom_pre_pass / post_grad_custom_post_pass, or register it"
                        " lite = \"always\" to run it on the whole graph")
                continue
            guard.run_custom_pass(key, custom_pass, gm.graph)
            gm.recompile()

    def compiler(self, kind: str) -> Callable[..., Any]:
        from torch._dynamo.backends.debugging import boxed_nop

        def compile_graph(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
            is_backward, is_inference = kind == "bw", kind == "inference"
            name = f"{self.frame}/{kind}"
            with self.active(name):
                self._run_always_custom_passes(
                    gm, ("post_grad_custom_pre_pass", "post_grad_custom_post_pass"))
                compile_regions(gm, name, is_inference=is_inference, is_backward=is_backward,
                                lite_config=self.inductor_config)
            self.ledger.graph_code[name] = gm.code
            compiled = boxed_nop(gm, example_inputs)
            if self.graphs is not None:
                compiled = self.graphs.wrap(kind, name, gm, example_inputs, compiled)
            return compiled

        return compile_graph

    def partition(self, joint: torch.fx.GraphModule, *args: Any, **kwargs: Any) -> Any:
        from functorch.compile import min_cut_rematerialization_partition

        with self.active(f"{self.frame}/joint"):
            self._run_always_custom_passes(joint, ("joint_custom_pre_pass", "joint_custom_post_pass"))
            with guard.timed("min_cut_rematerialization_partition", "aot"):
                return min_cut_rematerialization_partition(joint, *args, **kwargs)

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any], **kwargs: Any) -> Any:
        from torch._dynamo.backends.common import aot_autograd

        if self.cudagraphs:
            from lite_compiler.cudagraphs import CudaGraphs

            self.graphs = CudaGraphs(self.ledger, num_dynamo_inputs=len(example_inputs))
        with self.active(f"{self.frame}/dynamo"):
            self._run_always_custom_passes(gm, ("pre_grad_custom_pass",))
            # Inductor picks its decomposition table by config (fallback_random keeps random
            # ops whole): select it under the lite config the region compiles use.
            with torch._inductor.config.patch(self.inductor_config):
                decompositions = selective_decomposition_table()
        backend = aot_autograd(
            fw_compiler=self.compiler("fw"),
            bw_compiler=self.compiler("bw"),
            inference_compiler=self.compiler("inference"),
            partition_fn=self.partition,
            keep_inference_input_mutations=True,
            decompositions=decompositions,
        )
        with torch._functorch.config.patch(self.functorch_config), self.active(f"{self.frame}/aot"):
            return backend(gm, example_inputs, **kwargs)


def lite_backend(gm: torch.fx.GraphModule, example_inputs: list[Any],
                 options: Mapping[str, Any] | None = None, **kwargs: Any) -> Any:
    """The ``torch_dynamo_backends`` entry point ``lite``; ``torch.compile(..., options=...)``
    arrives as ``options`` (lite_compiler.cudagraphs.OPTIONS lists what it may hold)."""
    return LiteCompiler(options=options)(gm, example_inputs, **kwargs)


def register() -> None:
    """Register ``backend="lite"`` with Dynamo (the entry point does this without an import)."""
    from torch._dynamo.backends.registry import _BACKENDS, _COMPILER_FNS, register_backend

    # _BACKENDS maps names to entry points, _COMPILER_FNS to the loaded functions: registering
    # again (a second _install) must be a no-op, not Dynamo's "duplicate name" error.
    if _COMPILER_FNS.get("lite") is not lite_backend:
        _BACKENDS.pop("lite", None)
        _COMPILER_FNS.pop("lite", None)
        register_backend(name="lite", compiler_fn=lite_backend)
