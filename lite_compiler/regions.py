"""Regional compile: scoop annotated nodes into one submodule per region id, compile each with Inductor.

The graph around the regions is left exactly as AOTAutograd produced it, so it runs the same
ATen ops as ``aot_eager``. Regions with different ids are partitioned separately and never fuse;
each region is compiled under its own ``inductor_configs`` on top of the derived lite config.
"""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Iterator, Mapping
from typing import Any

import torch
import torch.fx

from lite_compiler import custom_passes, guard
from lite_compiler.annotate import annotation_of, region_configs, region_key
from lite_compiler.errors import LiteCompilerError, LiteRegionConfigError
from lite_compiler.ledger import LedgerEntry
from lite_compiler.session import scope as session_scope

SUBMOD_PREFIX = "__lite_region_"

# Keys the lite compiler sets for region compiles whatever the registry says: a region graph is
# already selectively decomposed and is entirely annotated, so upstream's whole-graph lite
# switches must not decompose or fall back again; the FX graph cache would skip the passes the
# guard has to see.
REGION_FIXED_CONFIG = {
    "fallback_by_default": False,
    "selective_decompose": False,
    "fx_graph_cache": False,
}
_FIXED_WHY = {
    "fallback_by_default": "a region is entirely annotated: nothing in it may fall back",
    "selective_decompose": "the region graph is already selectively decomposed",
    "fx_graph_cache": "a cache hit would skip every pass the guard must see",
}


def _is_annotated(node: torch.fx.Node) -> bool:
    return node.op not in ("placeholder", "output", "get_attr") and annotation_of(node.meta) is not None


def is_region_node(node: torch.fx.Node) -> bool:
    """Whether a node of a fw/bw graph belongs to a region: annotated (before scooping), a
    compiled region's call or one of its outputs (after), or a get_attr only regions use. The
    effect check leaves these out when it compares the graph outside regions."""
    import operator

    if _is_annotated(node):
        return True
    if node.op == "call_function" and isinstance(node.target, CompiledRegion):
        return True
    if node.op == "call_function" and node.target is operator.getitem and node.args \
            and isinstance(node.args[0], torch.fx.Node) and is_region_node(node.args[0]):
        return True
    return node.op == "get_attr" and bool(node.users) and all(is_region_node(u) for u in node.users)


def group_regions(gm: torch.fx.GraphModule) -> dict[Any, list[torch.fx.Node]]:
    regions: dict[Any, list[torch.fx.Node]] = {}
    for node in gm.graph.nodes:
        if _is_annotated(node):
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


