"""Regions for models you do not edit: put modules into regions by instance, class or name.

    import lite_compiler
    from transformers.models.llama.modeling_llama import LlamaMLP, LlamaRMSNorm

    with lite_compiler.module_regions(model, [
        lite_compiler.RegionRule(LlamaRMSNorm, id="norm"),
        lite_compiler.RegionRule(LlamaMLP, id="mlp", configs={"cpp.simdlen": 8}),
        lite_compiler.RegionRule("lm_head", id="head"),
    ]) as regions:
        compiled = torch.compile(model, backend="lite")
        compiled(x)
    print(regions.assignments)            # {"model.norm": "norm", "model.layers.0.mlp": "mlp", ...}

Each matched module's ``forward`` runs inside ``lite_compiler.region(id, **configs)``, exactly as
if its code had a ``with`` block around its body; nothing else about the module changes. The
wrapper is an instance attribute holding a bound method, so ``copy.deepcopy`` of the model keeps
its regions (bound to the copy), and ``remove()`` (or leaving the ``with``) restores each module's
``__dict__`` as it was. Apply before ``torch.compile``: Dynamo traces the forward it finds.

Matching: a class matches its instances (``isinstance``), a module object matches itself, a
string is an ``fnmatch`` pattern over qualified names from ``model.named_modules()`` ("" is the
model itself). A module matched by two rules is an error (which region wins would be a guess);
a nested match is fine: the inner module's ops belong to the inner region. A rule that matches
nothing is an error too: a typo must not silently compile nothing; so is one that matches only
containers without a forward (``ModuleList``, ``ModuleDict``: never called, they are skipped).

A module whose forward never runs gets no region: a fast path can skip it (``nn.TransformerEncoderLayer``
in eval under ``no_grad`` computes the whole layer in one fused op and calls none of its submodules).
Each lite compile checks, by effect, Dynamo's graph: a module in a region none of whose ops are in
the graph although its parent's are is reported, as a ledger row and one ``LiteRegionNotCompiled``
warning (``report_skipped``), never skipped silently.
"""

from __future__ import annotations

import fnmatch
import warnings
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import torch

from lite_compiler.annotate import (
    ANNOTATION_KEY,
    LiteRegionNotCompiled,
    annotation_of,
    region_annotation,
    region_module,
    warn_if_not_compiled,
)
from lite_compiler.ledger import Ledger, LedgerEntry

# Instance attributes the wrapper keeps on a module (set with object.__setattr__: not submodules).
_SPEC_ATTR = "_lite_region_annotation"
_INNER_ATTR = "_lite_region_inner_forward"
_MISSING = object()
# Handles whose regions are applied: each lite compile checks their modules (report_skipped).
# Weak: a handle nobody keeps (and its model) is not kept alive by the check.
_LIVE: weakref.WeakSet[ModuleRegions] = weakref.WeakSet()
_WARNED_SKIPPED: set[tuple[int, str]] = set()


def _region_config_error(message: str) -> Exception:
    # lite_compiler.errors imports torch._dynamo (its classes subclass Dynamo's): only when raising,
    # so `import lite_compiler` stays free of Dynamo (docs/first-call.md).
    from lite_compiler.errors import LiteRegionConfigError

    return LiteRegionConfigError(message)


@dataclass(frozen=True)
class RegionRule:
    """Which modules go into which region.

    ``match``: an ``nn.Module`` subclass, a module instance, or a qualified-name pattern.
    ``id``: the region id; ``"{name}"`` in it is replaced by the module's qualified name (one
    region per instance). Default: the class name, the pattern, or the instance's qualified name.
    ``configs``: Inductor config overrides for this region (as ``lite_compiler.region(**configs)``).
    """

    match: Any
    id: Any = None  # noqa: A003
    configs: dict[str, Any] = field(default_factory=dict)

    def matches(self, name: str, module: torch.nn.Module) -> bool:
        if isinstance(self.match, type):
            return isinstance(module, self.match)
        if isinstance(self.match, torch.nn.Module):
            return module is self.match
        if isinstance(self.match, str):
            return fnmatch.fnmatchcase(name, self.match)
        raise _region_config_error(
            f"RegionRule match {self.match!r} is not a module class, a module or a name pattern;"
            " pass one of those")

    def region_id(self, name: str) -> Any:
        if self.id is None:
            if isinstance(self.match, type):
                return self.match.__name__
            if isinstance(self.match, str):
                return self.match
            return name or "model"
        if isinstance(self.id, str):
            return self.id.replace("{name}", name or "model")
        return self.id

    def describe(self) -> str:
        match = self.match.__qualname__ if isinstance(self.match, type) else (
            repr(self.match) if isinstance(self.match, str) else "a module instance")
        return f"RegionRule({match}, id={self.id!r})"


