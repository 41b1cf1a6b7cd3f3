"""The options ``backend="lite"`` and ``mode="lite"`` accept: ``torch.compile(..., options={...})``.

    cudagraphs                      replay the lite forward and backward as CUDA graphs
                                    (lite_compiler.cudagraphs); default False
    bitwise_fusion                  fuse pointwise ops outside regions where Inductor is shown
                                    bitwise equal to ATen, ATen elsewhere
                                    (lite_compiler.bitwise_fusion); default False; "proven":
                                    fuse only signatures checked on every input bit pattern
    bitwise_fusion_signature_check  with bitwise_fusion: first check each op signature on every
                                    input bit pattern or a large sample, and on stress values
                                    (default True); False skips that compile and leaves the proof
                                    to each group's first-call check alone

Every option is a bool (bitwise_fusion may also be "proven"). Anything else is one clear error
(LiteConfigError): Inductor configs belong on regions, not here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lite_compiler.errors import LiteConfigError


@dataclass(frozen=True)
class LiteOptions:
    cudagraphs: bool = False
    bitwise_fusion: bool | str = False  # True, False or "proven"
    bitwise_fusion_signature_check: bool = True


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
        if key == "bitwise_fusion" and value == "proven":
            continue
        if not isinstance(value, OPTIONS[key]):
            also = " or \"proven\"" if key == "bitwise_fusion" else ""
            raise LiteConfigError(f"lite option {key!r} must be a {OPTIONS[key].__name__}{also},"
                                  f" got {value!r}")
    parsed = LiteOptions(**{key: value if value == "proven" else bool(value)
                            for key, value in options.items()})
    if "bitwise_fusion_signature_check" in options and not parsed.bitwise_fusion:
        raise LiteConfigError("lite option 'bitwise_fusion_signature_check' only applies with"
                              " 'bitwise_fusion': True; add it or drop the check option")
    if parsed.bitwise_fusion == "proven" and not parsed.bitwise_fusion_signature_check:
        raise LiteConfigError("lite option bitwise_fusion='proven' fuses only signatures the"
                              " signature check proved, so it needs"
                              " 'bitwise_fusion_signature_check': True; drop one of the two")
    return parsed
