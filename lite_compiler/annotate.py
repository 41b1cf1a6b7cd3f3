"""``lite_compiler.region``: the pleasant way to annotate a region for Inductor."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

ANNOTATION_KEY = "compile_with_inductor"


def region_annotation(id: Any = None, configs: Mapping[str, Any] | None = None,  # noqa: A002
                      module: str | None = None) -> Any:
    """The ``compile_with_inductor`` value for a region: its id, configs and (for regions put on
    a module by ``module_regions``) the module's qualified name, which the ledger reports."""
    value: dict[str, Any] = {}
    if id is not None:
        value["inductor_region"] = id
    if configs:
        value["inductor_configs"] = dict(configs)
    if module is not None:
        value["module"] = module
    return value or 0


@contextlib.contextmanager
def region(id: Any = None, **inductor_configs: Any) -> Iterator[None]:  # noqa: A002
    """Ops traced inside are compiled by Inductor in lite mode; everything else falls back.

    ``id`` keeps regions apart: regions with different ids never fuse. Keyword arguments are
    Inductor config keys for this region only (dotted keys via ``**{"triton.x": v}``).

    Also a decorator: ``@lite_compiler.region(id="act")`` on a ``def`` puts every call of the
    function into the region (``contextlib`` context managers are ``ContextDecorator`` s).
    """
    import torch.fx.traceback as fx_traceback

    annotation = region_annotation(id, inductor_configs)
    warn_if_not_compiled(annotation)
    with fx_traceback.annotate({ANNOTATION_KEY: annotation}):
        yield


class LiteRegionNotCompiled(UserWarning):
    """A region opened inside a torch.compile'd function ran eagerly: nothing in it was compiled."""


_WARNED: set[str] = set()


def warn_if_not_compiled(annotation: Any, stacklevel: int = 4) -> None:
    """Warn once per region when its Python code runs eagerly inside a ``torch.compile`` call.

    While Dynamo traces a region this code is not run for real (``is_compiling()`` is constant
    True under tracing), so the compiler gets the region. It runs for real only when Dynamo gave
    up on the frame: a graph break inside an annotation context makes Dynamo run the whole frame
    eagerly, so no region (and no op of that function) reaches the compiler, and without this
    nobody would know. Outside any compile (no frame callback installed) a region means nothing.
    """
    import torch

    if torch.compiler.is_compiling():
        return
    from torch._C._dynamo.eval_frame import get_eval_frame_callback

    if get_eval_frame_callback() is None:
        return
    name = describe(annotation)
    if name in _WARNED:
        return
    _WARNED.add(name)
    import warnings

    warnings.warn(
        f"lite_compiler: region {name} ran eagerly inside torch.compile, so nothing in it was"
        " compiled: a graph break inside the region (print, .item(), a call Dynamo cannot trace)"
        " makes Dynamo run the whole function eagerly; move the graph-breaking code out of the"
        " region (TORCH_LOGS=graph_breaks names it)", LiteRegionNotCompiled, stacklevel=stacklevel)


def describe(annotation: Any) -> str:
    """How a warning names a region: its id, and its module for ``module_regions``."""
    text = repr(region_key(annotation))
    module = region_module(annotation)
    return f"{text} (module '{module}')" if module else text


def region_fn(fn: Callable[..., Any] | None = None, *, id: Any = None,  # noqa: A002
              **inductor_configs: Any) -> Any:
    """Decorator form, usable bare or with arguments: ``@region_fn`` / ``@region_fn(id="act")``,
    or ``region_fn(fn, id=...)`` to wrap a function you did not write."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with region(id, **inductor_configs):
                return func(*args, **kwargs)

        return wrapper

    return decorate(fn) if fn is not None else decorate


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


def region_module(annotation: Any) -> str | None:
    """The qualified module name ``module_regions`` put into this region, if any."""
    if isinstance(annotation, dict):
        return annotation.get("module")
    return None
