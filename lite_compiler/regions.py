"""Regional compile: compile each scooped region with Inductor and call it from the FX graph.

The graph around the regions is left exactly as AOTAutograd produced it, so it runs the same
ATen ops as ``aot_eager``. Regions with different ids are partitioned separately and never fuse
(lite_compiler.scooping does the FX surgery); each region is compiled under its own
``inductor_configs`` (allowed by lite_compiler.region_config) on top of the derived lite config.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

import torch
import torch.fx

from lite_compiler import custom_passes, guard
from lite_compiler.annotate import LiteRegionNotCompiled, annotation_of, describe
from lite_compiler.cpp_compiler import check_cpp_compiler
from lite_compiler.config import config_drift
from lite_compiler.errors import LiteCompilerError
from lite_compiler.generated_code import check_region_module
from lite_compiler.ledger import LedgerEntry
from lite_compiler.provenance import check_inductor_classes, check_torch_code, inductor_modules_imported
from lite_compiler.region_config import REGION_FIXED_CONFIG, region_overrides
from lite_compiler.scooping import SUBMOD_PREFIX, is_annotated, scoop
from lite_compiler.session import scope as session_scope

__all__ = ["REGION_FIXED_CONFIG", "SUBMOD_PREFIX", "CompiledRegion", "compile_regions",
           "is_region_node", "scoop"]


def is_region_node(node: torch.fx.Node) -> bool:
    """Whether a node of a fw/bw graph belongs to a region: annotated (before scooping), a
    compiled region's call or one of its outputs (after), or a get_attr only regions use. The
    effect check leaves these out when it compares the graph outside regions."""
    import operator

    if is_annotated(node):
        return True
    if node.op == "call_function" and isinstance(node.target, CompiledRegion):
        return True
    if node.op == "call_function" and node.target is operator.getitem and node.args \
            and isinstance(node.args[0], torch.fx.Node) and is_region_node(node.args[0]):
        return True
    return node.op == "get_attr" and bool(node.users) and all(is_region_node(u) for u in node.users)


def _fake_input(node: Any, region: str) -> Any:
    """The example value Inductor compiles the region for: the node's fake value."""
    if not isinstance(node, torch.fx.Node):
        return node
    for key in ("val", "example_value"):
        if key in node.meta:
            return node.meta[key]
    raise LiteCompilerError(
        f"region {region}: input '{node.name}' ({node.op} {node.target}) has no fake value"
        " (meta['val']); lite_compiler cannot compile this region with Inductor. Move the op that"
        " produces it inside the region or out of it, and report this case")


class CompiledRegion:
    """Calls an Inductor-compiled region from the surrounding FX graph (boxed convention inside).

    Cheap boundary: the first call goes through the compiled graph's ``__call__`` (it finishes
    Inductor's autotune-cache bookkeeping); later calls go straight to its ``current_callable``,
    the generated code behind Inductor's input-alignment wrapper, so the kernels and any alignment
    copy are exactly the same, minus the per-call bookkeeping (debug, profiler, cache, metrics)."""

    def __init__(self, compiled: Any, name: str, fake_inputs: list[Any] | None = None):
        self.compiled, self.__name__ = compiled, name
        self.__qualname__ = name
        self._call = compiled
        self._layouts = _static_layouts(fake_inputs or [])
        self._restride = False

    def __call__(self, *args: Any) -> Any:
        if self._restride:
            return self._call(self._restrided(args))
        try:
            out = self._call(list(args))
        except AssertionError:
            # The region's code asserts its inputs' strides before computing anything. An input
            # made outside the region by an ATen kernel can be laid out other than its meta
            # kernel said (fake strides): copy such inputs into the expected layout (same values).
            if not any(self._mismatched(args)):
                raise
            self._restride = True
            out = self._call(self._restrided(args))
        self._call = getattr(self.compiled, "current_callable", None) or self.compiled
        return out

    def _mismatched(self, args: tuple) -> list[bool]:
        return [layout is not None and isinstance(arg, torch.Tensor) and arg.stride() != layout[1]
                and tuple(arg.shape) == layout[0] for arg, layout in zip(args, self._layouts)]

    def _restrided(self, args: tuple) -> list[Any]:
        return [torch.empty_strided(arg.shape, layout[1], dtype=arg.dtype, device=arg.device).copy_(arg)
                if wrong else arg
                for arg, layout, wrong in zip(args, self._layouts, self._mismatched(args))]