def validate_configs(key: Any, configs: Mapping[str, Any]) -> None:
    """A region may set a key only as the registry's ``region`` policy allows, to a value of the
    key's type (registry ``type`` and the live torch config's); anything else is refused."""
    import torch._inductor.config as inductor_config

    known = inductor_config.get_config_copy()
    session = guard.current_session()
    registry = session.registry if session is not None else None
    for name, value in configs.items():
        where = f"region {key!r}: inductor_configs sets '{name}' = {value!r}"
        fix = "; remove it from lite_compiler.region(...) / the compile_with_inductor annotation"
        if name in REGION_FIXED_CONFIG:
            raise LiteRegionConfigError(
                f"{where}, but lite mode fixes {name} to {REGION_FIXED_CONFIG[name]!r} for every"
                f" region ({_FIXED_WHY.get(name, 'the guard depends on it')}){fix}")
        if name not in known:
            close = difflib.get_close_matches(name, list(known), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise LiteRegionConfigError(
                f"region {key!r}: inductor_configs names '{name}', which is not a key of"
                f" torch._inductor.config{hint}; fix the key in lite_compiler.region(...) /"
                " the compile_with_inductor annotation")
        live_type = getattr(inductor_config._config.get(name), "value_type", None)
        if live_type is not None and not value_has_type(value, live_type):
            raise LiteRegionConfigError(
                f"{where}, but torch's {name} is {_type_name(live_type)}, not"
                f" {type(value).__name__}{fix} or give it a value of that type")
        if registry is None:
            continue
        entry = registry.get_config(name, "inductor")
        if entry is None:
            raise LiteRegionConfigError(
                f"{where}, but no registry classifies {name}, so lite mode cannot tell whether a"
                " region may change it (fail closed); classify it in a [[config]] entry with a"
                f" region policy, or{fix[1:]}")
        allowed, why = entry.region_allows(value)
        if not allowed:
            raise LiteRegionConfigError(f"{where}, refused: {why}{fix}")


def region_overrides(registry: Any, configs: Mapping[str, Any]) -> list[tuple[str, Any, str]]:
    """(key, value, policy) of each key a region sets, for its ledger rows."""
    rows = []
    for name, value in configs.items():
        entry = registry.get_config(name, "inductor") if registry is not None else None
        policy = entry.region_policy if entry is not None else "unclassified"
        rows.append((name, value, policy if isinstance(policy, str) else f"one of {policy!r}"))
    return rows


def value_has_type(value: Any, expected: Any) -> bool:
    """Whether ``value`` fits torch's annotated config type (bool is not an int here)."""
    import types
    import typing

    if expected is Any or expected is typing.Any:
        return True
    if expected is None or expected is type(None):
        return value is None
    origin = typing.get_origin(expected)
    if origin in (typing.Union, types.UnionType):
        return any(value_has_type(value, arg) for arg in typing.get_args(expected))
    if origin is typing.Literal:
        return value in typing.get_args(expected)
    if origin is not None:
        expected = origin  # list[str] -> list, Callable[...] -> collections.abc.Callable
    if not isinstance(expected, type):
        return True  # a type torch wrote in a form we cannot check: no claim either way
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        return True
    if expected is int and isinstance(value, bool):
        return False
    try:
        return isinstance(value, expected)
    except TypeError:
        return True


def _type_name(expected: Any) -> str:
    return getattr(expected, "__name__", None) or str(expected).replace("typing.", "")


def scoop(gm: torch.fx.GraphModule) -> list[tuple[str, Any, dict[str, Any]]]:
    """Fuse each region's nodes into submodules. Returns (submodule name, region id, configs)."""
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
    from torch.fx.passes.operator_support import create_op_support
    from torch.fx.passes.utils.fuser_utils import fuse_by_partitions

    regions = group_regions(gm)
    if not regions:
        return []
    partitions: list[dict[torch.fx.Node, int | None]] = []
    owners: list[tuple[Any, dict[str, Any]]] = []
    for key, nodes in regions.items():
        configs = configs_of(key, nodes)
        validate_configs(key, configs)
        members = set(nodes)
        support = create_op_support(lambda _mods, node, members=members: node in members)
        partitioner = CapabilityBasedPartitioner(gm, support, allows_single_node_partition=True)
        for partition in partitioner.propose_partitions():
            partitions.append(partition.nodes)
            owners.append((key, configs))
    # Order partitions by their first node so submodule names follow graph order.
    order = {node: i for i, node in enumerate(gm.graph.nodes)}
    ranked = sorted(range(len(partitions)), key=lambda i: min(order[n] for n in partitions[i]))
    partitions = [partitions[i] for i in ranked]
    owners = [owners[i] for i in ranked]
    with torch.fx.traceback.preserve_node_meta(enable=False):
        fuse_by_partitions(gm, partitions, prefix=SUBMOD_PREFIX, always_return_tuple=True)
    names = [f"{SUBMOD_PREFIX}{i}" for i in range(len(owners))]
    for name in names:
        _inline_get_attr_inputs(gm, name)
        _bind_size_symbols(gm, name)
    gm.graph.lint()
    return [(name, key, configs) for name, (key, configs) in zip(names, owners)]


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

    def __init__(self, compiled: Any, name: str):
        self.compiled, self.__name__ = compiled, name
        self.__qualname__ = name
        self._call = compiled

    def __call__(self, *args: Any) -> Any:
        out = self._call(list(args))
        self._call = getattr(self.compiled, "current_callable", None) or self.compiled
        return out


def compile_regions(
    gm: torch.fx.GraphModule,
    graph_name: str,
    is_inference: bool,
    is_backward: bool,
    lite_config: Mapping[str, Any],
) -> list[str]:
    """Scoop and compile every region of ``gm`` in place; returns the region submodule names."""
    from torch._inductor.compile_fx import compile_fx_inner

    scooped = scoop(gm)
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
            _run_region_custom_passes(submod)
            with _scheduler_custom_passes_guarded(), _unwrapped_lite_errors(), _own_output_strides():
                compiled = compile_fx_inner(
                    submod, fake_inputs, is_inference=is_inference, is_backward=is_backward)
        session = guard.current_session()
        if session is not None:
            session.ledger.region_modules[region_graph] = _modules_in(submod)
        source = getattr(compiled, "source_code", None)
        if session is not None and source:
            session.ledger.region_code[region_graph] = source
        with gm.graph.inserting_after(call):
            new = gm.graph.call_function(CompiledRegion(compiled, submod_name), tuple(call.args))
            new.meta = call.meta
        call.replace_all_uses_with(new)
        gm.graph.erase_node(call)
        delattr(gm, submod_name)
    if scooped:
        gm.recompile()
    return [name for name, _, _ in scooped]


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
        if isinstance(exc.inner_exception, LiteCompilerError):
            raise exc.inner_exception from None
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
