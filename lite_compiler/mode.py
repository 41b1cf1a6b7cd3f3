"""``torch.compile(model, mode="lite")`` after ``import lite_compiler``."""

from __future__ import annotations

import functools
from typing import Any


def install_lite_mode() -> None:
    import torch

    from lite_compiler.backend import lite_backend, register

    register()
    if getattr(torch.compile, "__lite_mode__", False):
        return
    original = torch.compile

    @functools.wraps(original)
    def compile(model: Any = None, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("mode") == "lite" and kwargs.get("backend", "inductor") in ("inductor", "lite"):
            if kwargs.get("options"):
                raise ValueError("mode='lite' takes no options: annotate regions with"
                                 " lite_compiler.region(id=..., **inductor_configs) instead")
            kwargs = {**kwargs, "mode": None, "backend": lite_backend}
            kwargs.pop("options", None)
        return original(model, *args, **kwargs)

    compile.__lite_mode__ = True  # type: ignore[attr-defined]
    torch.compile = compile