def sweep_inductor(again: bool = False) -> None:
    """Once per compile with regions, before Inductor's code first runs in it (the decompositions
    of the trace; LiteCompiler._decompositions), and ``again`` when the lazy backward compiles: a
    method patched into an Inductor class (or a torch class it inherits from), a function put in
    an Inductor module or container, runs as itself (lite_compiler.provenance). Also again
    whenever torch imported more of Inductor since the last sweep (before the regions lower: an
    import hook can patch what it loads), and once a graph's regions compiled, before their code
    can run (code run while they compiled can patch Inductor; an unchanged Inductor costs ~5 ms)."""
    session = guard.current_session()
    if session is None or session.effects is None:
        return
    imported = inductor_modules_imported()
    if session.effects.swept_inductor == imported and not again:
        return
    session.effects.swept_inductor = imported
    check_inductor_classes(session.effects.judged)


def python_kernels_traced(gm: torch.fx.GraphModule) -> bool:
    """Whether AOTAutograd's trace of ``gm`` ran Python kernels registered outside torch: an op
    of the graph (or of its region submodules) with a fake kernel registered from Python
    (``torch.library`` custom ops, ``register_fake``) or a Python-dispatcher kernel (``py_impl``)
    whose code is not torch's. Such code ran after the compile's first sweep."""
    from torch._library.simple_registry import singleton

    from lite_compiler.provenance import foreign_identity

    registered = getattr(singleton, "_data", {})
    for module in gm.modules():
        graph = getattr(module, "graph", None)
        for node in graph.nodes if graph is not None else ():
            op = node.target
            if node.op != "call_function" or not isinstance(op, torch._ops.OpOverload):
                continue
            entry = registered.get(op._name)  # (read, not find(): that adds an entry per op)
            kernel = getattr(getattr(entry, "fake_impl", None), "kernel", None)
            if kernel is not None or any(foreign_identity(k) for k in op.py_kernels.values()):
                return True
    return False


def _static_layouts(fake_inputs: list[Any]) -> list[tuple[tuple[int, ...], tuple[int, ...]] | None]:
    """(shape, strides) the region was compiled for, per input; None where symbolic or no tensor."""
    layouts: list[tuple[tuple[int, ...], tuple[int, ...]] | None] = []
    for fake in fake_inputs:
        if isinstance(fake, torch.Tensor) and all(
                isinstance(d, int) for d in (*fake.shape, *fake.stride())):
            layouts.append((tuple(fake.shape), tuple(fake.stride())))
        else:
            layouts.append(None)
    return layouts


def refuse_config_drift(patch: Mapping[str, Any], module: str, stage: str, when: str,
                        graph: str | None = None) -> None:
    """Refuse (by effect) a key of ``patch`` (what lite mode set on torch's ``module`` config)
    whose live value is another one now (lite_compiler.config.config_drift)."""
    if not guard.enforcing():
        return
    drift = config_drift(dict(patch), module)
    if drift:
        key, value, now = drift[0]
        guard.refuse_effect(stage, (
            f"torch._{module}.config.{key} is {now!r} {when}, but lite mode set it to {value!r}"
            f"{f' (and {len(drift) - 1} more key(s))' if len(drift) > 1 else ''}: code the compile"
            " ran (a custom op's fake kernel, a callback) or another thread (its own config.patch:"
            " the config is one for the whole process) changed it after lite mode set it; leave"
            " torch's config alone while a lite compile runs"), graph=graph)


