"""Whose code is this? Torch's own, or foreign code standing where torch's code should be.

A torch pass's permission in the registry is for torch's code. Code put where torch keeps its
passes (a monkeypatched ``compile_fx.view_to_reshape``, a lowering override in ``lowerings``, an
entry edited into Inductor's decomposition table, a user ``InductorChoices`` class) runs under
its own identity, ``module:QualName``, which the registry must name, like any user pass.

Provenance is structural: a function is torch's when the code object that runs (and that of
every layer it wraps, ``__wrapped__``) was compiled from a file inside the installed torch
package. ``functools.wraps`` copies ``__module__`` and ``__qualname__`` and cannot fake that;
the identity reported is the code's own (its globals' module and ``co_qualname``).
"""

from __future__ import annotations

import dis
import functools
import gc
import operator
import os
import re
import sys
import types
from typing import Any

from lite_compiler.code_objects import code_differs, code_named
from lite_guard.identity import qualified_name

_OWN_DIR = os.path.dirname(os.path.realpath(__file__)) + os.sep  # lite_compiler: the guard itself


@functools.lru_cache(maxsize=1)
def _torch_dir() -> str:  # (a realpath: ~50 us, asked for every file not seen yet)
    import torch

    return os.path.dirname(os.path.realpath(torch.__file__)) + os.sep


@functools.lru_cache(maxsize=4096)
def _file_in_torch(filename: str) -> bool:
    return os.path.realpath(filename).startswith(_torch_dir())


def compiled_in_torch(code: Any) -> bool:
    """Whether a code object (a running frame's ``f_code``) comes from a file inside torch."""
    return _file_in_torch(code.co_filename)


def _code_identity(fn: Any) -> tuple[str, str] | None:
    """(file, identity) of a plain function's code, else None (a builtin, a C function)."""
    code = getattr(fn, "__code__", None)
    if not isinstance(code, types.CodeType):  # (an object whose __getattr__ answers every name)
        return None
    namespace = getattr(fn, "__globals__", None)
    module = namespace.get("__name__", "<unknown>") if isinstance(namespace, dict) else "<unknown>"
    if _file_in_torch(code.co_filename) != _file_in_torch(getattr(sys.modules.get(module), "__file__", "") or ""):
        module = _module_of_file(code.co_filename) or module  # code swapped into another function
    return code.co_filename, qualified_name(module, getattr(code, "co_qualname", code.co_name))


def _module_of_file(filename: str) -> str | None:
    """The imported module compiled from ``filename`` (asked only for foreign code)."""
    real = os.path.realpath(filename)
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if path and os.path.realpath(path) == real:
            return name
    return None


def _layers(obj: Any) -> list[Any]:
    """The callables ``obj`` runs: itself and everything it wraps (partial, methods, wraps)."""
    layers, seen = [], set()
    while obj is not None and id(obj) not in seen and len(layers) < 32:
        seen.add(id(obj))
        if isinstance(obj, (staticmethod, classmethod)):
            obj = obj.__func__
            continue
        if isinstance(obj, functools.partial):
            obj = obj.func
            continue
        layers.append(obj)
        inner = getattr(obj, "__func__", None)  # a bound method: its function
        obj = inner if inner is not None else getattr(obj, "__wrapped__", None)
    return layers


def foreign_identity(obj: Any) -> str | None:
    """None if ``obj`` is torch's own code (or code provenance cannot apply: a builtin); else
    the identity of the first layer defined outside torch, the name the registry must hold."""
    # Keyed by the object and the code objects it runs now: a function whose __code__ was
    # swapped in place is looked at again.
    codes = tuple(getattr(_call_of(layer) or layer, "__code__", None) for layer in _layers(obj))
    cached = _CACHE.get(id(obj))
    if cached is not None and cached[0] is obj and cached[1] == codes:
        return cached[2]
    found = _foreign(obj)
    if len(_CACHE) > 8192:
        _CACHE.clear()
    _CACHE[id(obj)] = (obj, codes, found)  # the object is held: its id is never recycled
    return found


_CACHE: dict[int, tuple[Any, tuple[Any, ...], str | None]] = {}


def _generated_torch_method(layer: Any) -> bool:
    """A bound method whose function torch generated with ``exec`` (file ``<string>``) as a method
    of one of its own classes (ops_handler.DefaultHandler's ops, dataclass methods): torch's,
    as the sweep judges class methods (``_trusted_function(..., method=True)``)."""
    func, owner = getattr(layer, "__func__", None), getattr(layer, "__self__", None)
    code = getattr(func, "__code__", None)
    if not isinstance(code, types.CodeType) or code.co_filename != "<string>" or owner is None:
        return False
    for cls in (owner if isinstance(owner, type) else type(owner)).__mro__:
        if vars(cls).get(func.__name__) is func:
            return _defined_in_torch(cls)
    return False


def _defined_in_torch(cls: type) -> bool:
    filename = getattr(sys.modules.get(cls.__module__), "__file__", None)
    return filename is not None and _file_in_torch(filename)


def _foreign(obj: Any) -> str | None:
    for layer in _layers(obj):
        if _generated_torch_method(layer):
            return None
        if isinstance(layer, type):
            found = _foreign_class(layer)
        else:
            known = _code_identity(layer)
            if known is None and callable(layer) and not _is_builtin(layer):
                # A callable object: the code that runs is its class's __call__; a trusted
                # wrapper's (an lru_cache) is the code it wraps, the next layers.
                found = None if _trusted_class(type(layer)) else _foreign_class(type(layer))
                if found is not None:
                    found = _swapped_call(type(layer)) or found
            else:
                found = None if known is None or (_file_in_torch(known[0]) and _runs_in_its_module(layer)) \
                    or known[0].startswith(_OWN_DIR) else known[1]  # the guard's own wrappers
        if found is not None:
            return found
    return None


def _call_of(obj: Any) -> Any:
    """The ``__call__`` function a callable object (not a function or class) runs, or None."""
    if isinstance(obj, (type, types.FunctionType, types.MethodType, functools.partial)):
        return None
    return _call_of_class(type(obj))


def _call_of_class(cls: type) -> Any:
    for klass in cls.__mro__:
        found = vars(klass).get("__call__")
        if found is not None:
            return found.__func__ if isinstance(found, (staticmethod, classmethod)) else found
    return None


def _swapped_call(cls: type) -> str | None:
    """An object of a class from outside torch is named by its class (as the lint names it):
    but the code that runs is its ``__call__``, and code put there that was not defined as a
    method of one of the classes the object is (``Pass.__call__ = other``, set after the pass
    was configured) runs as itself. Decorators' wrappers (torch's, the guard's) are looked
    through to the code they wrap."""
    found = _call_of_class(cls)
    if isinstance(found, functools.partialmethod):
        found = found.func
    if found is not None and not isinstance(found, (types.FunctionType, functools.partial)) \
            and hasattr(type(found), "__get__"):
        # A descriptor object as ``__call__``: its class's ``__get__`` decides, at each call, what
        # runs (the code it hands out need not be the class's, nor the same each time): the
        # object runs as the descriptor's class, unless that is torch's or Python's.
        owner = _foreign_class(type(found))
        if owner is not None:
            return owner
    for layer in _layers(found) if found is not None else ():
        known = _code_identity(layer)
        if known is None or _file_in_torch(known[0]) or known[0].startswith(_OWN_DIR):
            continue
        code = layer.__code__
        module = layer.__globals__.get("__name__") if isinstance(layer.__globals__, dict) else None
        # The code's qualified name is fixed where it was written; a class's __qualname__ can
        # be set afterwards (to any text), its __name__ too: either naming it is its own code.
        name = getattr(code, "co_qualname", code.co_name)
        own = any(name == f"{k.__qualname__}.__call__"
                  or f".{name}".endswith(f".{k.__name__}.__call__")
                  for k in cls.__mro__ if k.__module__ == module)
        return None if own else known[1]
    return None


def _is_builtin(obj: Any) -> bool:
    return type(obj).__name__ in ("builtin_function_or_method", "method-wrapper",
                                  "wrapper_descriptor", "method_descriptor") \
        or type(obj).__module__ == "torch._ops"  # an OpOverload/OpOverloadPacket: an ATen op


def _foreign_class(cls: type) -> str | None:
    """A class is torch's when the module defining it is a file inside torch and none of the
    methods it defines itself was compiled elsewhere (a method patched into a torch class)."""
    module = sys.modules.get(cls.__module__)
    filename = getattr(module, "__file__", None)
    if filename is None:
        return None if cls.__module__ == "builtins" else qualified_name(cls.__module__, cls.__qualname__)
    if not _file_in_torch(filename):
        return qualified_name(cls.__module__, cls.__qualname__)
    for value in vars(cls).values():
        known = _code_identity(value.__func__ if isinstance(value, (staticmethod, classmethod)) else value)
        # ``<string>``: a method torch generated for its own class (DefaultHandler's ops, dataclasses)
        if known is not None and not _file_in_torch(known[0]) and known[0] != "<string>":
            return known[1]
    return None


def code_in(value: Any) -> list[Any]:
    """The callables a config value holds (itself, or items of a list, tuple, set or dict)."""
    if isinstance(value, (str, bytes, int, float, bool)) or value is None:
        return []
    if isinstance(value, dict):
        return [v for v in (*value.keys(), *value.values()) if callable(v)]
    if isinstance(value, (list, tuple, set, frozenset)):
        return [v for v in value if callable(v)]
    return [value] if callable(value) else []


def check_region_code(obj: Any, stage: str, where: str) -> None:
    """Refuse foreign code about to run inside an annotated region unless the registry allows
    it there (lite = "region" or "always"); torch's own code passes at the cost of a lookup."""
    check_code(obj, stage, where, in_region=True)


def check_code(obj: Any, stage: str, where: str, in_region: bool = False) -> None:
    """Refuse foreign code unless the registry allows it; ``in_region``: it runs only inside
    annotated regions (Inductor's config, decompositions, lowerings), so lite = "region" allows it."""
    foreign = foreign_identity(obj)
    if foreign is None:
        return
    from lite_compiler import guard

    outer = guard.current_session()
    if outer is None:
        return
    if not in_region:
        guard.check(foreign, stage, "function", where=where)
        return
    judged_in_region(lambda: guard.check(foreign, stage, "function", where=where))


def judged_in_region(decide: Any) -> None:
    """Run ``decide()`` (a guard decision) with this thread's session judged as inside an
    annotated region: the code it asks about runs only there (Inductor's config, lowerings,
    decompositions). Pushed directly: the hooks are installed already (lite_compiler.session
    would import back into this module)."""
    from lite_compiler import guard

    outer = guard.current_session()
    if outer is None or outer.in_region:
        decide()
        return
    guard.push(guard.Session(outer.mode, outer.registry, outer.ledger, graph=outer.graph,
                             in_region=True, effects=outer.effects))
    try:
        decide()
    finally:
        guard.pop()


