"""``torch.compile(model, mode="lite")`` after ``import lite_compiler``.

The name ``backend="lite"`` belongs to the ``torch_dynamo_backends`` entry point (pyproject.toml):
Dynamo loads it on first use, with or without this import. Registering the name here as well
would make Dynamo's lazy entry-point load fail with "duplicate name: lite", so the import only
wraps ``torch.compile`` to route ``mode="lite"``.
"""

from __future__ import annotations

import functools
from typing import Any

from lite_compiler.gc_deferral import full_collections_deferred


def install_lite_mode() -> None:
    import torch

    if getattr(torch.compile, "__lite_mode__", False):
        return
    original = torch.compile

    @functools.wraps(original)
    def compile(model: Any = None, *args: Any, **kwargs: Any) -> Any:
        backend = kwargs.get("backend", "inductor")
        # backend="lite" goes to our function object too, not through Dynamo's name registry,
        # where another package may have registered the name first (the guard would never run).
        if (kwargs.get("mode") == "lite" and backend in ("inductor", "lite")) \
                or (backend == "lite" and kwargs.get("mode") is None):
            kwargs = {**kwargs, "mode": None}
            if not kwargs.get("options"):
                kwargs.pop("options", None)
            # The compiler stack comes in here, not at `import lite_compiler`: our backend (and
            # with it torch._dynamo, when no model library imported it yet). Full collections wait
            # meanwhile, as in every lite compile (lite_compiler.gc_deferral).
            with full_collections_deferred():
                if kwargs.get("options"):  # (no options: lite_compiler.options stays unimported)
                    from lite_compiler.options import parse_options

                    # Only lite's own options (lite_compiler.options); Inductor configs go on
                    # regions. Checked here so a typo fails at torch.compile, not at the first call.
                    parse_options(kwargs["options"])
                from lite_compiler.backend import lite_backend
                from lite_compiler.config import derive_configs, registry

                # Every config key the registry forces exists in this torch, with its type: one
                # clear error at torch.compile rather than at the first call (cached per registry).
                derive_configs(registry())
                return original(model, *args, **{**kwargs, "backend": lite_backend})
        return original(model, *args, **kwargs)

    compile.__lite_mode__ = True  # type: ignore[attr-defined]
    torch.compile = compile
