"""Region configs: what a region's ``inductor_configs`` may set, decided by registry data.

Each key's ``[[config]]`` entry carries the policy (``region = "forced" | "free" | [values]``)
and its ``type``; the live torch config's type is checked too. Keys the registry does not
classify are refused (fail closed). The lite compiler fixes a few keys for every region.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from lite_compiler import guard
from lite_compiler.config import type_name, value_has_type
from lite_compiler.errors import LiteRegionConfigError
from lite_compiler.provenance import check_region_code, code_in

# Keys the lite compiler sets for region compiles whatever the registry says: a region graph is
# already selectively decomposed and is entirely annotated, so upstream's whole-graph lite
# switches must not decompose or fall back again; the FX graph cache would skip the passes the
# guard has to see.
REGION_FIXED_CONFIG = {
    "fallback_by_default": False,
    "selective_decompose": False,
    "fx_graph_cache": False,
    "fx_graph_remote_cache": False,
}
_FIXED_WHY = {
    "fallback_by_default": "a region is entirely annotated: nothing in it may fall back",
    "selective_decompose": "the region graph is already selectively decomposed",
    "fx_graph_cache": "a cache hit would skip every pass the guard must see",
    "fx_graph_remote_cache": "a cache hit would skip every pass the guard must see",
}


def validate_configs(key: Any, configs: Mapping[str, Any]) -> None:
    """A region may set a key only as the registry's ``region`` policy allows, to a value of the
    key's type (registry ``type`` and the live torch config's); anything else is refused."""
    import torch._inductor.config as inductor_config

    known = inductor_config.get_config_copy()
    session = guard.current_session()
    registry = session.registry if session is not None else None
    for name, value in configs.items():
        where = f"region {key!r}: inductor_configs sets '{name}' = {value!r}"
        fix = "; remove it from lite_compiler.region(...) / the compile_with_inductor annotation"
        if name in REGION_FIXED_CONFIG:
            raise LiteRegionConfigError(
                f"{where}, but lite mode fixes {name} to {REGION_FIXED_CONFIG[name]!r} for every"
                f" region ({_FIXED_WHY.get(name, 'the guard depends on it')}){fix}")
        if name not in known:
            close = difflib.get_close_matches(name, list(known), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise LiteRegionConfigError(
                f"region {key!r}: inductor_configs names '{name}', which is not a key of"
                f" torch._inductor.config{hint}; fix the key in lite_compiler.region(...) /"
                " the compile_with_inductor annotation")
        live_type = getattr(inductor_config._config.get(name), "value_type", None)
        if live_type is not None and not value_has_type(value, live_type):
            raise LiteRegionConfigError(
                f"{where}, but torch's {name} is {type_name(live_type)}, not"
                f" {type(value).__name__}{fix} or give it a value of that type")
        if registry is None:
            continue
        entry = registry.get_config(name, "inductor")
        if entry is None:
            raise LiteRegionConfigError(
                f"{where}, but no registry classifies {name}, so lite mode cannot tell whether a"
                " region may change it (fail closed); classify it in a [[config]] entry with a"
                f" region policy, or{fix[1:]}")
        allowed, why = entry.region_allows(value)
        if not allowed:
            raise LiteRegionConfigError(f"{where}, refused: {why}{fix}")
        for code in code_in(value):  # a free key holding user code: that code runs in the region
            check_region_code(code, "lowering", f"region {key!r} sets it as {name}; register it"
                              " under this name, or take it out of the region's configs")


def region_overrides(registry: Any, configs: Mapping[str, Any]) -> list[tuple[str, Any, str]]:
    """(key, value, policy) of each key a region sets, for its ledger rows."""
    rows = []
    for name, value in configs.items():
        entry = registry.get_config(name, "inductor") if registry is not None else None
        policy = entry.region_policy if entry is not None else "unclassified"
        rows.append((name, value, policy if isinstance(policy, str) else f"one of {policy!r}"))
    return rows