def compile_regions(
    gm: torch.fx.GraphModule,
    graph_name: str,
    is_inference: bool,
    is_backward: bool,
    lite_config: Mapping[str, Any],
    fusion: Any = None,
) -> list[str]:
    """Scoop and compile every region of ``gm`` in place; returns the region submodule names.

    ``fusion`` (lite_compiler.bitwise_fusion.FusionHooks) handles the regions made of fusion
    groups: ``decompose(key, submod, fake_inputs)`` gives the graph Inductor compiles (their ops
    were not decomposed in the trace), ``compiled_before`` / ``remember`` let an identical group
    (the same op in every layer) reuse one compile, ``contained(key)`` keeps a group that Inductor cannot
    compile from failing the whole compile (it runs as ATen), and ``wrap(key, aten_module,
    compiled, region_graph)`` gives the callable the graph calls; ``aten_module`` runs the
    region's nodes as the ATen ops they were, copied before anything changed them."""
    for path, body in nested_region_bodies(gm, graph_name):  # regions inside op bodies first
        compile_regions(body, f"{graph_name}/{path}", is_inference=is_inference,
                        is_backward=is_backward, lite_config=lite_config)
    scooped = scoop(gm)
    if not scooped:
        return []  # no region: Inductor's compiler is never imported (lazy Inductor)
    from torch._inductor.compile_fx import compile_fx_inner

    # The backward compiles later (at the first .backward()): what was patched meanwhile counts;
    # so does what user code the trace ran (a custom op's Python fake kernel) patched; and
    # Inductor's compiler, imported just above, may have brought modules the first sweep missed.
    sweep_inductor(again=is_backward or python_kernels_traced(gm))
    for submod_name, key, configs in scooped:
        (call,) = gm.graph.find_nodes(op="call_module", target=submod_name)
        submod = getattr(gm, submod_name)
        region_graph = f"{graph_name}/region[{key}]/{submod_name.removeprefix(SUBMOD_PREFIX)}"
        fake_inputs = [_fake_input(arg, region_graph) for arg in call.args]
        with session_scope(region_graph, in_region=True), \
                torch._inductor.config.patch({**lite_config, **configs, **REGION_FIXED_CONFIG}), \
                guard.timed("regional_inductor", "lowering"):
            session = guard.current_session()
            if session is not None and session.registry is not None:
                for name, value, policy in region_overrides(session.registry, configs):
                    session.ledger.add(LedgerEntry(
                        name=f"config {name}", stage="config", graph=region_graph, allowed=True,
                        lite="region", kind="config",
                        reason=f"region {key!r} sets {name} = {value!r} (registry region policy: {policy})"))
            if session is not None and session.effects is not None:
                # From here to lowering, only registered passes may change the region graph.
                session.effects.expect(submod.graph, "the region's scooped graph")
            if session is not None and session.registry is not None:
                # Config set since the compile began (by a custom op's code, say), and the
                # region's own configs: user code there is checked before Inductor reads it.
                custom_passes.refuse_disallowed(session.registry)
            _run_region_custom_passes(submod)
            _decompose_bodies(submod)
            aten_module = _aten_copy(submod) if fusion is not None else None
            compiled = None  # stays None only when ``fusion.contained`` kept a group's failure
            with _scheduler_custom_passes_guarded(), _unwrapped_lite_errors(), _own_output_strides(), \
                    fusion.contained(key) if fusion is not None else contextlib.nullcontext():
                if fusion is not None and fusion._ours(key):
                    _check_group_decompositions(submod)  # fusion decomposes without the trace's table
                lowered = fusion.decompose(key, submod, fake_inputs) if fusion is not None else submod
                compiled = fusion.compiled_before(key, lowered, fake_inputs) if fusion is not None else None
                if compiled is None:
                    check_torch_code(compile_fx_inner, "compile_fx_inner", "lowering")
                    if not any(getattr(f, "device", None) is not None and f.device.type != "cpu"
                               for f in fake_inputs):  # C++ kernels: the compiler, by effect
                        check_cpp_compiler(region_graph)
                    seen = session.effects.lowerings_seen if session and session.effects else None
                    compiled = compile_fx_inner(
                        lowered, fake_inputs, is_inference=is_inference, is_backward=is_backward)
                    if seen is not None and session.effects.lowerings_seen == seen:
                        # By effect: Inductor returned code no GraphLowering here produced.
                        guard.refuse_effect("lowering", "the region was compiled without being"
                                            " lowered in this process under the guard (an"
                                            " out-of-process compile mode or a cache hit); lite"
                                            " mode cannot see its passes. Unset"
                                            " TORCHINDUCTOR_FX_COMPILE_MODE and caches for lite"
                                            " compiles")
                    # The config the region compiled under is the one lite mode set, from the
                    # first key to the last: a change since (a fake kernel run while the region
                    # lowered, another thread's config.patch) is refused before its code runs.
                    refuse_config_drift({**lite_config, **configs, **REGION_FIXED_CONFIG},
                                        "inductor", "lowering", "while the region compiled",
                                        region_graph)
                    # What runs is the code generated here, not a file found in the cache.
                    check_region_module(compiled, region_graph)
                    if fusion is not None:
                        fusion.remember(key, lowered, fake_inputs, compiled, region_graph)
        session = guard.current_session()
        if session is not None:
            session.ledger.region_modules[region_graph] = _modules_in(submod)
        source = getattr(compiled, "source_code", None)
        if session is not None and source:
            session.ledger.region_code[region_graph] = source
        region_call: Any = CompiledRegion(compiled, submod_name, fake_inputs) if compiled is not None else None
        if fusion is not None:
            region_call = fusion.wrap(key, aten_module, region_call, region_graph)
        with gm.graph.inserting_after(call):
            new = gm.graph.call_function(region_call, tuple(call.args))
            new.meta = call.meta
        call.replace_all_uses_with(new)
        gm.graph.erase_node(call)
        delattr(gm, submod_name)
    # Inductor is swept again once the regions compiled, before their code can run: code that ran
    # while they compiled (a custom op's fake kernel, a logging handler on Inductor's loggers, an
    # import hook, another thread) may have patched it after the sweep above, and the regions'
    # kernels were generated with it.
    sweep_inductor(again=True)
    gm.recompile()
    return [name for name, _, _ in scooped]


