"""The options ``backend="lite"`` and ``mode="lite"`` accept: ``torch.compile(..., options={...})``.

    cudagraphs       replay the lite forward and backward as CUDA graphs (lite_compiler.cudagraphs)
    bitwise_fusion   fuse pointwise ops outside regions where Inductor is proven bitwise equal to
                     ATen, falling back to ATen elsewhere (lite_compiler.bitwise_fusion)

Every option is a bool and off by default. Anything else is one clear error (LiteConfigError):
Inductor configs belong on regions, not here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lite_compiler.errors import LiteConfigError


@dataclass(frozen=True)
class LiteOptions:
    cudagraphs: bool = False
    bitwise_fusion: bool = False


# name -> type, in the order the error message lists them (derived from LiteOptions' fields).
OPTIONS: dict[str, type] = {name: bool for name in LiteOptions.__dataclass_fields__}


def parse_options(options: Mapping[str, Any] | None) -> LiteOptions:
    """``options`` as LiteOptions; an unknown key, a non-bool value or a non-dict is one error."""
    if not options:
        return LiteOptions()
    if not isinstance(options, Mapping):
        raise LiteConfigError(f"lite options must be a dict, got {type(options).__name__};"
                              " use e.g. options={\"cudagraphs\": True, \"bitwise_fusion\": True}")
    for key, value in options.items():
        if key not in OPTIONS:
            raise LiteConfigError(
                f"lite mode has no option {key!r} (it takes {sorted(OPTIONS)}); Inductor configs"
                f" belong on regions: lite_compiler.region(id=..., **{{{key!r}: ...}})")
        if not isinstance(value, OPTIONS[key]):
            raise LiteConfigError(f"lite option {key!r} must be a {OPTIONS[key].__name__},"
                                  f" got {value!r}")
    return LiteOptions(**{key: bool(value) for key, value in options.items()})
