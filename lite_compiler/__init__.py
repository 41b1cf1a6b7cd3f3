"""lite_compiler: ``torch.compile(mode="lite")`` / ``backend="lite"`` with a fail-closed pass guard.

Outside regions annotated with ``lite_compiler.region(...)`` (or
``torch.fx.traceback.annotate({"compile_with_inductor": ...})``) every op runs as its ATen op,
bitwise identical to ``backend="aot_eager"``; inside them Inductor compiles fused kernels. Only
passes the lite-guard registry allows may run; anything else raises ``LitePassViolation``.
"""

from __future__ import annotations

from typing import Any

from lite_compiler.gc_deferral import full_collections_deferred

__all__ = [
    "Ledger", "LedgerEntry", "LiteCompilerError", "LiteConfigError", "LitePassViolation",
    "LiteRegionConfigError", "LiteSettingOverridden", "all_ledgers", "guard_active", "clear_ledgers",
    "last_ledger", "lite_backend", "observe", "region",
    "LiteRegionNotCompiled", "ModuleRegions", "RegionRule", "module_regions", "region_fn",
    "regions_of",
]


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
    """Check torch and the registry once, at import, so an unsupported torch (or one whose config
    lacks a key the registry forces) is one clear error here rather than at the first compile.

    Lazy Inductor: nothing here imports an Inductor module that ``import torch._dynamo`` (which
    every torch.compile imports, and our errors subclass) has not already imported. The guard's
    hooks are checked at each compile instead (guard sessions), before any pass can run; a hook
    in a module Inductor imports later (compile_fx, fx_passes: regions only) is patched and
    checked when that module is imported (lite_compiler.hooks)."""
    from lite_compiler.config import derive_configs, registry
    from lite_compiler.mode import install_lite_mode

    derive_configs(registry())
    install_lite_mode()


# Importing lite_compiler imports torch._dynamo (our errors subclass its exceptions) and checks
# the registry: full garbage collections wait until that is done (lite_compiler.gc_deferral).
with full_collections_deferred():
    from lite_compiler.annotate import LiteRegionNotCompiled, region, region_fn
    from lite_compiler.errors import (
        LiteCompilerError,
        LiteConfigError,
        LitePassViolation,
        LiteRegionConfigError,
        LiteSettingOverridden,
    )
    from lite_compiler.ledger import Ledger, LedgerEntry, all_ledgers, clear_ledgers, last_ledger
    from lite_compiler.module_regions import ModuleRegions, RegionRule, module_regions, regions_of

    _install()
