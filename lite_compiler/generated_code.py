"""The code that runs is the code generated from what the guard checked.

The effect checks read graphs; what runs is Python that torch.fx compiles from a graph (a
GraphModule's ``forward``). ``torch.fx.graph_module._forward_from_src`` (or anything on that
path) can compile other source while the graph stays the checked one. After the hand-over, the
forward the compiled graph calls is compared, bytecode and globals, with a compile of the
checked graph's own source.
"""

from __future__ import annotations

import re
import sys
import types
from typing import Any

from lite_compiler import guard
from lite_compiler.code_objects import code_differs, code_named
from lite_compiler.kernel_libraries import check_region_kernels
from lite_compiler.provenance import (_OWN_DIR, _call_of, _defined_in_torch, _trusted_file, compiled_in_torch,
                                      foreign_identity, run_observed)


def _forward_code(src: str) -> types.CodeType:
    """The code object of ``forward`` in torch.fx's source, compiled as torch.fx compiles it."""
    module = compile(src, "<lite-guard: the checked graph's code>", "exec", dont_inherit=True)
    for const in module.co_consts:
        if isinstance(const, types.CodeType) and const.co_name == "forward":
            return const
    raise ValueError("torch.fx's source defines no forward")


def _forwards_run(gm: Any, compiled: Any) -> list[Any]:
    """The forward functions of ``gm`` that will run: its class's, and those the compiled callable
    holds as bound methods of ``gm`` in its closure (boxed_nop's ``forward_fn``)."""
    found = [type(gm).forward]
    for cell in getattr(compiled, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if isinstance(value, types.MethodType) and value.__self__ is gm:
            lazy = getattr(type(gm), "_lazy_forward", None)  # torch's stub: it calls gm, whose
            if value.__func__ is not lazy or not compiled_in_torch(lazy.__code__):  # class forward
                found.append(value.__func__)  # (above) was compiled by real_recompile
    return found


_RECORD_PLACEHOLDER = "torch._C._profiler._RecordFunctionFast('## ENTER_GRAPH_PLACEHOLDER_KEY ##')"


def _recorded_name(code: str) -> str | None:
    """The profiler record torch.fx put in place of the placeholder (its file name only)."""
    found = re.search(r"torch\._C\._profiler\._RecordFunctionFast\('## [\w.]+ ##'\)", code)
    return found.group(0) if found else None


def check_forward_is_graph_code(gm: Any, compiled: Any, what: str) -> None:
    """Refuse (by effect) a forward of ``gm`` that is not the code of ``gm``'s graph."""
    if not guard.enforcing():
        return
    # What generates the source (torch.fx's codegen) must be torch's code alone, or the reference
    # lies as the forward does: a method patched into CodeGen or Graph runs as itself.
    # Observed again only when torch.fx's namespaces changed since a clean call (run_observed's
    # key: the classes of the objects that generate the code, which must all be torch's).
    kinds = (type(gm), type(gm.graph), type(getattr(gm.graph, "_codegen", None)))
    key = kinds if all(_defined_in_torch(c) for kind in kinds for c in kind.__mro__ if c is not object) \
        else None
    ran: list[str] = []
    real_recompile = getattr(gm, "real_recompile", None)  # a lazy GraphModule compiles at first call
    if callable(real_recompile) and getattr(gm, "_needs_recompile", lambda: False)():
        ran += run_observed(real_recompile, key=key and ("recompile", *key[1:]))[1]
    from torch.fx.experimental import _config as fx_experimental_config

    record = bool(fx_experimental_config.enrich_profiler_metadata)  # torch.fx's profiler option
    python_code, foreign = run_observed(gm.graph.python_code, root_module="self", record_func=record,
                                        key=key and ("python_code", record, *key[1:]))
    for name in dict.fromkeys(ran + foreign):
        guard.check(name, "lowering", "function", where=(
            f"it ran while torch.fx generated the code of the checked {what} (the source the"
            " forward that runs is compiled from); register it under this name, or remove the"
            " patch for lite compiles"))
    # What the forward calls (its globals: the ops the graph names, torch.fx's helpers) runs
    # its class's code: ``OpOverload.__call__`` replaced would run every op of the graph as
    # other code, node targets unchanged.
    targets = {node.name: node.target for node in gm.graph.nodes if node.op == "call_function"}
    called = {**python_code.globals, **targets}
    for name, value in called.items():
        owner = getattr(sys.modules.get(type(value).__module__), "__file__", None) or ""
        if not callable(value) or isinstance(value, types.ModuleType) or owner.startswith(_OWN_DIR):
            continue  # (a region's callable is the guard's own, checked when it compiled)
        call = _call_of(value)  # an object (an OpOverload) runs its class's __call__
        identity = foreign_identity(value) or (foreign_identity(call) if call is not None else None)
        if identity is not None:
            guard.check(identity, "lowering", "function", where=(
                f"the checked {what} calls it (as {name}): it runs in place of torch's code"
                " there; register it under this name, or remove the patch for lite compiles"))
    differs = _source_names_differ(python_code.src, python_code.globals, gm.graph)
    if differs is not None:
        guard.refuse_effect("lowering", (
            f"the forward that runs the {what} does not compute what the checked graph says:"
            f" {differs}; torch.fx's code generation read something changed since torch set it"
            " (its table of builtins, an operator's template, an op's attribute); remove the"
            " patch for lite compiles"))
    src = python_code.src
    if record:  # torch.fx names the graph's profiler record after a hash of code and metadata
        src = src.replace(_RECORD_PLACEHOLDER, _recorded_name(getattr(gm, "_code", "")) or _RECORD_PLACEHOLDER)
    expected = _forward_code(src)
    for forward in _forwards_run(gm, compiled):
        code = getattr(forward, "__code__", None)
        differs = "not a Python function" if not isinstance(code, types.CodeType) \
            else code_differs(code, expected)
        if differs is None:
            namespace = forward.__globals__
            wrong = [name for name, value in python_code.globals.items() if namespace.get(name) is not value]
            differs = f"globals {', '.join(wrong[:3])}" if wrong else None
        if differs is not None:
            guard.refuse_effect("lowering", (
                f"the forward that runs the {what} is not the code of the checked graph ({differs}"
                f" differs from {gm.graph.__class__.__name__}.python_code's source): something on"
                " torch.fx's compile path (torch.fx.graph_module._forward_from_src, a patch) compiled"
                " other code; remove the patch for lite compiles"))


# ---- what the source's names stand for ------------------------------------------------------------
# The forward is compiled from the source torch.fx writes, with the globals it hands along; a name
# in that source is resolved when the forward runs. The guard's reference is written from the same
# tables, so a value changed in them (``_custom_builtins["inf"]`` holding 3.0, a stand-in ``torch``
# module, ``torch.ops.aten.mul.Tensor`` rebound on its packet, an operator's template in
# ``magic_methods``) makes both lie alike while no code of the graph changed. So each statement of
# a graph node is read back: what its call names resolves to must be the node's target, an
# operator's expression must run that operator's special method, and a data global must be the
# value its name spells.

_NODE_LINE = re.compile(r"^    ([A-Za-z_]\w*)(?:: [^=]*)? = (.*)$")  # name[: "annotation"] = rhs
_CALL = re.compile(r"([A-Za-z_][\w.]*)\(")


def _resolved(chain: str, namespace: dict[str, Any]) -> Any:
    import builtins

    first, *rest = chain.split(".")
    value = namespace[first] if first in namespace else getattr(builtins, first)
    for attr in rest:
        value = getattr(value, attr)
    return value


class _Probe:
    """An operand that records which special method an expression ran on it."""

    def __init__(self, seen: list[str]) -> None:
        object.__setattr__(self, "_seen", seen)


def _probe_method(dunder: str) -> Any:
    def method(self: Any, *args: Any) -> Any:
        self._seen.append(dunder)
        return self
    return method


for _op in ("add", "sub", "mul", "floordiv", "truediv", "mod", "pow", "lshift", "rshift", "and", "or",
            "xor", "matmul"):
    setattr(_Probe, f"__{_op}__", _probe_method(f"__{_op}__"))
    setattr(_Probe, f"__r{_op}__", _probe_method(f"__{_op}__"))  # (reflected: the same operator)
for _op in ("eq", "ne", "lt", "gt", "le", "ge", "pos", "neg", "invert", "getitem"):
    setattr(_Probe, f"__{_op}__", _probe_method(f"__{_op}__"))
_Probe.__hash__ = object.__hash__  # type: ignore[method-assign]


class _Operands(dict):
    def __init__(self, seen: list[str]) -> None:
        super().__init__()
        self.seen = seen

    def __missing__(self, key: str) -> Any:
        return _Probe(self.seen)


_MIRRORED = {"__lt__": "__gt__", "__gt__": "__lt__", "__le__": "__ge__", "__ge__": "__le__"}


def _source_names_differ(src: str, namespace: dict[str, Any], graph: Any) -> str | None:
    """What in torch.fx's source of ``graph`` (with its ``namespace``) does not stand for what the
    graph holds, or None. Reads each node's statement once (~0.1 ms for 100 nodes)."""
    for name, value in namespace.items():
        if isinstance(value, types.ModuleType):
            spec = getattr(value, "__spec__", None)
            file = getattr(value, "__file__", None)
            trusted = _trusted_file(file) if file else getattr(spec, "origin", None) in ("built-in", "frozen")
            if sys.modules.get(value.__name__) is not value or not trusted:
                return f"its global {name!r} is {value!r}, not a module of torch or Python imported under its name"
        elif not callable(value) and repr(value) != name:
            return f"its global {name!r} is {value!r}, not the value its name spells"
    nodes = {node.name: node for node in graph.nodes if node.op == "call_function"}
    for line in src.splitlines():
        found = _NODE_LINE.match(line)
        if found is None or found.group(1) not in nodes:
            continue
        name, rhs = found.group(1), found.group(2).split(";  ", 1)[0]
        node = nodes[name]
        target = node.target
        call = _CALL.match(rhs)
        if call is not None:
            try:
                value = _resolved(call.group(1), namespace)
            except (KeyError, AttributeError):
                return f"{name} calls {call.group(1)}, which names nothing"
            if value is not target:
                return f"{name} calls {call.group(1)}, which is {value}, but the node's target is {target}"
        elif getattr(target, "__module__", None) == "_operator":
            seen: list[str] = []
            try:
                eval(compile(rhs, "<lite-guard: a node's expression>", "eval"), {"__builtins__": {}},
                     _Operands(seen))
            except Exception:
                return f"{name} = {rhs} cannot be read as {target.__name__}"
            expected = f"__{target.__name__.rstrip('_')}__"
            if seen and node.args and not isinstance(node.args[0], type(node)):  # a constant first:
                seen = [_MIRRORED.get(seen[0], seen[0]), *seen[1:]]  # Python asks the other side
            if seen != [expected]:
                return f"{name} = {rhs} does not compute {target.__name__}"
    return None


def _foreign_wrapper(runs: Any, function: Any) -> str | None:
    """What a callable standing in for the region module's checked ``call`` runs besides it:
    torch's own wrapper (input realignment, CUDA graphs: a closure compiled in torch) holds that
    call in a cell, which is the checked code, not foreign; any other code is named."""
    from lite_compiler.provenance import _cell_values, compiled_in_torch, foreign_identity

    inner = getattr(runs, "__func__", runs)
    if inner is function:
        return None
    code = getattr(inner, "__code__", None)
    if not isinstance(code, types.CodeType) or not compiled_in_torch(code):
        return foreign_identity(runs) or f"{type(runs).__module__}:{type(runs).__qualname__}"
    for value in _cell_values(inner):
        if getattr(value, "__func__", value) is function or not callable(value):
            continue
        found = foreign_identity(value)
        if found is not None:
            return found
    return None


def check_region_module(compiled: Any, region_graph: str) -> None:
    """A region's compiled module is loaded from Inductor's code cache, where it is filed under
    the hash of the source generated in this process (``PyCodeCache.write``), and a file already
    there is loaded as it is. Refuse (by effect) a loaded file whose content does not hash to
    its key (planted, or written over), a module ``call`` that was not compiled from that
    content, and a callable in its place that is not torch's wrapper of it (input realignment,
    CUDA graphs). (The module's top level ran when it was loaded: the region's code never runs.)"""
    if not guard.enforcing():
        return
    from torch._inductor.codecache import get_hash, get_path

    key, source = getattr(compiled, "cache_key", None), getattr(compiled, "source_code", None)
    runs = getattr(compiled, "current_callable", None)
    runner = getattr(compiled, "compiled_fn_runner", None)  # the module's Runner: its call
    call = getattr(runner, "call", None) or runs
    if not isinstance(key, str) or not isinstance(source, str) or call is None:
        guard.refuse_effect("lowering", (
            f"Inductor returned the region's code without its source and cache key"
            f" ({type(compiled).__name__}): lite mode cannot compare what runs with what it"
            " generated; unset caches and compile modes for lite compiles"), graph=region_graph)
    path = get_path(key, "py")[2]
    if get_hash(source.strip(), "", "code") != key:
        guard.refuse_effect("lowering", (
            f"the region's module loaded from Inductor's code cache ({path}) does not hash to its"
            " key: it is not the code generated in this process (a file planted or written over"
            " in the cache); remove it"), graph=region_graph)
    function = getattr(call, "__func__", call)
    code = getattr(function, "__code__", None)
    expected = code_named(compile(source, path, "exec", dont_inherit=True), code.co_qualname) \
        if isinstance(code, types.CodeType) else None
    differs = "no such function" if expected is None else code_differs(code, expected)
    if differs is None and _foreign_wrapper(runs, function) is not None:
        differs = "the callable in its place (not torch's wrapper)"
    if differs is not None:
        guard.refuse_effect("lowering", (
            f"the region's call ({getattr(code, 'co_qualname', call)!r}) is not compiled from its"
            f" module in Inductor's code cache ({path}; {differs} differs); remove the patch for"
            " lite compiles"), graph=region_graph)
    # ...and the C++ kernels it calls were built for it, not found in the cache (kernel_libraries).
    check_region_kernels(getattr(function, "__globals__", {}), region_graph, source)
