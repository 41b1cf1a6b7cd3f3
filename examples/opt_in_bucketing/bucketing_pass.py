"""Opt-in collective bucketing for lite mode: torch's own FX bucketing, as a user custom pass.

Lite mode never runs Inductor's post-grad pipeline, so ``bucket_all_gathers_fx`` /
``bucket_reduce_scatters_fx`` do nothing there (and forcing the pipeline on in a region is
refused). A user who wants bucketing anyway installs one of these passes as
``torch._inductor.config.post_grad_custom_post_pass`` and allows it in their own registry
(``lite_guard.toml`` next to this file, ``lite = "always"``). The lite compiler then runs it on
every forward and backward graph and records it in the ledger; without the registry entry the
same config raises ``LitePassViolation`` (fail closed). See docs/distributed.md.

The passes only regroup functional collectives (``_c10d_functional.all_gather_into_tensor`` /
``reduce_scatter_tensor``): several independent collectives of one process group become one
collective on a concatenated buffer. Wrapped in a ``GraphTransformObserver``, a pass is named by
this module (``...bucketing_pass:bucket_all_gathers``), never by Inductor's pass of that name, and
needs an entry of its own.
"""

from __future__ import annotations

from typing import Any

import torch
from torch._inductor.custom_graph_pass import CustomGraphPass, get_hash_for_files


class _BucketPass(CustomGraphPass):  # lite-guard: ignore[LG001]  (abstract base, never installed)
    bucket_cap_mb: float = 2000.0  # one bucket per group for small models; torch's default cap idea

    def _run(self, gm: torch.fx.GraphModule) -> None:
        raise NotImplementedError

    def __call__(self, graph: torch.fx.Graph) -> None:
        from torch._inductor.pattern_matcher import stable_topological_sort

        gm = graph.owning_module
        if gm is None:
            raise ValueError(f"{type(self).__name__} needs a graph owned by a GraphModule")
        self._run(gm)
        # As Inductor's post_grad_passes does after bucketing: a bucketed collective may be
        # inserted after users of its members; a stable topological sort restores the order.
        stable_topological_sort(gm.graph)
        gm.graph.lint()

    def _cap(self, bucket_id: int) -> float:
        return self.bucket_cap_mb

    def uuid(self) -> Any:
        return get_hash_for_files((__file__,))


class BucketAllGathers(_BucketPass):
    """torch._inductor.fx_passes.bucketing.bucket_all_gather: independent all-gathers of one group
    become one. Pure data movement: numerics-neutral on any number of ranks."""

    def _run(self, gm: torch.fx.GraphModule) -> None:
        from torch._inductor.fx_passes.bucketing import bucket_all_gather

        bucket_all_gather(gm, self._cap)


class BucketReduceScatters(_BucketPass):
    """torch._inductor.fx_passes.bucketing.bucket_reduce_scatter: independent reduce-scatters of
    one group become one. Each element is still the same sum over the ranks, but the collective
    may add the ranks' values in a different order on a bigger buffer: bitwise-neutral with 2
    ranks (a + b == b + a), not guaranteed with more. Check on your setup before allowing it."""

    def _run(self, gm: torch.fx.GraphModule) -> None:
        from torch._inductor.fx_passes.bucketing import bucket_reduce_scatter

        bucket_reduce_scatter(gm, self._cap)


class BucketCollectives(_BucketPass):
    """Both of the above: reduce-scatters first, then all-gathers (Inductor's order)."""

    def _run(self, gm: torch.fx.GraphModule) -> None:
        from torch._inductor.fx_passes.bucketing import bucket_all_gather, bucket_reduce_scatter

        bucket_reduce_scatter(gm, self._cap)
        bucket_all_gather(gm, self._cap)
