"""Observe-only guard sessions: what passes does a default-mode compile run? Never refuses."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from lite_compiler.ledger import Ledger, new_ledger
from lite_compiler.session import session


@contextlib.contextmanager
def observe(graph: str = "default") -> Iterator[Ledger]:
    try:
        from lite_compiler.config import registry

        reg = registry()
    except Exception:  # observing must work even when the registry is broken
        reg = None
    import torch

    ledger = new_ledger("observe", graph)
    # A cache hit would skip every pass; observing means compiling for real.
    with torch._inductor.config.patch(fx_graph_cache=False), \
            torch._functorch.config.patch(enable_autograd_cache=False), \
            session("observe", reg, ledger, graph=graph):
        yield ledger