def _decompose_bodies(submod: torch.fx.GraphModule) -> None:
    """Decompose the bodies of the higher-order ops in a region (a ``torch.cond`` put in one) as
    the region's own ops were: the trace decomposes an op by its annotation, and a body traced
    again by AOTAutograd may carry none, so Inductor would find ops it only knows decomposed."""
    bodies = {name: module for name, module in submod.named_children()
              if isinstance(module, torch.fx.GraphModule)}
    if not bodies:
        return
    from torch._guards import detect_fake_mode
    from torch._inductor.decomposition import select_decomp_table
    from torch.fx.experimental.proxy_tensor import make_fx

    for name, body in bodies.items():
        _decompose_bodies(body)  # bodies of ops in this body first
        args = [node.meta.get("val") for node in body.graph.find_nodes(op="placeholder")]
        fake_mode = detect_fake_mode(args)
        if fake_mode is None or any(a is None for a in args):
            continue  # nothing to trace with: Inductor reports what it cannot lower
        with fake_mode, torch.fx.traceback.preserve_node_meta():
            traced = make_fx(body, decomposition_table=select_decomp_table())(*args)
        setattr(submod, name, traced)


_WARNED_NESTED: set[tuple[str, str]] = set()
# Higher-order ops whose bodies run as plain calls of their graph on tensors (their eager
# implementations call ``body(*operands)``), so a compiled region inside works as at top level.
# Other bodies (flex_attention's score_mod runs under vmap; scan's combine_fn, ...) are not
# known to: a region there is reported instead.
_PLAIN_CALL_BODIES = ("cond", "while_loop", "invoke_subgraph", "map_impl")


def nested_region_bodies(gm: torch.fx.GraphModule,
                         graph_name: str) -> list[tuple[str, torch.fx.GraphModule]]:
    """The bodies of ``gm``'s higher-order ops that hold a region of their own (the op itself
    outside any region: a region around the op compiles the body with it), to be compiled like
    the graph's own regions. A region in a body that cannot hold compiled code is reported: a
    ledger row (refused, kind "region") and once per body and region per process a
    ``LiteRegionNotCompiled`` warning; its ops run as ATen ops (decomposed where the trace
    decomposed them for the region)."""
    # The op nodes each body is handed to, by the body's attribute name in its parent graph.
    users: dict[str, list[torch.fx.Node]] = {}
    for module in gm.modules():
        if isinstance(module, torch.fx.GraphModule):
            for node in module.graph.find_nodes(op="get_attr"):
                users.setdefault(node.target, []).extend(node.users)
    compilable: list[tuple[str, torch.fx.GraphModule]] = []
    refused: dict[str, tuple[str, set[str]]] = {}
    for path, module in gm.named_children():
        if not isinstance(module, torch.fx.GraphModule):
            continue
        hops = users.get(path, [])
        if any(annotation_of(hop.meta) is not None for hop in hops):
            continue  # the op itself is in a region: Inductor compiles its body with it
        keys = {describe(annotation_of(node.meta)) for sub in module.modules()
                if isinstance(sub, torch.fx.GraphModule) for node in sub.graph.nodes
                if annotation_of(node.meta) is not None}
        if not keys:
            continue
        ops = sorted({str(hop.target) for hop in hops})
        if ops and all(op in _PLAIN_CALL_BODIES for op in ops):
            compilable.append((path, module))
        else:
            refused[path] = (", ".join(ops) or "a higher-order op", keys)
    session = guard.current_session()
    new: list[str] = []
    for path, (op, keys) in refused.items():
        for key in sorted(keys):
            reason = (f"region {key} is annotated inside the body '{path}' of {op}; lite mode"
                      f" compiles regions inside the bodies of {', '.join(_PLAIN_CALL_BODIES)}"
                      " only, so its ops run as ATen ops (the ones the trace decomposed for the"
                      " region, decomposed)")
            if session is not None:
                session.ledger.add(LedgerEntry(
                    name=f"region {key} in {path}", stage="regions", graph=graph_name,
                    allowed=False, lite="region", kind="region", reason=reason))
            if (path, key) not in _WARNED_NESTED:
                _WARNED_NESTED.add((path, key))
                new.append(reason)
    if new:
        more = f" (and {len(new) - 1} more, listed in lite_compiler.last_ledger())" if len(new) > 1 else ""
        warnings.warn(f"lite_compiler: {new[0]}{more}: nothing of it was compiled; put the"
                      " region around the higher-order op instead", LiteRegionNotCompiled,
                      stacklevel=2)
    return compilable


