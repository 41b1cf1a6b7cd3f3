"""``lite_compiler.region``: the pleasant way to annotate a region for Inductor."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

ANNOTATION_KEY = "compile_with_inductor"


@contextlib.contextmanager
def region(id: Any = None, **inductor_configs: Any) -> Iterator[None]:  # noqa: A002
    """Ops traced inside are compiled by Inductor in lite mode; everything else falls back.

    ``id`` keeps regions apart: regions with different ids never fuse. Keyword arguments are
    Inductor config keys for this region only (dotted keys via ``**{"triton.x": v}``).
    """
    import torch.fx.traceback as fx_traceback

    value: dict[str, Any] = {}
    if id is not None:
        value["inductor_region"] = id
    if inductor_configs:
        value["inductor_configs"] = dict(inductor_configs)
    with fx_traceback.annotate({ANNOTATION_KEY: value or 0}):
        yield


def annotation_of(meta: dict | None) -> Any:
    """The ``compile_with_inductor`` value of a node meta / current meta, or None."""
    if not meta:
        return None
    custom = meta.get("custom")
    if isinstance(custom, dict) and ANNOTATION_KEY in custom:
        return custom[ANNOTATION_KEY]
    return None


_DEFAULT_REGION = "default"


def region_key(annotation: Any) -> Any:
    if isinstance(annotation, dict) and "inductor_region" in annotation:
        return annotation["inductor_region"]
    return _DEFAULT_REGION


def region_configs(annotation: Any) -> dict[str, Any]:
    if isinstance(annotation, dict):
        return dict(annotation.get("inductor_configs") or {})
    return {}
