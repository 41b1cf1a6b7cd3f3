"""The code that runs is the code generated from what the guard checked.

The effect checks read graphs; what runs is Python that torch.fx compiles from a graph (a
GraphModule's ``forward``). ``torch.fx.graph_module._forward_from_src`` (or anything on that
path) can compile other source while the graph stays the checked one. After the hand-over, the
forward the compiled graph calls is compared, bytecode and globals, with a compile of the
checked graph's own source.
"""

from __future__ import annotations

import types
from typing import Any

from lite_compiler import guard
from lite_compiler.provenance import compiled_in_torch


def _code_differs(ran: types.CodeType, expected: types.CodeType) -> str | None:
    """Where two code objects differ (instructions, names, constants; nested code too), or None.
    File names and line numbers are not compared: the same source compiled twice differs there."""
    for field in ("co_code", "co_names", "co_varnames", "co_freevars", "co_argcount",
                  "co_kwonlyargcount", "co_flags"):
        if getattr(ran, field) != getattr(expected, field):
            return field
    if len(ran.co_consts) != len(expected.co_consts):
        return "co_consts"
    for a, b in zip(ran.co_consts, expected.co_consts):
        if isinstance(a, types.CodeType) and isinstance(b, types.CodeType):
            inner = _code_differs(a, b)
            if inner is not None:
                return f"{a.co_name}.{inner}"
        elif type(a) is not type(b) or repr(a) != repr(b):
            return "co_consts"
    return None


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


def check_forward_is_graph_code(gm: Any, compiled: Any, what: str) -> None:
    """Refuse (by effect) a forward of ``gm`` that is not the code of ``gm``'s graph."""
    if not guard.enforcing():
        return
    real_recompile = getattr(gm, "real_recompile", None)  # a lazy GraphModule compiles at first call
    if callable(real_recompile) and getattr(gm, "_needs_recompile", lambda: False)():
        real_recompile()
    python_code = gm.graph.python_code(root_module="self")
    expected = _forward_code(python_code.src)
    for forward in _forwards_run(gm, compiled):
        code = getattr(forward, "__code__", None)
        differs = "not a Python function" if not isinstance(code, types.CodeType) \
            else _code_differs(code, expected)
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