def _region_forward(self: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
    """The forward a matched module gets: its own forward, inside its region annotation."""
    import torch.fx.traceback as fx_traceback

    inner = self.__dict__[_INNER_ATTR]
    # Called as plain functions, never through ``function.__get__``: torch 2.11's Dynamo cannot
    # trace that builtin and broke the graph at every region (bench/gpu_graph_breaks.py).
    if inner is None:
        forward, bound = type(self).forward, (self,)
    elif isinstance(inner, _StaticForward):
        forward, bound = inner.fn, ()
    else:
        forward, bound = inner, (self,)
    annotation = self.__dict__[_SPEC_ATTR]
    warn_if_not_compiled(annotation, stacklevel=5)  # the line that called the module
    with fx_traceback.annotate({ANNOTATION_KEY: annotation}):
        return forward(*bound, *args, **kwargs)


class ModuleRegions:
    """The handle ``module_regions`` returns: what went where, and how to undo it."""

    def __init__(self, model: torch.nn.Module, rules: list[RegionRule]):
        self.model = model
        self.rules = rules
        # qualified module name -> region id, in named_modules() order.
        self.assignments: dict[str, Any] = {}
        self._saved: list[tuple[torch.nn.Module, dict[str, Any]]] = []
        # (module, its name, its region id, the nearest ancestor that has a forward, its name):
        # what report_skipped compares with the modules Dynamo traced. Weak: the handle must
        # not keep a model alive.
        self._watched: list[tuple[weakref.ref, str, Any, weakref.ref | None, str]] = []

    def _apply(self) -> None:
        chosen: dict[int, tuple[str, torch.nn.Module, RegionRule]] = {}
        used: set[int] = set()
        containers: dict[int, str] = {}  # rule index -> first forward-less module it matched
        for name, module in self.model.named_modules(remove_duplicate=True):
            hits = [(i, rule) for i, rule in enumerate(self.rules) if rule.matches(name, module)]
            if len(hits) > 1:
                raise _region_config_error(
                    f"module '{name or type(module).__name__}' ({type(module).__qualname__}) matches"
                    f" {hits[0][1].describe()} and {hits[1][1].describe()}; make the rules disjoint"
                    " (e.g. a narrower name pattern)")
            if hits and _has_no_forward(module):
                # ModuleList, ModuleDict: the model calls their children, never them; wrapping
                # one would add an empty region. Its children are matched on their own.
                containers.setdefault(hits[0][0], name)
            elif hits:
                used.add(hits[0][0])
                chosen[id(module)] = (name, module, hits[0][1])
        for i, rule in enumerate(self.rules):
            if i in used:
                continue
            if i in containers:
                name = containers[i]
                raise _region_config_error(
                    f"{rule.describe()} matches only '{name}', a container without a forward (the"
                    " model calls its children directly), so it would compile nothing; match its"
                    f" children instead (e.g. '{name}.*' or their class)")
            raise _region_config_error(
                f"{rule.describe()} matches no module of {type(self.model).__qualname__};"
                " check the class, instance or name pattern (names as in model.named_modules())")
        for name, module, rule in chosen.values():
            if _SPEC_ATTR in module.__dict__:
                raise _region_config_error(
                    f"module '{name}' is already in a region (module_regions applied twice);"
                    " remove() the first handle before applying new rules")
            region_id = rule.region_id(name)
            annotation = region_annotation(region_id, rule.configs, module=name or "model")
            saved = {key: module.__dict__.get(key, _MISSING) for key in ("forward", _SPEC_ATTR, _INNER_ATTR)}
            inner = module.__dict__.get("forward")
            # A forward already overridden on the instance (a hook library did it) is kept as
            # the inner forward: unbind it so a deepcopy rebinds it to the copy.
            inner_fn = inner.__func__ if hasattr(inner, "__func__") and getattr(inner, "__self__", None) is module \
                else (None if inner is None else _StaticForward(inner))
            object.__setattr__(module, _SPEC_ATTR, annotation)
            object.__setattr__(module, _INNER_ATTR, inner_fn)
            object.__setattr__(module, "forward", _region_forward.__get__(module))
            self._saved.append((module, saved))
            self.assignments[name] = region_id
            parent_name, parent = _caller_of(self.model, name)
            self._watched.append((weakref.ref(module), name, region_id,
                                  None if parent is None else weakref.ref(parent), parent_name))
        if self._watched:
            _LIVE.add(self)

    def remove(self) -> None:
        """Restore every wrapped module's ``__dict__`` exactly as it was; idempotent."""
        while self._saved:
            module, saved = self._saved.pop()
            for key, value in saved.items():
                if value is _MISSING:
                    module.__dict__.pop(key, None)
                else:
                    module.__dict__[key] = value
        self.assignments = {}
        self._watched = []
        _LIVE.discard(self)

    def __enter__(self) -> ModuleRegions:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()

    def __repr__(self) -> str:
        return f"ModuleRegions({self.assignments!r})"


def _caller_of(model: torch.nn.Module, name: str) -> tuple[str, torch.nn.Module | None]:
    """The nearest ancestor of module ``name`` that has a forward (the module whose forward is
    expected to call it; ``ModuleList`` / ``ModuleDict`` are passed over); ("", None) for the root."""
    parts = name.split(".") if name else []
    while parts:
        parts.pop()
        ancestor_name = ".".join(parts)
        ancestor = model.get_submodule(ancestor_name)
        if not _has_no_forward(ancestor):
            return ancestor_name, ancestor
    return "", None


def _module_ids(node: torch.fx.Node) -> set[int]:
    """Ids of the modules whose forward was running when Dynamo recorded ``node``: the keys of
    its ``nn_module_stack`` are ``str(id(module))``, with ``@N`` for the N-th call of one module."""
    ids = set()
    for key in node.meta.get("nn_module_stack") or {}:
        head = str(key).split("@", 1)[0]
        if head.isdigit():
            ids.add(int(head))
    return ids


def report_skipped(gm: torch.fx.GraphModule, ledger: Ledger, graph: str) -> list[str]:
    """Modules in a region whose ops are missing from Dynamo's graph ``gm`` although their
    parent's ops are there: a fast path (or a forward that computes nothing) skipped them, so the
    region compiled nothing. Each gets a ledger row (refused, kind "region") and, once per module
    per process, a ``LiteRegionNotCompiled`` warning. Returns their names.

    Found by effect: Dynamo records, on every node, the modules whose forward was running. A
    graph that ends at a graph break has modules still open (their remaining ops are in the next
    graph): those parents prove nothing here and are not used."""
    if not _LIVE:
        return []  # no module_regions applied: nothing to check, nothing spent
    ops = [n for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")]
    # Ops in a higher-order op's body (torch.utils.checkpoint, cond, map, ...) are in a subgraph
    # the top-level graph holds as an attribute: they ran here too.
    every_op = ops + [n for sub in _nested_graphs(gm) for n in sub.graph.nodes
                      if n.op in ("call_function", "call_method", "call_module")]
    traced: set[int] = set().union(*(_module_ids(n) for n in every_op)) if every_op else set()
    # A module whose forward was called as ``child.forward(x)`` (not ``child(x)``) is not in
    # nn_module_stack, but its ops carry its region annotation, which names it.
    annotated = {region_module(annotation_of(n.meta)) for n in every_op}
    reason = getattr(gm, "compile_subgraph_reason", None)
    if ops and getattr(reason, "graph_break", True):  # unknown: assume the graph was cut
        traced_open = _module_ids(ops[-1])
    else:
        traced_open = set()
    skipped: list[tuple[torch.nn.Module, str, Any, torch.nn.Module, str]] = []
    for handle in list(_LIVE):
        for module_ref, name, region_id, parent_ref, parent_name in handle._watched:
            module, parent = module_ref(), parent_ref() if parent_ref is not None else None
            if module is None or parent is None or id(module) in traced or name in annotated:
                continue
            if id(parent) not in traced or id(parent) in traced_open:
                continue  # the parent did not run here (another graph), or is not finished yet
            if _enclosed_by_same_region(handle.assignments, name, region_id):
                continue  # whatever it would compute is in the enclosing module's region anyway
            skipped.append((module, name, region_id, parent, parent_name or "the model"))
    why = ("a fast path skipped its forward (nn.TransformerEncoderLayer in eval under no_grad"
           " runs one fused op) or it computes nothing")
    for module, name, region_id, parent, parent_name in skipped:
        ledger.add(LedgerEntry(
            name=f"region {region_id!r} module {name}", stage="regions", graph=graph,
            allowed=False, lite="region", kind="region",
            reason=f"none of its ops reached {graph} although its parent '{parent_name}'"
                   f" ({type(parent).__name__}) ran there, so the region compiled nothing: {why}"))
    new = [row for row in skipped if (id(row[0]), str(row[2])) not in _WARNED_SKIPPED]
    if new:
        _WARNED_SKIPPED.update((id(row[0]), str(row[2])) for row in new)
        module, name, region_id, parent, parent_name = new[0]
        more = f" (and {len(new) - 1} more, listed in lite_compiler.last_ledger())" if len(new) > 1 else ""
        warnings.warn(
            f"lite_compiler: module '{name}' ({type(module).__name__}) is in region {region_id!r},"
            f" but none of its ops reached {graph} although its parent '{parent_name}'"
            f" ({type(parent).__name__}) ran there{more}, so the region compiled nothing: {why};"
            f" put the region on '{parent_name}' instead, or run the path that calls it",
            LiteRegionNotCompiled, stacklevel=3)
    return [row[1] for row in skipped]


def _nested_graphs(gm: torch.fx.GraphModule) -> list[torch.fx.GraphModule]:
    """Every GraphModule below ``gm`` (higher-order ops' bodies, and theirs in turn)."""
    return [sub for name, sub in gm.named_modules()
            if name and isinstance(sub, torch.fx.GraphModule)]


def _enclosed_by_same_region(assignments: dict[str, Any], name: str, region_id: Any) -> bool:
    """Whether an ancestor of module ``name`` is in the same region (a rule like "stages.0.*"
    puts a block and its Identity / Dropout / helper-method children in one region: a child
    that runs no op of its own loses nothing there)."""
    parts = name.split(".") if name else []
    while parts:
        parts.pop()
        if assignments.get(".".join(parts), _MISSING) == region_id:
            return True
    return False


def _has_no_forward(module: torch.nn.Module) -> bool:
    return type(module).forward is torch.nn.Module.forward and "forward" not in module.__dict__


class _StaticForward:
    """A forward override that is not a method of the module (a plain function): call it as is."""

    def __init__(self, fn: Any):
        self.fn = fn

    def __get__(self, module: Any, owner: Any = None) -> Any:
        return self.fn


def module_regions(model: torch.nn.Module, rules: Iterable[RegionRule | tuple]) -> ModuleRegions:
    """Put modules of ``model`` into regions by class, instance or name; returns the handle.

    ``rules``: ``RegionRule`` objects, or ``(match, id)`` / ``(match, id, configs)`` tuples.
    Use the handle as a context manager, or call ``remove()``, to restore the model.
    """
    normalized = [rule if isinstance(rule, RegionRule) else RegionRule(*rule) for rule in rules]
    handle = ModuleRegions(model, normalized)
    try:
        handle._apply()
    except BaseException:
        handle.remove()
        raise
    return handle


def regions_of(model: torch.nn.Module) -> dict[str, Any]:
    """Region id of every module of ``model`` currently in a region, by qualified name."""
    found: dict[str, Any] = {}
    for name, module in model.named_modules():
        annotation = module.__dict__.get(_SPEC_ATTR)
        if annotation is not None:
            found[name] = annotation.get("inductor_region") if isinstance(annotation, dict) else None
    return found
