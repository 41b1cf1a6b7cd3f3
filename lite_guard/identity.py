"""One identity per pass, shared by the registry, the lint and the runtime guard.

Torch's own passes are named as torch names them (observer names, pattern-pass names, function
names). Every other pass is *qualified*, ``package.module:QualName``, so a third-party pass can
never borrow the permission of a torch pass that happens to share its short name. The lint
suggests exactly this string and the guard asks the registry for exactly this string.
"""

from __future__ import annotations

import re

_QUALIFIED = re.compile(r"^[A-Za-z_][\w.]*:[^:\s]+$")


def is_torch_module(module: str) -> bool:
    return module == "torch" or module.startswith("torch.")


def qualified_name(module: str, qualname: str) -> str:
    """``module:qualname``, the identity of a pass defined outside torch."""
    return f"{module}:{qualname}"


def is_qualified(name: str) -> bool:
    return bool(_QUALIFIED.match(name))


def split_qualified(name: str) -> tuple[str, str] | None:
    """(module, qualname) of a qualified identity, else None."""
    if not is_qualified(name):
        return None
    module, qualname = name.split(":", 1)
    return module, qualname


def pass_identity(module: str, qualname: str, torch_name: str | None = None) -> str:
    """The identity of a pass defined in ``module`` as ``qualname``: torch's own name inside torch
    (when torch gives it one, e.g. an observer name), else the qualified name."""
    if is_torch_module(module) and torch_name:
        return torch_name
    if is_torch_module(module):
        return qualname.rsplit(".", 1)[-1]
    return qualified_name(module, qualname)