def _check_group_decompositions(submod: torch.fx.GraphModule) -> None:
    """A fusion group is decomposed by make_fx with Inductor's table (lite_compiler.fusion_regions),
    not through the trace's selective wrappers: the entry of each op the group holds is asked
    about first, as the wrappers ask (foreign code, or torch's decomposition of another op)."""
    from torch._inductor.decomposition import select_decomp_table

    from lite_compiler.provenance import check_region_decomposition

    table = select_decomp_table()
    for module in submod.modules():
        graph = getattr(module, "graph", None)
        for node in graph.nodes if graph is not None else ():
            try:
                decomposition = table.get(node.target) if node.op == "call_function" else None
            except TypeError:  # an unhashable target has no decomposition
                continue
            if decomposition is not None:
                check_region_decomposition(node.target, decomposition)


def _aten_copy(submod: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """The region's graph as it is now, in a module of its own: Inductor rewrites the original."""
    graph = torch.fx.Graph()
    graph.output(graph.graph_copy(submod.graph, {}))
    return torch.fx.GraphModule(submod, graph)


def _modules_in(submod: torch.fx.GraphModule) -> list[str]:
    """The modules ``module_regions`` put into this region, from the nodes' annotations."""
    from lite_compiler.annotate import region_module

    names = {region_module(annotation_of(node.meta)) for node in submod.graph.nodes
             if node.op not in ("placeholder", "output", "get_attr")}
    return sorted(name for name in names if name is not None)


def _run_region_custom_passes(submod: torch.fx.GraphModule) -> None:
    """User post-grad custom passes registered lite = "region" run on region graphs (post_grad
    passes are off in lite). Every other configured pass already ran (or was refused) on the
    whole fw/bw graph, region nodes included (LiteCompiler._run_always_custom_passes)."""
    session = guard.current_session()
    if session is None or session.registry is None:
        return
    for hook, custom_pass in custom_passes.configured(session.registry, stages=("post_grad",)):
        entry = custom_passes.entry_of(session.registry, custom_pass)
        if entry is not None and entry.lite == "region":
            custom_passes.run(hook, custom_pass, submod.graph)
    submod.recompile()


@contextlib.contextmanager
def _own_output_strides() -> Iterator[None]:
    """Inductor records a graph's output strides on the tracing context; a region is not the graph."""
    context = torch._guards.TracingContext.try_get()
    saved = context.output_strides if context is not None else None
    if context is not None:
        context.output_strides = []
    try:
        yield
    finally:
        if context is not None:
            context.output_strides = saved


@contextlib.contextmanager
def _unwrapped_lite_errors() -> Iterator[None]:
    """Inductor wraps what a pass raises in InductorError; give the user our error itself."""
    from torch._inductor.exc import InductorError

    try:
        yield
    except InductorError as exc:
        inner, seen = exc.inner_exception, 0
        while inner is not None and not isinstance(inner, LiteCompilerError) and seen < 8:
            # a LoweringException around it (raised inside a lowering; "from None" keeps it
            # as the context), ...
            inner = getattr(inner, "inner_exception", None) or inner.__cause__ or inner.__context__
            seen += 1
        if isinstance(inner, LiteCompilerError):
            raise inner from None
        raise


class _scheduler_custom_passes_guarded:
    """Inductor itself calls the scheduler-level custom passes (registry: custom hooks of stage
    scheduler); wrap each pass they hold so the guard sees it when Inductor calls it."""

    def __enter__(self) -> None:
        import torch._inductor.config as config

        session = guard.current_session()
        patch: dict[str, Any] = {}
        hooks = custom_passes.custom_hooks(session.registry) if session and session.registry else ()
        for hook in hooks:
            value = getattr(hook.config, hook.key, None)
            if hook.stage == "scheduler" and hook.module == config.__name__ and value is not None:
                patch[hook.key] = custom_passes.guarded_value(hook, value)
        self._patch = config.patch(patch)
        self._patch.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self._patch.__exit__(*exc)