def report_compile_callbacks() -> None:
    """Dynamo's compile callbacks (``torch._dynamo.callback.on_compile_start`` / ``_end``) that
    hold code from outside torch. A start callback has run before the backend (what it patched
    into torch's places is judged there: a ledger row says it ran); an end callback runs after
    the lite compiler returned, after every check, and can reach the compiled graph: lite mode
    can neither refuse what has not run nor check after it, so it is reported (ledger row and a
    LiteGuardReport warning), never skipped."""
    callback = sys.modules.get("torch._dynamo.callback")
    handler = getattr(callback, "callback_handler", None)
    if handler is None:
        return
    import warnings

    from lite_compiler import guard
    from lite_compiler.errors import LiteGuardReport
    from lite_compiler.ledger import LedgerEntry

    sess = guard.current_session()
    for when, held in (("on_compile_start", handler.start_callbacks),
                       ("on_compile_end", handler.end_callbacks)):
        for fn in list(held):
            foreign = foreign_identity(fn)
            if foreign is None or sess is None:
                continue
            if when == "on_compile_start":
                reason = ("a Dynamo on_compile_start callback from outside torch ran before the"
                          " backend (what it put into torch's places is judged by the guard)")
            else:
                reason = ("a Dynamo on_compile_end callback from outside torch runs after the"
                          " lite compiler returns, after every check: what it changes is not"
                          " seen; reported, not refused")
                warnings.warn(f"lite_compiler ({sess.graph}): {foreign}: {reason}", LiteGuardReport,
                              stacklevel=3)
            sess.ledger.add(LedgerEntry(name=foreign, stage="aot", graph=sess.graph, allowed=True,
                                        lite="unregistered", kind="callback", reason=reason))


def check_torch_code(fn: Any, torch_name: str, stage: str) -> Any:
    """``fn``, which the lite compiler calls as torch's ``torch_name`` (aot_autograd, the
    partitioner, boxed_nop, compile_fx_inner): foreign code found there (a monkeypatch) runs as
    itself, so the registry must allow it; returns ``fn``."""
    foreign = foreign_identity(fn)
    if foreign is not None:
        from lite_compiler import guard

        guard.check(foreign, stage, "function", where=(
            f"it stands in for torch's {torch_name}, which the lite compiler calls (a"
            " monkeypatch); register it under this name, or remove the patch for lite compiles"))
    return fn


# ---- what ran: code observed while torch's code works for the guard ---------------------------
# Where the guard itself asks torch for something it then trusts (torch.fx's source of the checked
# graph), the answer is only torch's if only torch's code produced it: a method patched into
# torch.fx's codegen (``CodeGen._gen_python_code``, ``Graph.python_code``, a helper it calls
# through ``self``) would make the guard's reference lie the same way as the forward. What runs is
# observed (a profile function, this thread, for that call only), not looked for by name.

def _fx_generated(code: Any) -> bool:
    """Code torch.fx compiled from a graph's source: its file name is a key of torch.fx's record
    of the sources it generated (``graph_module._loader``); the forward is checked as a whole."""
    loader = getattr(sys.modules.get("torch.fx.graph_module"), "_loader", None)
    return isinstance(code, types.CodeType) and code.co_filename in getattr(loader, "eval_cache", {})


def _fx_compiled_from_source(code: types.CodeType) -> bool:
    """Whether code filed under a torch.fx loader key was compiled from the source torch.fx
    recorded there: a function compiled under an existing key (``compile(src, key, ...)``) is
    not torch.fx's (round 6). Compiles that source: asked only of such code where it is not
    the forward the hand-over compares anyway."""
    loader = getattr(sys.modules.get("torch.fx.graph_module"), "_loader", None)
    source = getattr(loader, "eval_cache", {}).get(code.co_filename)
    known = _FX_VERIFIED.get(id(code))
    if known is not None and known[0] is code and known[1] is source:
        return known[2]
    try:
        module = compile(source, code.co_filename, "exec", dont_inherit=True)
    except (TypeError, ValueError, SyntaxError):
        return False
    qualname = getattr(code, "co_qualname", code.co_name)
    expected = module if qualname == "<module>" else code_named(module, qualname)
    verdict = expected is not None and code_differs(code, expected) is None
    if len(_FX_VERIFIED) > 1024:
        _FX_VERIFIED.clear()
    _FX_VERIFIED[id(code)] = (code, source, verdict)  # (held: the id is never recycled)
    return verdict


_FX_VERIFIED: dict[int, tuple[Any, Any, bool]] = {}


_OBSERVED: dict[Any, tuple[Any, ...]] = {}  # per ``key``: the namespaces a clean call ran in


def _code_held(spaces: Any) -> tuple[Any, ...]:
    """What of the namespaces can run: their callables (functions, classes, methods' wrappers,
    objects with ``__call__``) and descriptors (static and class methods, properties); counters
    and caches a module or class rebinds are left out. One tuple for all (C-speed filters)."""
    import itertools

    values = tuple(itertools.chain.from_iterable(space.values() for space in spaces))
    return (*filter(callable, values),
            *itertools.compress(values, map(_DESCRIPTORS.__contains__, map(type, values))))


_DESCRIPTORS = frozenset({staticmethod, classmethod, property})


def _canary() -> None:
    """Called first under observation: the observer must see it, called by the interpreter."""


_CANARY_CODE = _canary.__code__


def _signal_handler_codes() -> frozenset[Any]:
    """The code objects of the Python signal handlers installed now."""
    import signal

    codes = []
    for number in signal.valid_signals():
        try:
            handler = signal.getsignal(number)
        except (ValueError, OSError):
            continue
        code = getattr(getattr(handler, "__func__", handler), "__code__", None)
        if isinstance(code, types.CodeType):
            codes.append(code)
    return frozenset(codes)


def _restore_profile(previous: Any) -> None:
    """Put back the profile function in place before. A C profiler (cProfile's) is held as an
    object that is not callable: ``sys.setprofile(obj)`` would call it as a Python function at
    every event; it is enabled again the way it installs itself."""
    if previous is None or callable(previous):
        sys.setprofile(previous)
        return
    sys.setprofile(None)
    enable = getattr(type(previous), "enable", None)
    if enable is not None:
        previous.enable()


def run_observed(fn: Any, *args: Any, key: Any = None, **kwargs: Any) -> tuple[Any, list[str]]:
    """(``fn(*args, **kwargs)``, the identity of each Python function from outside torch, the
    standard library and the guard that ran during the call, in this thread). The profile
    function in place before (a debugger's, a coverage tool's) is put back after.

    With a ``key``: once a call under it ran only trusted code, the next runs unobserved while
    every namespace that call's code ran in (its modules, and every class they define) holds the
    very objects, running the very code, it held then (``_unchanged``: a function or method put
    there, a ``__code__`` written in place, an object's class swapped, is a change); observing
    costs ~3x the call (~25 ms a llama block's graph), the comparison ~0.1 ms."""
    held = _OBSERVED.get(key) if key is not None else None
    if held is not None and _unchanged(("observed", key), _code_held(held)):
        return fn(*args, **kwargs), []
    ran: dict[types.CodeType, Any] = {}
    # Code the interpreter runs between two instructions of the call, not because the call
    # called it: a Python signal handler (a sampling profiler's, scalene's SIGALRM/SIGVTALRM;
    # what it installs is still seen when torch's code calls it). Its frames and theirs are not
    # the call's. (Asked of the signal module each time: ~15 us.)
    asynchronous = _signal_handler_codes()
    inside: list[Any] = []  # the handler's frame while it runs
    canary: list[bool] = []

    def observe(frame: Any, event: str, arg: Any) -> Any:
        if inside:  # (as a trace hook it traces the handler's frames, to see their return)
            if event == "return" and frame is inside[-1]:
                inside.pop()
            return observe
        if event == "call":
            code = frame.f_code
            if code in asynchronous:
                inside.append(frame)
                return observe
            if code is _CANARY_CODE:  # called by the interpreter itself, not through a filter
                canary.append(sys._getframe(1) is frame)
            ran.setdefault(code, frame.f_globals)
        return None

    # The profile hook, or the trace hook where a C profiler (cProfile) holds the profile one:
    # its object is not callable, so ``sys.setprofile`` could not put it back.
    previous = sys.getprofile()
    install, restore = sys.setprofile, _restore_profile
    if previous is not None and not callable(previous) and (sys.gettrace() is None or callable(sys.gettrace())):
        install, previous = sys.settrace, sys.gettrace()
        restore = sys.settrace
    # No garbage collection while observed: a collection runs ``gc.callbacks`` (hypothesis and
    # memory profilers install them) and finalizers of unrelated objects in this frame, which
    # the profile would take for code the call ran (seen in CI: hypothesis's gc_callback).
    collecting = gc.isenabled()
    gc.disable()
    install(observe)
    try:
        _canary()  # proves the observer sees this thread's calls (``sys.setprofile`` may be a stand-in)
        result = fn(*args, **kwargs)
    finally:
        restore(previous)
        if collecting:
            gc.enable()
    foreign = []
    if canary != [True]:  # blind: whatever stands in sys.setprofile did not install the observer
        foreign.append(foreign_identity(install) or f"sys.{getattr(install, '__name__', 'setprofile')} ({install!r})")
        return result, foreign
    for code, space in ran.items():
        filename = code.co_filename
        if filename.startswith(_OWN_DIR) or (_fx_generated(code) and _fx_compiled_from_source(code)):
            continue  # the guard's own; a module torch.fx generated (checked as the forward)
        module = space.get("__name__", "<unknown>") if isinstance(space, dict) else "<unknown>"
        if _trusted_file(filename) and (not _file_in_torch(filename) or _namespace_of_file(space, filename)):
            continue  # (torch's file run in a namespace of its own is not torch's: _trusted_function)
        foreign.append(qualified_name(module, getattr(code, "co_qualname", code.co_name)))
    if key is not None:
        _OBSERVED.pop(key, None)
        if not foreign:
            spaces = {id(space): space for space in ran.values() if isinstance(space, dict)}
            for space in list(spaces.values()):
                name = space.get("__name__")
                for value in list(space.values()):
                    if isinstance(value, type) and value.__module__ == name:
                        spaces[id(value)] = vars(value)
            _OBSERVED[key] = tuple(spaces.values())
            _unchanged(("observed", key), _code_held(_OBSERVED[key]))  # (held from now on)
    return result, foreign


