"""Pin a timed loop's thread to one CPU core, the same core for every variant.

A host-bound step (the flex-attention example: ~60 us of kernels, ~0.4 ms of Python) measured
while the scheduler moves the thread between cores ran 1.5-2.5x slower and varied by 40% from one
fresh process to the next (H200 machine, round 13: the same variant 0.79 ms unpinned, 0.37-0.39
ms under ``taskset``), which swamps the differences between variants. Each benchmark worker pins
its main thread after its first call, so compiles keep every core and the steady-state loops of
all variants run on the same one.

``BENCH_CPU=<n>`` picks the core (default: the last one this process may use); ``BENCH_CPU=none``
leaves the scheduler alone (the rows then say ``"cpu": null``).
"""

from __future__ import annotations

import os


def pin_to_one_cpu() -> int | None:
    """Pin the calling thread (Linux: pid 0 is the caller) and return the core, or None."""
    wanted = os.environ.get("BENCH_CPU", "")
    if wanted == "none" or not hasattr(os, "sched_setaffinity"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    cpu = int(wanted) if wanted else allowed[-1]
    os.sched_setaffinity(0, {cpu})
    return cpu
