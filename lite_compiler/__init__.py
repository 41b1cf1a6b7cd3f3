"""lite_compiler: ``torch.compile(mode="lite")`` / ``backend="lite"`` with a fail-closed pass guard.

Outside regions annotated with ``lite_compiler.region(...)`` (or
``torch.fx.traceback.annotate({"compile_with_inductor": ...})``) every op runs as its ATen op,
bitwise identical to ``backend="aot_eager"``; inside them Inductor compiles fused kernels. Only
passes the lite-guard registry allows may run; anything else raises ``LitePassViolation``.
"""

from __future__ import annotations

import importlib
from typing import Any

from lite_compiler.annotate import LiteRegionNotCompiled, region, region_fn
from lite_compiler.ledger import Ledger, LedgerEntry, all_ledgers, clear_ledgers, last_ledger
from lite_compiler.module_regions import ModuleRegions, RegionRule, module_regions, regions_of

__all__ = [
    "Ledger", "LedgerEntry", "LiteCompilerError", "LiteConfigError", "LitePassViolation",
    "LiteRegionConfigError", "LiteSettingOverridden", "all_ledgers", "guard_active", "clear_ledgers",
    "last_ledger", "lite_backend", "observe", "region",
    "LiteRegionNotCompiled", "ModuleRegions", "RegionRule", "module_regions", "region_fn",
    "regions_of",
]

# The errors subclass Dynamo's ShortenTraceback (Dynamo lets it through unwrapped), so their module
# imports torch._dynamo: they are imported at first use (PEP 562), not by `import lite_compiler`.
# Dynamo is imported anyway by the first torch.compile, aot_eager's included, or earlier by a model
# library (transformers imports it); `import lite_compiler` costs only the package's own modules.
_ERRORS = ("LiteCompilerError", "LiteConfigError", "LitePassViolation", "LiteRegionConfigError",
           "LiteSettingOverridden")


def __getattr__(name: str) -> Any:
    if name in _ERRORS:
        value = getattr(importlib.import_module("lite_compiler.errors"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'lite_compiler' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_ERRORS})


def lite_backend(gm: Any, example_inputs: Any, **kwargs: Any) -> Any:
    from lite_compiler.backend import lite_backend as backend

    return backend(gm, example_inputs, **kwargs)


def observe(graph: str = "default"):
    """Record (never refuse) the passes a default-mode compile runs: ``lite_guard trace``'s other half."""
    from lite_compiler.observing import observe as _observe

    return _observe(graph)


def guard_active() -> bool:
    """Whether a lite or observe guard session is running right now."""
    from lite_compiler.guard import current_session

    return current_session() is not None


def _install() -> None:
    """Check torch's version and the registry once, at import, and route ``mode="lite"``.

    Lazy Inductor, lazy Dynamo: nothing here imports torch._dynamo or torch._inductor. Reading
    and validating the registry and deriving its lite config for this torch are the registry's
    own work (lite_guard); that every config key the registry forces exists in torch's
    Inductor/functorch config, and has its type, is checked at each lite ``torch.compile`` call
    (lite_compiler.mode) and again at each compile, where those modules are imported anyway.
    The guard's hooks are checked at each compile (guard sessions) before any pass can run."""
    from lite_compiler.config import check_torch_and_registry, registry
    from lite_compiler.mode import install_lite_mode

    check_torch_and_registry(registry())
    install_lite_mode()


_install()