# ---- what runs the compiled graph ------------------------------------------------------------
# Between the user's call and the graph's forward, torch's code runs: AOTAutograd's run-time
# wrappers (closures its post_compile steps made), boxed_nop's runner, the GraphModule's
# ``__call__`` (torch.fx's ``_WrappedCall``). A patch there (``RuntimeWrapper.post_compile``
# returning a closure of its own, ``_WrappedCall.__call__`` replaced) changes every output with
# no graph changed. The callable AOTAutograd hands back is read once it is built: its layers,
# closure cells and default arguments, to the end through torch's code; the ``__call__`` of each
# callable object; and what torch's code there calls by global name, through torch's functions
# to the end.

def _generated_by_torch(fn: Any) -> bool:
    """A function AOTAutograd generated from source text of its own (its run-time wrappers:
    ``subclass_codegen._compile_and_exec_source`` compiles under ``<torch file>:codegen(<name>)``
    into a namespace of its own). Trusted by that file name, as ``<string>`` methods are."""
    code = getattr(fn, "__code__", None) if type(fn) is types.FunctionType else None
    if code is None or ":codegen(" not in code.co_filename:
        return False
    source = code.co_filename.split(":codegen(", 1)[0]
    return _file_in_torch(source) and os.path.isfile(source)


def foreign_at_run_time(compiled: Any) -> dict[str, str]:
    """{identity: where} for each piece of code from outside torch (and the standard library and
    the guard) that the compiled callable will run, found as described above."""
    from torch.fx import GraphModule

    found: dict[str, str] = {}
    seen: set[int] = set()
    todo: list[tuple[Any, str]] = [(compiled, "the compiled function")]
    while todo:
        obj, where = todo.pop()
        if id(obj) in seen or isinstance(obj, types.ModuleType) or not callable(obj):
            continue
        seen.add(id(obj))
        if isinstance(obj, type):  # a class torch's code holds (AOTAutograd's CompiledFunction,
            # made per compile, holds the compiled forward and backward): what it and its torch
            # bases define; a class from outside torch (a tensor subclass) is the user's own.
            for cls in obj.__mro__:
                if cls is not object and _defined_in_torch(cls):
                    todo += [(value, f"{cls.__qualname__}.{attr} (in {where})")
                             for attr, value in vars(cls).items()
                             if not isinstance(value, type) and not attr.startswith("__")]
            continue
        if (getattr(sys.modules.get(type(obj).__module__), "__file__", None) or "").startswith(_OWN_DIR):
            continue  # the guard's own (a region's code is checked when it compiles)
        if isinstance(obj, GraphModule):  # what its class runs around the forward (torch.fx's
            # __call__ and _WrappedCall); the forward itself: the hand-over check (generated_code)
            for attr, value in vars(type(obj)).items():
                code = getattr(value, "__code__", None)
                # (its forward is compared with the checked graph's source at the hand-over;
                # other code filed under a torch.fx loader key must be compiled from its source)
                if not _fx_generated(code) or (attr != "forward" and not _fx_compiled_from_source(code)):
                    todo.append((value, f"{type(obj).__name__}.{attr}"))
            continue
        if _fx_generated(getattr(getattr(obj, "__func__", obj), "__code__", None)):
            # A graph's generated forward, bound or not (boxed_nop holds ``gm.forward`` for a
            # graph with dynamic shapes): checked whole by the hand-over check; its module's
            # class is read as any GraphModule's.
            if isinstance(obj, types.MethodType):
                todo.append((obj.__self__, where))
            continue
        generated = _generated_by_torch(obj)
        if generated or (type(obj) is types.FunctionType and _trusted_function(obj, method=True)):
            foreign = None  # (torch's, the standard library's, typing_extensions': the sweep's rule)
        else:
            foreign = foreign_identity(obj)
        if foreign is not None:
            found.setdefault(foreign, where)
            continue
        if generated:
            todo.append((getattr(obj, "__wrapped__", None), where))
        for layer in (obj,) if generated else _layers(obj):
            if isinstance(layer, types.MethodType):  # (boxed_nop runs ``gm.forward``: gm's class
                todo.append((layer.__self__, where))  # __call__ runs at its first call)
            fn = layer if type(layer) is types.FunctionType else _call_of(layer)
            if type(fn) is not types.FunctionType:
                continue
            if fn is not layer:
                foreign = foreign_identity(fn)
                if foreign is not None:
                    found.setdefault(foreign, f"the __call__ of {type(layer).__qualname__} in {where}")
                    continue
            name = getattr(fn.__code__, "co_qualname", fn.__name__)
            todo += [(value, f"{name} (in {where})") for value in _cell_values(fn)]
            space = fn.__globals__
            for global_name, attr in _names_loaded(fn.__code__):
                value, key = space.get(global_name), global_name
                if attr is not None:
                    if not isinstance(value, types.ModuleType) \
                            or not _file_in_torch(getattr(value, "__file__", None) or "<none>"):
                        continue
                    value, key = getattr(value, attr, None), attr
                elif isinstance(value, types.ModuleType):
                    continue
                if value is None or not callable(value) or _generated_by_torch(value):
                    continue  # (AOTAutograd's generated helpers, its subclass wrappers: torch's)
                item = _foreign_value(key, value)
                if item is not None:
                    found.setdefault(foreign_identity(item) or repr(item),
                                     f"{space.get('__name__', '<unknown>')}:{key}, which {name} calls")
                elif type(value) is types.FunctionType and _file_in_torch(value.__code__.co_filename):
                    # torch's function: what it calls by name is read too, to the end (round 6:
                    # a function two calls down, ``utils.normalize_as_list``; ~0.7 ms a compile)
                    todo.append((value, f"{space.get('__name__', '<unknown>')}:{key}, which {name} calls"))
    return found


# ---- a sweep of Inductor's modules ---------------------------------------------------------------
# A method patched into any Inductor class (a kernel's codegen, an IR node's create) or a
# function put under a name of an Inductor module (a lowering helper) can change what a region
# computes without touching the FX graph, the schedule or the wrapper's lines, which the effect
# checks watch. Once per compile with regions, Inductor's modules are swept for code not torch's.

@functools.lru_cache(maxsize=1)
def _stdlib_dir() -> str:
    import sysconfig

    return os.path.realpath(sysconfig.get_paths()["stdlib"]) + os.sep


@functools.lru_cache(maxsize=4096)
def _trusted_file(filename: str) -> bool:
    """Torch's files (and torchgen's), the standard library's (contextlib, enum, collections wrap
    torch code; frozen modules; the typing backport typing_extensions), and ``<string>``: the
    methods dataclasses and namedtuples generate for torch's classes."""
    if filename == "<string>" or filename.startswith("<frozen "):  # abc, os, ...: the stdlib
        return True
    real = os.path.realpath(filename)
    return real.startswith(_torch_dir()) or real.startswith(_stdlib_dir()) \
        or real == _typing_backport() or real.startswith(_torchgen_dir())


def _trusted_function(fn: Any, method: bool = False) -> bool:
    """Whether a plain function's code is torch's (or the standard library's, ...) as far as the
    sweep can tell: a trusted file (``_trusted_file``), and code that claims to be a module's runs
    in that module's namespace (``exec(compile(src, "<torch file>", "exec"), {...})`` makes a
    function whose globals are no module's). ``<string>`` code (``exec``'s default name) is
    trusted only as a class's ``method``: torch generates methods that way itself (dataclasses,
    namedtuples, ops_handler.DefaultHandler's ops), no module-level function."""
    code = fn.__code__
    if code.co_filename == "<string>" and not method:
        return False
    if not _trusted_file(code.co_filename):
        return False
    return not _file_in_torch(code.co_filename) or _runs_in_its_module(fn)


def _runs_in_its_module(fn: Any) -> bool:
    code = getattr(fn, "__code__", None)
    return isinstance(code, types.CodeType) and _namespace_of_file(getattr(fn, "__globals__", None), code.co_filename)


def _namespace_of_file(namespace: Any, filename: str) -> bool:
    """Whether ``namespace`` is the namespace of the imported module compiled from ``filename``:
    code compiled under a torch file's name and run in *another* module's namespace (the user's,
    or another torch module's) is not that file's code (round 6)."""
    module = sys.modules.get(namespace.get("__name__", "")) if isinstance(namespace, dict) else None
    if module is None or getattr(module, "__dict__", None) is not namespace:
        return False
    home = getattr(module, "__file__", None)
    return home is not None and (home == filename or _same_file(home, filename))


@functools.lru_cache(maxsize=8192)
def _realpath(filename: str) -> str:
    return os.path.realpath(filename)


