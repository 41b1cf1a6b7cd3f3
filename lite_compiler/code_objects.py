"""Comparing code objects: what two compiles of Python source hold, field by field.

Used where the guard checks that code which ran is the code a source compiles to (the graph's
forward against torch.fx's source, code filed under a torch.fx loader key, a region module's
``call``); no torch, no state.
"""

from __future__ import annotations

import types


def code_differs(ran: types.CodeType, expected: types.CodeType) -> str | None:
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
            inner = code_differs(a, b)
            if inner is not None:
                return f"{a.co_name}.{inner}"
        elif type(a) is not type(b) or repr(a) != repr(b):
            return "co_consts"
    return None


def code_named(module_code: types.CodeType, qualname: str) -> types.CodeType | None:
    """The code object of ``qualname`` (a function or method) compiled in ``module_code``."""
    stack = [module_code]
    while stack:
        code = stack.pop()
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                if const.co_qualname == qualname:
                    return const
                stack.append(const)
    return None