@functools.lru_cache(maxsize=4096)
def _same_file(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


@functools.lru_cache(maxsize=1)
def _torchgen_dir() -> str:
    """torchgen, shipped in torch's wheel beside it (AOTAutograd imports its helpers)."""
    return os.path.join(os.path.dirname(_torch_dir().rstrip(os.sep)), "torchgen") + os.sep


@functools.lru_cache(maxsize=1)
def _typing_backport() -> str:
    """typing_extensions, the standard library's typing backport (its Protocol gives torch's
    protocol classes their __init__ and __subclasshook__)."""
    module = sys.modules.get("typing_extensions")
    return os.path.realpath(module.__file__) if getattr(module, "__file__", None) else ""


def foreign_methods(prefix: str = "torch._inductor.") -> list[tuple[str, Any]]:
    """(``module:Class.attr``, ``module:name`` or ``module:name[key]``, the code) for each
    method of an imported Inductor class or of a torch class it inherits from (``torch.fx``'s
    Interpreter under GraphLowering), each module-level function of an Inductor module, and each
    class or function an Inductor module holds in a container (a device's Scheduling class in
    ``device_codegens``), whose code was compiled outside torch (and outside the standard
    library), imports aside.

    A module, class or container whose namespace holds the very same objects as at the last
    sweep, and whose functions run the same code objects, is not looked at again (compared by
    identity, at C speed; the old objects are held, so "is" never meets a recycled one): the
    first sweep of a process costs ~150-250 ms. A sweep that finds every namespace it read last
    time (modules, classes, op tables, records) holding the very objects it held then, running
    the very code, returns the last verdict after one comparison of them all (~3-5 ms for ~30,000
    objects), the other containers (metrics and logs Inductor fills as it compiles) read again
    where they changed, so Inductor can be swept once a graph's regions compiled (what code run
    while they compiled put there).

    The classes of other packages that Inductor's classes derive from (sympy's printers under
    Inductor's ``CppPrinter``) are read too: a method of theirs compiled outside their package
    (a patch of ``sympy.printing.printer.Printer._print``) runs inside Inductor's code generation."""
    # (the modules a sweep reads: Inductor's generated code registers modules under its name,
    # one per compiled graph, which are not torch's and not read)
    live = tuple(item for name, module in list(sys.modules.items())
                 if module is not None and name.startswith(prefix)
                 and (_file_in_torch(getattr(module, "__file__", None) or "<none>")
                      or _torch_source_of(name) is not None) for item in (name, module))
    held = _SWEEPS.get(prefix)
    if held is not None and held[0] == len(live) and _unchanged(
            ("sweep", prefix), _judged_objects(live, held[1], held[4])):
        found = list(held[3])
        for where, container in held[5]:  # (lists and dicts Inductor fills as it compiles:
            found += _foreign_in_container(where, container)  # each read again if it changed)
        return found + _reached_from_tables(held[2])
    # Every namespace this sweep reads, live (the next one compares them): modules and containers,
    # whose containers are read too; classes and records, whose containers are not.
    spaces: list[Any] = []
    shallow: list[Any] = []
    filled: list[tuple[str, Any]] = []  # containers other than op tables, and what they held
    from_filled: set[int] = set()

    modules, swapped = {}, {}
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(prefix):
            continue
        if _file_in_torch(getattr(module, "__file__", None) or "<none>"):
            modules[name] = module
        elif _torch_source_of(name) is not None:  # (Inductor's generated code registers modules
            modules[name] = swapped[name] = module  # under its name too: they have no source)
    found = []
    bases: dict[type, None] = {}
    library_bases: dict[type, None] = {}  # other packages' classes Inductor's classes derive from
    containers_seen: set[int] = set()  # a table imported into many modules is swept once
    homes: dict[str, None] = {}  # the modules of the code Inductor's op tables hold
    tables: list[Any] = []  # Inductor's module-level containers (the op tables among them)

    def sweep(name: str, module: Any) -> None:
        nonlocal found
        start = len(found)
        if type(module) is not types.ModuleType:  # a module's class answers every attribute read
            # (torch's ConfigModule for Inductor's config; ``config.__class__ = Lying`` is not)
            shallow.append(vars(type(module)))
            lying = _foreign_class(type(module))
            if lying is not None:
                found.append((f"{name}.__class__", type(module)))
        spaces.append(vars(module))
        classes, functions, containers, inherited, records = _contents_of(name, module)
        found += functions
        for cls in classes:
            shallow.append(vars(cls))
            found += _foreign_members(name, cls)
            library_bases.update(dict.fromkeys(_library_bases(cls)))
        for attr, container in containers:
            if id(container) not in containers_seen:
                containers_seen.add(id(container))
                in_it = _foreign_in_container(f"{name}:{attr}", container)
                found += in_it
                if isinstance(container, dict) and container and _is_op(next(iter(container))):
                    spaces.append(container)  # an op table: its entries and their homes
                else:  # metrics, logs, registries: compared on their own at the next sweep
                    filled.append((f"{name}:{attr}", container))
                    from_filled.update(map(id, in_it))
                homes.update(dict.fromkeys(_homes_of_table(container)))
                tables.append(container)
        for attr, record in records:
            shallow.append(vars(record))
            found += _foreign_in_record(f"{name}:{attr}", record)
        bases.update(dict.fromkeys(b for b in inherited if not b.__module__.startswith(prefix)))
        if name in swapped:  # what it holds is what ``from .name import X`` in Inductor gets
            # (torch's own functions there no longer run in their module: the stand-ins first)
            found[start:] = sorted(found[start:], key=lambda item: (
                foreign_identity(item[1]) or "torch.").startswith("torch."))
            found[start:] = [(f"sys.modules[{name!r}] (a module object that is not torch's file"
                              f" {_torch_source_of(name)}): {where}", member) for where, member in found[start:]]
            if len(found) == start:  # nothing foreign inside: the module itself is the stand-in
                found.append((f"sys.modules[{name!r}] (not torch's file {_torch_source_of(name)})",
                              type(module) if type(module) is not types.ModuleType else module))

    for name, module in modules.items():
        sweep(name, module)
    # A decomposition or lowering calls helpers of its own module by global name
    # (torch._decomp.decompositions.apply_loss_reduction): the modules whose code the lowering
    # and decomposition tables hold (derived from the tables, one level) are swept as well.
    # Only their module-level values: what a decomposition calls by global name. Not their
    # classes' bases: a home module's class deriving from torch.nn.Module would make every method
    # added to nn.Module (transformers adds Module.smart_apply when it initialises weights) look
    # like a patch of the compile pipeline, which nothing there calls.
    for name in list(homes):  # one level: the tables those modules hold are not followed
        module = sys.modules.get(name)
        if name not in modules and module is not None and _file_in_torch(getattr(module, "__file__", None) or "<none>"):
            spaces.append(vars(module))
            found += _contents_of(name, module)[1]
    for base in bases:  # swept once however many Inductor classes inherit from it
        shallow.append(vars(base))
        found += _foreign_members(base.__module__, base)
    for base in library_bases:
        shallow.append(vars(base))
        found += _foreign_library_members(base)
    if swapped:  # (a stand-in module's findings are relabelled: no short cut)
        _SWEEPS.pop(prefix, None)
    else:
        _SWEEPS[prefix] = (len(live), tuple(spaces), tuple(tables),
                           [item for item in found if id(item) not in from_filled], tuple(shallow),
                           tuple(filled))
        _unchanged(("sweep", prefix), _judged_objects(live, spaces, shallow))  # (held from now on)
    # Deeper than one level: what the tables' code calls, by global name or through a module it
    # names (``utils.elementwise_dtypes`` in torch._decomp's cast wrapper), followed to the end.
    return found + _reached_from_tables(tables)


_SWEEPS: dict[str, tuple[Any, ...]] = {}


def _judged_objects(live: tuple[Any, ...], spaces: Any, shallow: Any) -> tuple[Any, ...]:
    """What a sweep's verdict depends on, as one tuple (at C speed): the modules, and the values of
    the namespaces it read, less the numbers, strings and None (no code: a counter Inductor bumps
    at every compile would make every sweep read everything again), and less the containers of
    classes and records (a class's cache dict rebound at every compile), which the sweep does not
    read either."""
    import itertools

    full, part = _objects_in(spaces), _objects_in(shallow)
    return (*live,
            *itertools.compress(full, map(operator.not_, map(_SCALARS.__contains__, map(type, full)))),
            *itertools.compress(part, map(operator.not_, map(_UNREAD.__contains__, map(type, part)))))


_SCALARS = frozenset({int, float, complex, bool, str, bytes, type(None)})
_UNREAD = _SCALARS | {dict, list, tuple, set, frozenset}


def _library_bases(cls: type) -> list[type]:
    """The classes ``cls`` derives from that another package defines (not torch, the standard
    library, builtins): sympy's StrPrinter and Printer under Inductor's printers."""
    found = []
    for base in cls.__mro__[1:]:
        module = sys.modules.get(base.__module__)
        filename = getattr(module, "__file__", None)
        if filename is not None and not _trusted_file(filename) and not filename.startswith(_OWN_DIR):
            found.append(base)
    return found


def _package_dir(module_name: str) -> str | None:
    """The directory of the top-level package ``module_name`` belongs to (its file for a
    top-level module), real path with a trailing separator."""
    top = sys.modules.get(module_name.partition(".")[0])
    filename = getattr(top, "__file__", None)
    if not filename:
        return None
    return os.path.dirname(os.path.realpath(filename)) + os.sep if os.path.basename(filename) == "__init__.py" \
        else os.path.realpath(filename)


def _foreign_library_members(cls: type) -> list[tuple[str, Any]]:
    """The methods of another package's class (a base of Inductor's) whose code (any layer) was
    compiled outside that package, the standard library, torch and the guard: a patch."""
    if _unchanged(("library class", cls), vars(cls)) and cls in _FOUND:
        return _FOUND[cls]
    home = _package_dir(cls.__module__)
    found = []
    for attr, member in list(vars(cls).items()):
        function = member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
        if type(function) is not types.FunctionType:
            if _foreign_wrapper_member(function):
                found.append((f"{cls.__module__}:{cls.__qualname__}.{attr}", function))
            continue
        for layer in _layers(function):
            code = getattr(layer, "__code__", None)
            if not isinstance(code, types.CodeType):
                continue
            filename = code.co_filename
            if (home is not None and _realpath(filename).startswith(home)) \
                    or filename.startswith(_OWN_DIR) or _trusted_function(layer, method=True):
                continue
            found.append((f"{cls.__module__}:{cls.__qualname__}.{attr}", member))
            break
    _FOUND[cls] = found
    return found


# ---- what the op tables' code reaches ----------------------------------------------------------
# A decomposition or lowering runs torch's code that calls other code by name, any number of calls
# deep: a function replaced two calls away runs inside the region as well. The names each code
# object loads (``LOAD_GLOBAL g``, and ``g.attr`` where ``g`` is a module) are read from its
# bytecode once, and followed through torch's code (closure cells too) to the end.

_LOAD_GLOBAL, _EXTENDED_ARG = dis.opmap["LOAD_GLOBAL"], dis.opmap["EXTENDED_ARG"]
_LOAD_ATTRS = {dis.opmap[name] for name in ("LOAD_ATTR", "LOAD_METHOD") if name in dis.opmap}
_GLOBAL_SHIFT = 1 if sys.version_info >= (3, 11) else 0  # (the low bit: push NULL)
_ATTR_SHIFT = 1 if sys.version_info >= (3, 12) else 0  # (3.12 folded LOAD_METHOD into LOAD_ATTR)
_REFS: dict[types.CodeType, tuple[tuple[str, str | None], ...]] = {}


def _names_loaded(code: types.CodeType) -> tuple[tuple[str, str | None], ...]:
    """(global, None) for each global a code object (and the code nested in it) loads, and
    (global, attribute) for each attribute it reads on one; cached by code object."""
    found = _REFS.get(code)
    if found is not None:
        return found
    refs: dict[tuple[str, str | None], None] = {}
    names, raw, previous, extended = code.co_names, code.co_code, None, 0
    for i in range(0, len(raw), 2):
        op, arg = raw[i], raw[i + 1] | extended
        if op == _EXTENDED_ARG:
            extended = arg << 8
            continue
        extended = 0
        if op == _LOAD_GLOBAL:
            previous = names[arg >> _GLOBAL_SHIFT]
            refs[(previous, None)] = None
        elif op in _LOAD_ATTRS and previous is not None:
            shift = _ATTR_SHIFT if op == dis.opmap["LOAD_ATTR"] else 0
            refs[(previous, names[arg >> shift])] = None
            previous = None
        elif op != 0:  # (0: the inline CACHE entries of 3.11+)
            previous = None
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            refs.update(dict.fromkeys(_names_loaded(const)))
    _REFS[code] = found = tuple(refs)
    return found


_REACHED: dict[str, Any] = {}


def _reached_from_tables(tables: list[Any]) -> list[tuple[str, Any]]:
    """(``module:name``, the value) for each callable torch's code in the op tables reaches, any
    number of calls deep, that is foreign there (``_foreign_value``). Recomputed only when a table,
    a reached name or a reached function's code changed (identity; ~1,100 names)."""
    tables = [t for t in tables if isinstance(t, dict) and t and _is_op(next(iter(t)))]
    if not tables:  # (a sweep of modules that hold no op table: AOTAutograd's)
        return []
    held = _REACHED.get("held")
    if held is not None and len(held[0]) == len(tables) and all(map(operator.is_, held[0], tables)) \
            and all(_unchanged(("reach", id(t)), t) for t in tables) \
            and all(space.get(name) is value for space, name, value in held[1]) \
            and all(map(operator.is_, held[3], map(_CODE, held[2]))):
        return _REACHED["found"]
    for t in tables:
        _unchanged(("reach", id(t)), t)
    pairs: dict[tuple[int, str], tuple[dict[str, Any], str, Any]] = {}
    functions, seen, done = [], set(), set()
    todo = [v for t in tables for v in list(t.values())]
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        for layer in _layers(obj):
            code = getattr(layer, "__code__", None)
            if type(layer) is not types.FunctionType or not _file_in_torch(code.co_filename):
                continue  # foreign code is judged where it is held; builtins run no Python
            functions.append(layer)
            todo += [v for v in _cell_values(layer) if callable(v) and not isinstance(v, type)]
            space = layer.__globals__
            if (code, id(space)) in done:
                continue
            done.add((code, id(space)))
            for name, attr in _names_loaded(code):
                value = space.get(name)
                if attr is None:
                    if value is None or isinstance(value, types.ModuleType):
                        continue
                    where, key = space, name
                elif isinstance(value, types.ModuleType) \
                        and _file_in_torch(getattr(value, "__file__", None) or "<none>"):
                    where, key = vars(value), attr
                    value = where.get(attr)
                else:
                    continue
                if value is None or not callable(value) or (id(where), key) in pairs:
                    continue
                pairs[(id(where), key)] = (where, key, value)
                if not isinstance(value, type):
                    todo.append(value)
    found = []
    for where, key, value in pairs.values():
        foreign = _foreign_value(key, value)
        if foreign is not None:
            found.append((f"{where.get('__name__', '<unknown>')}:{key}", foreign))
    _REACHED.update(held=(tuple(tables), tuple(pairs.values()), functions, tuple(map(_CODE, functions))),
                    found=found)
    return found


def inductor_modules_imported(prefix: str = "torch._inductor.") -> int:
    """How many of torch's Inductor modules are imported (its generated code's modules aside):
    a sweep is stale once this grows (~1-2 ms; counted again only when sys.modules grew or
    shrank)."""
    size = len(sys.modules)
    held = _IMPORTED.get(prefix)
    if held is not None and held[0] == size:
        return held[1]
    count = sum(1 for name in list(sys.modules) if name.startswith(prefix) and _torch_source_of(name))
    _IMPORTED[prefix] = (size, count)
    return count


_IMPORTED: dict[str, tuple[int, int]] = {}


@functools.lru_cache(maxsize=4096)
def _torch_source_of(name: str) -> str | None:
    """The file inside torch the import system loads for module ``name`` (None: torch has none,
    as for the modules Inductor registers for its generated code)."""
    base = os.path.join(_torch_dir(), *name.split(".")[1:])
    for path in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(path):
            return path
    return None


def _homes_of_table(container: Any) -> list[str]:
    """The modules (by name) whose functions an op table of Inductor's holds, in every layer
    (torch._decomp.decompositions under its out_wrapper); read again only when the table changed."""
    if not (isinstance(container, dict) and container and _is_op(next(iter(container)))):
        return []
    key = ("homes", id(container))
    if _unchanged(key, container) and key in _HOMES:
        return _HOMES[key]
    names: dict[str, None] = {}
    for value in list(container.values()):
        for layer in _layers(value):
            namespace = getattr(layer, "__globals__", None)
            if isinstance(namespace, dict) and isinstance(namespace.get("__name__"), str):
                names[namespace["__name__"]] = None
    _HOMES[key] = list(names)
    return _HOMES[key]


_HOMES: dict[Any, list[str]] = {}


def _objects_in(spaces: list[Any]) -> tuple[Any, ...]:
    """Every value of the namespaces and containers, in order, as one tuple (a name added or
    removed changes the length)."""
    import itertools

    return tuple(itertools.chain.from_iterable(
        space.values() if isinstance(space, (dict, types.MappingProxyType)) else space
        for space in spaces))


def _unchanged(key: Any, namespace: Any) -> bool:
    """Whether ``namespace`` (a namespace, or a tuple of objects) holds the very objects it held
    when last asked under ``key``, and its functions run the very code they ran then (identity,
    at C speed, allocating nothing per object): ``fn.__code__`` written in place keeps every
    object's identity."""
    values = tuple(namespace.values()) if hasattr(namespace, "values") else tuple(namespace)
    held = _SWEPT.get(key)
    if held is not None and len(held[0]) == len(values) and all(map(operator.is_, held[0], values)):
        _, methods, functions, their_functions, codes, classes = held
        # (an object's class too: ``obj.__class__ = Foreign`` keeps the object's identity)
        if all(map(operator.is_, their_functions, map(_FUNC, methods))) \
                and all(map(operator.is_, codes, map(_CODE, functions))) \
                and all(map(operator.is_, classes, map(type, values))):
            return True
    methods, functions = _functions_in(values)
    # held: the old objects stay alive, so "is" never meets a recycled one
    _SWEPT[key] = (values, methods, functions, tuple(map(_FUNC, methods)),
                   tuple(map(_CODE, functions)), tuple(map(type, values)))
    return False


_CODE = operator.attrgetter("__code__")
_FUNC = operator.attrgetter("__func__")


def _functions_in(values: tuple[Any, ...]) -> tuple[list[Any], list[Any]]:
    """(the static and class methods among ``values``, the plain functions among them, in them
    and wrapped by them (functools.wraps' ``__wrapped__``)): what the sweep's verdict reads."""
    function = types.FunctionType
    methods = [v for v in values if type(v) is staticmethod or type(v) is classmethod]
    functions = [v for v in values if type(v) is function]
    functions += [f for f in map(_FUNC, methods) if type(f) is function]
    layer = functions
    for _ in range(8):  # (getattr: reading f.__dict__ would give every function a dict)
        layer = [w for f in layer if type(w := getattr(f, "__wrapped__", None)) is function]
        if not layer:
            break
        functions += layer
    return methods, functions


_SWEPT: dict[Any, tuple[Any, ...]] = {}
_CONTENTS: dict[tuple[str, int], tuple[list[type], list[tuple[str, Any]], list[tuple[str, Any]],
                                       list[type], list[tuple[str, Any]]]] = {}
_FOUND: dict[type, list[tuple[str, Any]]] = {}


def _contents_of(name: str, module: Any) -> tuple[list[type], list[tuple[str, Any]], list[tuple[str, Any]],
                                                  list[type], list[tuple[str, Any]]]:
    """(the classes a module defines, its module-level values that are foreign code put in place
    of a name, its module-level containers, the torch classes its classes inherit from, the
    instances of torch's classes it holds): a class is swept once, in the module that defines it.
    A function of another package bound under its own name, the very object its home module
    holds there, is an import (``from sympy import symbols``), not a patch; a wrapper, a closure,
    a lambda or a ``functools.wraps`` copy put under a torch name is not. Any other object is
    judged by its class (``_foreign_value``)."""
    if _unchanged(("module", name, id(module)), vars(module)) and (name, id(module)) in _CONTENTS:
        return _CONTENTS[(name, id(module))]  # (by object too: another module may stand under the name)
    classes, functions, containers, records = [], [], [], []
    for attr, value in list(vars(module).items()):
        if isinstance(value, type) and value.__module__ == name:
            classes.append(value)
        elif isinstance(value, (dict, list, tuple, set, frozenset)):
            containers.append((attr, value))
        elif _is_record(value) and not isinstance(value, types.ModuleType):
            records.append((attr, value))  # its fields are read at every sweep (set in place)
        elif not (attr.startswith("__") and attr.endswith("__")) \
                or isinstance(value, type) or type(value) is types.FunctionType:
            # (a module's own records, __loader__ and __spec__, are the import system's objects:
            # pytest's loader rewrites modules named test_*, torch's test_operators among them)
            foreign = _foreign_value(attr, value)
            if foreign is not None:
                functions.append((f"{name}:{attr}", foreign))
    # What the module's classes inherit from torch's code outside this module (torch.fx's
    # Interpreter under GraphLowering): a method patched there runs in Inductor as well.
    inherited = {base: None for cls in classes for base in cls.__mro__[1:]
                 if base.__module__ != name and _is_torch_class(base)}
    _CONTENTS[(name, id(module))] = (classes, functions, containers, list(inherited), records)
    return _CONTENTS[(name, id(module))]


def _foreign_function(name: str, fn: Any) -> bool:
    """A plain function compiled outside torch (and the standard library, the guard) that is not
    another package's function held under ``name`` by its own module (an import)."""
    if _trusted_function(fn) or fn.__code__.co_filename.startswith(_OWN_DIR) \
            or getattr(fn, "__lite_guarded__", False):
        return False
    home = sys.modules.get(getattr(fn, "__module__", None) or "")
    return home is None or vars(home).get(name) is not fn or _file_in_torch(
        getattr(home, "__file__", None) or "<none>")


def _foreign_value(attr: str, value: Any) -> Any:
    """What to judge if ``value``, held under ``attr`` by a torch module or by a field
    of a torch instance, is foreign: a function or class (``_foreign_code_item``), a callable of
    a trusted class that wraps foreign code (``functools.partial``, a bound method, an
    ``lru_cache``), or an object of a class defined outside torch and the standard library,
    judged as its class (``ir.ops = Proxy()``; an object its class's module holds under the same
    name is an import; an object of a library's class, held at its module's top level and
    extending nothing of torch's, is that library's, as a library's class is an import to the
    class sweep: Triton's JITFunction, jinja2's Template; a local class or a script's, in
    ``__main__``, is not); None otherwise."""
    if isinstance(value, type):
        return value if _foreign_code_item(value) else None
    if type(value) is types.FunctionType:
        return value if _foreign_function(attr, value) else None
    if isinstance(value, types.ModuleType):
        return None
    cls = type(value)
    if _trusted_class(cls):
        inner = next((layer for layer in _layers(value) if type(layer) is types.FunctionType), None)
        home = sys.modules.get(getattr(inner, "__module__", None) or "")
        if home is not None and vars(home).get(attr) is value:
            return None  # another package's cached function under its own name (Triton's
            # lru_cache'd triton_key, which Inductor imports on GPU): an import
        for layer in _layers(value):  # what a partial, a bound method or a cache wrapper runs
            if type(layer) is types.FunctionType and _foreign_function(layer.__name__, layer):
                return value
        return None
    home = sys.modules.get(cls.__module__)
    if home is not None and vars(home).get(attr) is value:
        return None  # another package's object under its own name: an import
    if (getattr(home, "__file__", None) or "").startswith(_OWN_DIR):
        return None  # the guard's own
    if home is not None and cls.__module__ != "__main__" and vars(home).get(cls.__qualname__) is cls \
            and not any(_is_torch_class(b) for b in cls.__mro__[1:] if b is not object):
        return None  # a library's object (Triton's JITFunction on GPU, jinja2's Template), as
    return cls  # a library's class is an import (the class sweep's rule); a script's is not


def _trusted_class(cls: type) -> bool:
    """A class defined in a trusted file (torch's, the standard library's) or a built-in or frozen
    module, none of whose own methods was compiled elsewhere (``__module__`` can be written).
    Asked for the class of every object a swept namespace holds (a few hundred classes, asked
    thousands of times): the verdict stands while the class holds the very same objects."""
    held = _TRUSTED_CLASSES.get(cls)
    module = sys.modules.get(cls.__module__)
    if _unchanged(("trusted class", cls), vars(cls)) and held is not None and held[1] is module:
        return held[0]
    verdict = _judge_class(cls)
    _TRUSTED_CLASSES[cls] = (verdict, module)
    return verdict


_TRUSTED_CLASSES: dict[type, tuple[bool, Any]] = {}


def _judge_class(cls: type) -> bool:
    module = sys.modules.get(cls.__module__)
    if module is None:
        return False
    filename = getattr(module, "__file__", None)
    if filename is None:
        spec = getattr(module, "__spec__", None)
        if cls.__module__ not in sys.builtin_module_names and getattr(spec, "origin", None) != "frozen":
            return False
    elif not _trusted_file(filename):
        return False
    for member in list(vars(cls).values()):
        function = member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
        if type(function) is types.FunctionType and not _trusted_file(function.__code__.co_filename):
            return False
    return True


def _foreign_in_record(where: str, record: Any) -> list[tuple[str, Any]]:
    """The foreign values in the fields of a torch instance a torch module holds
    (``select_algorithm.extern_kernels.mm = f``: the generated wrapper calls it), one level;
    read again only when a field changed (identity)."""
    fields = vars(record)
    held = _RECORDS.get(where)
    if _unchanged(("record", where), fields) and held is not None and held[0] is record:
        return held[1]
    found = []
    for attr, value in list(fields.items()):
        if isinstance(value, (dict, list, tuple, set, frozenset)) or _is_record(value):
            continue  # one level
        foreign = _foreign_value(attr, value)
        if foreign is not None:
            found.append((f"{where}.{attr}", foreign))
    _RECORDS[where] = (record, found)
    return found


_RECORDS: dict[str, tuple[Any, list[tuple[str, Any]]]] = {}


def _is_torch_class(cls: type) -> bool:
    module = sys.modules.get(cls.__module__)
    filename = getattr(module, "__file__", None)
    if filename is None and cls.__module__.startswith("torch."):  # its module swapped in sys.modules
        filename = _torch_source_of(cls.__module__)
    return _file_in_torch(filename or "<none>")


def _is_op(obj: Any) -> bool:
    return type(obj).__module__ == "torch._ops"  # OpOverload, OpOverloadPacket, HigherOrderOperator


def _foreign_in_container(where: str, container: Any) -> list[tuple[str, Any]]:
    """The foreign code a module-level container of Inductor holds: a class defined outside torch
    that extends one of torch's (a device's Scheduling or wrapper codegen), or a function compiled
    outside torch; looked into one level (a DeviceCodegen record in a dict). Entries keyed by an
    ATen op (Inductor's lowering and decomposition tables) are not: they are checked where the op
    is lowered or decomposed, so an override that no region uses never runs and is not refused.
    A record's field set in place is a change too."""
    if isinstance(container, dict) and container and _is_op(next(iter(container))):
        return []  # an op table: checked where the op is lowered or decomposed
    key = ("container", where, id(container))
    held = _HELD.get(where)
    if _unchanged(key, container if isinstance(container, dict) else tuple(container)) \
            and held is not None and (not held[1] or _unchanged((*key, "records"), _objects_in(held[1]))):
        return held[0]  # the same entries, and the records among them hold the same fields
    # Records are looked into in dicts only (registries such as device_codegens): module-level
    # lists collect per-compile records (metrics, logs), which would grow every sweep.
    records = [vars(v) for v in container.values() if _is_record(v)] if isinstance(container, dict) else []
    _unchanged((*key, "records"), _objects_in(records))
    found = []
    items = list(container.items()) if isinstance(container, dict) else list(enumerate(container))
    for key, value in items:
        if isinstance(container, dict) and _is_op(key):
            continue
        label = f"{where}[{key!r}]" if isinstance(container, dict) else where
        for item in _record_fields(value):
            if _foreign_code_item(item):
                found.append((label, item))
    _HELD[where] = (found, records)
    return found


def _is_record(value: Any) -> bool:
    """An instance of a torch class with attributes of its own (DeviceCodegen), not code."""
    return not isinstance(value, type) and type(value) is not types.FunctionType \
        and hasattr(value, "__dict__") and _is_torch_class(type(value))


_HELD: dict[str, tuple[list[tuple[str, Any]], list[Any]]] = {}


def _record_fields(value: Any) -> list[Any]:
    """A container entry, or the fields of a record of torch's it is (a tuple, a NamedTuple, a
    dataclass such as DeviceCodegen): what it holds one level down."""
    if isinstance(value, tuple):
        return list(value[:16])
    if _is_record(value):
        return [value, *list(vars(value).values())[:16]]
    return [value]


def _foreign_code_item(item: Any) -> bool:
    if isinstance(item, type):
        if _is_torch_class(item) or not any(_is_torch_class(b) for b in item.__mro__[1:]
                                            if b is not object):
            return False  # torch's class, or another package's that extends nothing of torch's
        module = sys.modules.get(item.__module__)
        return not (getattr(module, "__file__", None) or "").startswith(_OWN_DIR)  # the guard's
    if type(item) is types.FunctionType:
        filename = item.__code__.co_filename
        if _trusted_function(item) or filename.startswith(_OWN_DIR) or getattr(item, "__lite_guarded__", False):
            return False
        # Another package's function held under its own name by its own module is a reference
        # to that package (a Triton helper in a table of Inductor's), as in _contents_of.
        home = sys.modules.get(getattr(item, "__module__", None) or "")
        return home is None or vars(home).get(item.__name__) is not item or _file_in_torch(
            getattr(home, "__file__", None) or "<none>")
    return False


def _foreign_members(name: str, cls: type) -> list[tuple[str, Any]]:
    if _unchanged(("class", cls), vars(cls)) and cls in _FOUND:
        return _FOUND[cls]
    found = []
    for attr, member in list(vars(cls).items()):
        # Methods only (functions, static and class methods): torch's classes also hold
        # other packages' callables as attributes (a sympy printer's bound doprint).
        function = member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
        if type(function) is not types.FunctionType:
            if _foreign_wrapper_member(function):  # a partial (or cache) of foreign code, called
                found.append((f"{name}:{cls.__qualname__}.{attr}", function))  # as the method
            elif _foreign_code_item(member if isinstance(member, type) else type(member)):
                # A class (or an instance of one) from outside torch that extends torch's, held
                # where torch holds one of its own (``CppVecKernel.overrides``: the class whose
                # methods write every op of the kernel)
                found.append((f"{name}:{cls.__qualname__}.{attr}",
                              member if isinstance(member, type) else type(member)))
            continue
        if _trusted_function(function, method=True):
            continue
        if getattr(function, "__lite_guarded__", False):
            continue  # the guard's hook wrapper: it checks what it wraps at each call
        # The guard's probes sit there during a compile too: what they wrap counts.
        layers = [layer for layer in _layers(function) if getattr(layer, "__code__", None) is not None]
        if any(not _trusted_function(layer, method=True) and not layer.__code__.co_filename.startswith(_OWN_DIR)
               for layer in layers):
            found.append((f"{name}:{cls.__qualname__}.{attr}", member))
    _FOUND[cls] = found
    return found


def _foreign_wrapper_member(value: Any) -> bool:
    """A callable of a trusted class stored as a class attribute (``functools.partial``, an
    ``lru_cache``, a bound method) that runs foreign code: called through the class as its method
    would be (``CppOverrides.cos(x)``). A bound method of another package's object that is that
    object's own method (a sympy printer's ``doprint``) is that package's, not a patch."""
    if isinstance(value, type) or not callable(value) or not _trusted_class(type(value)):
        return False
    owner, func = getattr(value, "__self__", None), getattr(value, "__func__", None)
    if func is not None and owner is not None and any(
            vars(c).get(getattr(func, "__name__", "")) is func
            for c in (owner if isinstance(owner, type) else type(owner)).__mro__):
        return False
    return any(type(layer) is types.FunctionType and _foreign_function(layer.__name__, layer)
               for layer in _layers(value))


def check_inductor_classes(judged: dict[str, Any] | None = None) -> None:
    """Refuse every method patched into an Inductor class (and function put into an Inductor
    module) unless the registry allows its code in regions (lite = "region"/"always" under its
    own identity). ``judged``: where -> what was judged (and allowed) there earlier in this
    compile; judged once (a compile sweeps several times: one ledger row each)."""
    for where, member in foreign_methods():
        if judged is not None and judged.get(where) is member:
            continue
        check_code(member, "lowering", f"it was patched into {where}, in torch's place; register it"
                   " under this name, or remove the patch for lite compiles", in_region=True)
        if judged is not None:
            judged[where] = member
    check_virtualized_handlers(judged)


def check_aot_autograd(change: str) -> None:
    """A graph changed between AOTAutograd's partitioner (or inference trace) and the lite
    compiler (``change``): AOTAutograd's own steps are the reference, but foreign code put in
    its modules (a step patched to rewrite the graph and return before the lite compiler is
    called, off the call path) is the cause torch's code is not: it runs as itself. Swept only
    when such a change is seen (AOTAutograd's modules, as Inductor's are)."""
    for where, member in foreign_methods("torch._functorch."):
        check_code(member, "aot", f"it was patched into {where}, in torch's place, and {change};"
                   " register it under this name, or remove the patch for lite compiles")


def check_virtualized_handlers(judged: dict[str, Any] | None = None) -> None:
    """Inductor reads some of its strategy from per-thread handlers (``V.choices``: torch's own
    documentation suggests ``V.set_choices_handler(MyHeuristics())``), not from config. A handler
    of a class defined outside torch installed in this thread runs in every region compile: it
    runs as its class, registered (lite = "region") or refused. Every ``Virtualized`` of Inductor's
    is read (found by type, not by name)."""
    virtualized = sys.modules.get("torch._inductor.virtualized")
    kind = getattr(virtualized, "Virtualized", None)
    local = getattr(virtualized, "threadlocal", None)
    if kind is None or local is None:
        return
    for attr, value in list(vars(virtualized).items()):
        if not isinstance(value, kind):
            continue
        handler = getattr(local, getattr(value, "_key", ""), None)
        if handler is None or isinstance(handler, type):
            continue
        if judged is not None and judged.get(f"V.{attr}") is type(handler):
            continue
        check_code(type(handler), "lowering", (
            f"an instance is installed as Inductor's virtualized {attr.lstrip('_')!r} handler in this"
            " thread (torch._inductor.virtualized.V); register it under this name, or remove the"
            " handler for lite compiles"), in_region=True)
        if judged is not None:
            judged[f"V.{attr}"] = type(handler)


def check_callees(fn: Any, torch_name: str, stage: str) -> None:
    """The functions torch's pass ``fn`` calls by its module's global names (``co_names`` read
    in ``__globals__``), one level down: one replaced there would run under the pass's
    permission, so it runs as itself. ~2-8 us a hooked call (lookups, cached provenance)."""
    for layer in _layers(fn):
        code, globals_ = getattr(layer, "__code__", None), getattr(layer, "__globals__", None)
        if code is None or globals_ is None or not _file_in_torch(code.co_filename):
            continue  # the guard's own wrapper (what it wraps is the next layer), or foreign
        for name in code.co_names:
            value = globals_.get(name)
            if type(value) is not types.FunctionType or _trusted_function(value) \
                    or getattr(value, "__lite_guarded__", False):
                continue
            home = sys.modules.get(getattr(value, "__module__", None) or "")
            if home is not None and vars(home).get(name) is value and not _file_in_torch(
                    getattr(home, "__file__", None) or "<none>"):
                continue  # an import of another package's function, under its own name
            check_code(value, stage, f"it is called by torch's '{torch_name}' as"
                       f" {globals_.get('__name__')}.{name} (a monkeypatch); register it under"
                       " this name, or remove the patch for lite compiles")
    # (Every layer of torch's: a decorator's wrapper and the function it wraps. Deeper than one
    # call is the effect checks' and the sweep's job.)


def check_call_path(stage: str, here: str) -> None:
    """The frames that led to ``here`` (the lite compiler's entry from AOTAutograd): code from
    outside torch running in a torch place on that path (a torch module's global its torch
    caller called by name, a method of a torch class it runs as) stands in torch's code, so it
    runs as itself: a wrapper around ``aot_module_simplified`` or Dynamo's
    ``WrapBackendDebug.__call__`` rewrites the graph before the lite compiler sees it. A user's
    own backend that calls the lite backend holds no torch place: it is not judged. ~50 us a
    compile (frames read once; foreign frames looked at)."""
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if not _trusted_file(code.co_filename) and not code.co_filename.startswith(_OWN_DIR):
            place = _torch_place_of(frame)
            if place is not None:
                module = frame.f_globals.get("__name__", "<unknown>")
                from lite_compiler import guard

                guard.check(qualified_name(module, code.co_qualname), stage, "function", where=(
                    f"it stands in for torch's {place}, on the path from Dynamo to {here} (a"
                    " monkeypatch); register it under this name, or remove the patch for lite"
                    " compiles"))
        frame = frame.f_back


def _torch_place_of(frame: Any) -> str | None:
    """Where torch holds the function a foreign frame runs: a method of a torch class (its
    ``self``'s), or a global its caller, torch's code, called by name; None if torch holds it
    nowhere (a user's callable torch was handed)."""
    code = frame.f_code

    def runs(value: Any) -> bool:
        return any(getattr(layer, "__code__", None) is code for layer in _layers(value))

    receiver = frame.f_locals.get(code.co_varnames[0]) if code.co_argcount else None
    for cls in (type(receiver).__mro__ if receiver is not None else ()):
        member = vars(cls).get(code.co_name)
        if member is not None and _is_torch_class(cls) and runs(member):
            return f"{cls.__module__}:{cls.__qualname__}.{code.co_name}"
    caller = frame.f_back
    if caller is not None and _file_in_torch(caller.f_code.co_filename):
        for name in caller.f_code.co_names:
            value = caller.f_globals.get(name)
            if value is not None and callable(value) and runs(value) \
                    and not (type(value) is types.FunctionType and not _foreign_function(name, value)):
                return f"{caller.f_globals.get('__name__')}:{name}"  # (an import is not a place)
    return None


def foreign_entries(key: str, table: dict[Any, Any]) -> list[tuple[Any, Any]]:
    """(key, value) of a lowering table's entries whose code is not torch's, or that are torch's
    lowering of other ops put under this key (``lowering_moved``); the table is read again only
    when its values changed since the last call (ids compared)."""
    if _unchanged(("table", key), table) and key in _TABLES:
        return _TABLES[key]
    found = [(k, v) for k, v in list(table.items())
             if foreign_identity(v) is not None or foreign_in_cells(v) is not None
             or lowering_moved(k, v) is not None]
    _TABLES[key] = found
    return found


_TABLES: dict[str, list[tuple[Any, Any]]] = {}


def lowering_moved(op: Any, lowering: Any) -> tuple[Any, ...] | None:
    """The ops torch registered ``lowering`` for, if ``op`` is not among them: torch's own code
    moved under another op (``lowerings[aten.cos] = lowerings[aten.sin]``) computes the other
    op, and provenance alone sees torch's code. Torch's ``register_lowering`` keeps the ops it
    registers a lowering for in the closure of the wrapper it puts in the table (``aten_fn``,
    overloads expanded); a lowering without that record (foreach lowerings, foreign code) is
    not judged here. Only the table's own entry is read: torch itself registers one op's
    lowering through another's (``register_lowering(aten.view)(lowerings[aten.reshape])``)."""
    ops = _lowering_ops(lowering)
    if ops is not None and op not in ops:
        return ops
    # The wrapper is torch's own for ``op``, but the function it calls (the closure cell
    # functools.wraps recorded as __wrapped__ when torch made it) was rewritten: what the cell
    # holds is what runs (``decomp_fn`` set to torch's lowering of sin).
    held = rewired_cell(lowering)
    if held is None:
        return None
    return _lowering_ops(held) or _wrapped_by(held) or (getattr(held, "__qualname__", repr(held)),)


def _lowering_ops(lowering: Any) -> tuple[Any, ...] | None:
    """The ops torch's ``register_lowering`` recorded in the wrapper's closure (``aten_fn``)."""
    code = getattr(lowering, "__code__", None)
    if code is None or "aten_fn" not in code.co_freevars or not _file_in_torch(code.co_filename):
        return None
    try:
        ops = lowering.__closure__[code.co_freevars.index("aten_fn")].cell_contents
    except (TypeError, ValueError, IndexError):  # an empty cell: nothing recorded
        return None
    return tuple(ops) if isinstance(ops, (list, tuple)) else None


def _wrapped_by(fn: Any) -> tuple[Any, ...] | None:
    """The ops of the lowering wrapper torch made around ``fn`` (its ``__wrapped__``)."""
    lowering = sys.modules.get("torch._inductor.lowering")
    for wrapper in list(getattr(lowering, "lowerings", {}).values()):
        if getattr(wrapper, "__wrapped__", None) is fn:
            return _lowering_ops(wrapper)
    return None


def rewired_cell(fn: Any) -> Any:
    """For torch's wrapper made with ``functools.wraps(f)`` over a function ``f`` it closes over
    (register_lowering's ``wrapped``): the callable its cells hold in ``f``'s place when none of
    them holds ``f`` any more (a cell written after torch made it); None otherwise."""
    wrapped, cells = getattr(fn, "__wrapped__", None), getattr(fn, "__closure__", None)
    code = getattr(fn, "__code__", None)
    if type(wrapped) is not types.FunctionType or not cells or code is None \
            or not _file_in_torch(code.co_filename):
        return None
    held = [value for value in _cell_values(fn) if callable(value) and not isinstance(value, type)]
    if not held or any(value is wrapped for value in held):
        return None
    return held[0]


def _cell_values(fn: Any) -> list[Any]:
    """What a function's closure cells and default arguments hold (empty cells left out)."""
    values = []
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            values.append(cell.cell_contents)
        except ValueError:
            pass
    values += list(getattr(fn, "__defaults__", None) or ())
    values += list((getattr(fn, "__kwdefaults__", None) or {}).values())
    return values


def foreign_in_cells(obj: Any) -> str | None:
    """The identity of foreign code held by a closure cell or a default argument of torch's code
    in ``obj`` (every layer, one level): a cell of a torch wrapper is code it calls."""
    for layer in _layers(obj):
        code = getattr(layer, "__code__", None)
        if not isinstance(code, types.CodeType) or not _file_in_torch(code.co_filename):
            continue
        for value in _cell_values(layer):
            if type(value) is types.FunctionType or isinstance(value, (functools.partial, types.MethodType)):
                found = foreign_identity(value)
                if found is not None:
                    return found
    return None


# ---- decompositions: torch's code under the op torch registered it for --------------------------

def check_region_decomposition(op: Any, decomposition: Any) -> None:
    """A decomposition about to run on ``op`` inside a region: foreign code runs as itself
    (registered, or refused); torch's decomposition of other ops moved under ``op``
    (``decompositions[aten.hardsigmoid] = decompositions[aten.hardswish]``) computes those ops
    and runs as ``torch._inductor.decomposition:decompositions[<op>]``."""
    check_region_code(decomposition, "aot", "it is a decomposition in Inductor's table (an edit of"
                      " torch's); register it under this name, or remove it for lite compiles")
    from lite_compiler import guard

    held = foreign_in_cells(decomposition)
    if held is not None:
        judged_in_region(lambda: guard.check(held, "aot", "function", where=(
            f"it is held in a closure cell or default of torch's decomposition of {op} in"
            " Inductor's table (code that decomposition calls); register it under this name,"
            " or remove it for lite compiles")))
    moved = decomposition_moved(op, decomposition)
    if moved is None:
        return
    names = ", ".join(list(dict.fromkeys(str(o) for o in moved))[:3]) + (", ..." if len(moved) > 3 else "")
    judged_in_region(lambda: guard.check(
        f"torch._inductor.decomposition:decompositions[{op}]", "aot", "function",
        where=(f"the decomposition of {op} in Inductor's table is torch's decomposition of {names},"
               f" moved under {op} (it computes those ops); remove the remap for lite compiles")))


def decomposition_moved(op: Any, decomposition: Any) -> tuple[Any, ...] | None:
    """The ops torch registered ``decomposition`` for, if ``op`` is not among them; None when it
    is, or when torch keeps no record of it. Torch's records: the kernel bound into a
    CompositeImplicitAutograd decomposition (``functools.partial(..., kernel=op)``), torch._decomp's
    global tables (``register_decomposition``) and the op's own Python kernels (``py_impl``).
    Decompositions Inductor registers straight into its own table keep no record: not judged."""
    if isinstance(decomposition, functools.partial) and "kernel" in (decomposition.keywords or {}):
        kernel = decomposition.keywords["kernel"]
        return None if kernel is op else (kernel,)
    from torch._decomp import global_decomposition_table

    tables = global_decomposition_table.values()
    if any(table.get(op) is decomposition for table in tables):
        return None
    if any(kernel is decomposition for kernel in getattr(op, "py_kernels", {}).values()):
        return None
    return _registered_ops(tables).get(id(decomposition))


def _registered_ops(tables: Any) -> dict[int, tuple[Any, ...]]:
    """id(decomposition) -> the ops torch._decomp's tables hold it under (rebuilt when a table's
    size changes; the functions are held by the tables themselves)."""
    tables = list(tables)
    sizes = tuple(len(t) for t in tables)
    if _REGISTERED.get("sizes") != sizes:
        found: dict[int, list[Any]] = {}
        for table in tables:
            for registered_op, fn in list(table.items()):
                found.setdefault(id(fn), []).append(registered_op)
        _REGISTERED.clear()
        _REGISTERED.update(sizes=sizes, ops={k: tuple(v) for k, v in found.items()})
    return _REGISTERED["ops"]


_REGISTERED: dict[str, Any] = {}


# ---- the guard's own code ------------------------------------------------------------------------
# The guard decides with its own functions (guard.check, the provenance and effect checks) and the
# registry core's (lite_guard.registry's match_pass): a library that rebinds one of them
# (``lite_compiler.guard.check = lambda *a, **k: None``, a ``__code__`` written in place) turns
# every refusal off without touching torch. Each name a module of the guard (or of the registry
# core) binds with ``def`` or ``class`` in its source must still hold that code: compiled from the
# guard's own files (decorators' wrappers from the standard library or torch around it).

_OWN_PACKAGES = ("lite_compiler", "lite_guard")
_DEFINED: dict[str, tuple[str, ...]] = {}  # module file -> the names its source binds by def/class


@functools.lru_cache(maxsize=1)
def _own_dirs() -> tuple[str, ...]:
    dirs = []
    for package in _OWN_PACKAGES:
        module = sys.modules.get(package)
        if getattr(module, "__file__", None):
            dirs.append(os.path.dirname(os.path.realpath(module.__file__)) + os.sep)
    return tuple(dirs)


def _defined_names(filename: str) -> tuple[str, ...]:
    """The names a module's source binds at its top level with ``def`` or ``class`` (a statement
    at the start of a line; read once per file, ~0.1 ms: no parse)."""
    found = _DEFINED.get(filename)
    if found is None:
        try:
            with open(filename, encoding="utf-8") as source:
                text = source.read()
        except (OSError, ValueError):
            text = ""
        found = tuple(dict.fromkeys(match.group(1) for match in _DEFINITION.finditer(text)))
        _DEFINED[filename] = found
    return found


_DEFINITION = re.compile(r"^(?:async[ \t]+def|def|class)[ \t]+([A-Za-z_]\w*)", re.MULTILINE)


def _not_own(value: Any, dirs: tuple[str, ...], method: bool = False) -> bool:
    """Whether ``value`` (a function, a decorated function, a class) is not the guard's own code:
    its innermost layer compiled outside the guard's files, or a layer around it outside the
    guard, torch and the standard library; a class: a method it defines, likewise."""
    if isinstance(value, type):  # (methods the standard library generates or adds, a
        # NamedTuple's ``__new__`` and ``_make``, are accepted in a class, as in torch's)
        return any(_not_own(member, dirs, method=True) for member in list(vars(value).values())
                   if isinstance(member, (types.FunctionType, staticmethod, classmethod, property)))
    if isinstance(value, property):
        return any(_not_own(f, dirs, method) for f in (value.fget, value.fset, value.fdel) if f is not None)
    codes = [code for code in (getattr(layer, "__code__", None) for layer in _layers(value))
             if isinstance(code, types.CodeType)]
    if not codes:
        return True  # a builtin, or an object, where the guard defined a function
    own = [_realpath(code.co_filename).startswith(dirs) for code in codes]
    if method and _trusted_file(codes[-1].co_filename):
        own[-1] = True  # (what a class statement generates: a NamedTuple's methods)
    return not own[-1] or not all(mine or _trusted_file(code.co_filename)
                                  for mine, code in zip(own, codes))


def tampered_own_code() -> list[tuple[str, Any]]:
    """(``module:name``, the value) for each name a module of the guard defines with ``def`` or
    ``class`` that holds other code now. When the guard's modules and classes hold the very
    objects, running the very code, of the last check, its verdict stands (one comparison, at C
    speed: ~0.2 ms)."""
    held = _OWN_CHECKED.get("held")
    size = len(sys.modules)
    if held is not None and held[3] == size:  # the same modules: looked up by name (~50 lookups)
        live = tuple(item for name in held[4] for item in (name, sys.modules.get(name)))
    else:  # (a module imported or removed since: all of sys.modules is read, ~3,000 names)
        live = tuple(item for name, module in list(sys.modules.items())
                     if name.startswith(_OWN_PACKAGES) and module is not None for item in (name, module))
    if held is not None and held[0] == len(live) and _unchanged(("own",), _objects_in([live, *held[1]])):
        return held[2]
    dirs = _own_dirs()
    found, spaces = [], []
    for name, module in zip(live[::2], live[1::2]):
        filename = getattr(module, "__file__", None)
        if name.partition(".")[0] not in _OWN_PACKAGES or not filename or not filename.endswith(".py"):
            continue
        space = vars(module)
        spaces.append(space)
        spaces += [vars(v) for v in list(space.values()) if isinstance(v, type) and v.__module__ == name]
        for attr in _defined_names(filename):
            value = space.get(attr)
            if value is not None and _not_own(value, dirs):
                found.append((f"{name}:{attr}", value))
    _OWN_CHECKED["held"] = (len(live), tuple(spaces), found, size, live[::2])
    _unchanged(("own",), _objects_in([live, *spaces]))  # (held from now on)
    return found


_OWN_CHECKED: dict[str, tuple[Any, ...]] = {}
_OWN_VERDICT: dict[str, tuple[Any, ...]] = {}


def check_own_code(graph: str, registry: Any = None, ledger: Any = None) -> None:
    """Refuse to compile when the guard's own code was replaced (``tampered_own_code``), unless
    the registry names what stands there lite = "always" (a benchmark's timing wrappers, a
    profiler's instrumentation: registered, and a ledger row says so). Raised directly, not
    through guard.check, which may be what was replaced; the registry is not asked when its
    own code (lite_guard.registry) is what was replaced."""
    tampered = tampered_own_code()
    if not tampered:
        return
    from lite_compiler.errors import LitePassViolation

    held = _OWN_VERDICT.get("held")
    if held is not None and held[0] is tampered and held[1] is registry:
        allowed, refused = held[2], held[3]  # (the same findings, the same registry: ~1 us)
    else:
        registry_replaced = any(where.startswith("lite_guard.registry:") for where, _ in tampered)
        version = getattr(sys.modules.get("torch"), "__version__", None)
        allowed, refused = [], []
        for where, value in tampered:
            name = _stand_in_identity(value)
            entry = registry.match_pass(name) if registry is not None and not registry_replaced else None
            if entry is not None and entry.lite == "always" and (not entry.torch or entry.exists_in(version)):
                allowed.append((where, name))
            else:
                refused.append((where, name))
        _OWN_VERDICT["held"] = (tampered, registry, allowed, refused)
    if ledger is not None:
        from lite_compiler.ledger import LedgerEntry

        for where, name in allowed:
            if not any(row.name == name and row.graph == graph for row in ledger.entries):
                ledger.add(LedgerEntry(name=name, stage="config", graph=graph, allowed=True, lite="always",
                                       kind="function", reason=f"it stands in for the lite guard's own {where}"
                                       " (registered lite = \"always\": instrumentation)"))
    if not refused:
        return
    where, name = refused[0]
    raise LitePassViolation(name, "config", graph, (
        f"it stands in for the lite guard's own {where} (a monkeypatch of the guard), which would"
        " decide what lite mode refuses; remove the patch, or register instrumentation that only"
        " measures lite = \"always\""
        f"{f' (and {len(refused) - 1} more)' if len(refused) > 1 else ''}"))


def _stand_in_identity(value: Any) -> str:
    """The identity of what stands in the guard's place: the first code (a method's, for a class)
    compiled outside the guard, named by the module of its file (code written into the guard's
    function keeps the guard's globals), else the object's class."""
    dirs = _own_dirs()
    members = [m for m in vars(value).values() if isinstance(m, (types.FunctionType, staticmethod, classmethod))] \
        if isinstance(value, type) else [value]
    for member in members:
        for layer in _layers(member):
            code = getattr(layer, "__code__", None)
            if isinstance(code, types.CodeType) and not _realpath(code.co_filename).startswith(dirs) \
                    and not _trusted_file(code.co_filename):
                module = _module_of_file(code.co_filename) or getattr(layer, "__module__", None) or "<unknown>"
                return qualified_name(module, getattr(code, "co_qualname", code.co_name))
    return f"{type(value).__module__}:{type(value).__qualname__}"
