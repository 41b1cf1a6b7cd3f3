"""Pin a timed loop's process to one CPU core, the same core for every variant.

A host-bound step (the flex-attention example: ~60 us of kernels, ~0.4 ms of Python) measured
while the scheduler moves threads between cores ran 2-2.5x slower and varied by 40% from one
fresh process to the next (H200 machine, round 13: default mode's host time 0.79-1.04 ms
unpinned, 0.37-0.39 ms with the whole process under ``taskset -c 5``). Pinning only the main
thread did not help (0.64-1.2 ms): the backward runs on autograd's device thread, and every
hand-over between the two threads crosses cores. So every thread is pinned, after the first call,
so compiles keep every core; threads started later inherit the core.

The core: ``BENCH_CPU=<n>``, else the first core (not core 0, which takes most interrupts) near
the GPU (its PCI device's ``local_cpulist``), else the last core this process may use.
``BENCH_CPU=none`` leaves the scheduler alone (the rows then say ``"cpu": null``).
"""

from __future__ import annotations

import os


def _cpu_list(text: str) -> list[int]:
    """'0-7,16-23' -> [0, ..., 7, 16, ..., 23]"""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if "-" in part:
            low, high = part.split("-")
            cpus.extend(range(int(low), int(high) + 1))
        elif part:
            cpus.append(int(part))
    return cpus


def _near_the_gpu() -> list[int]:
    try:
        import torch

        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        address = f"{props.pci_domain_id:04x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}.0"
        with open(f"/sys/bus/pci/devices/{address}/local_cpulist") as handle:
            return _cpu_list(handle.read())
    except (AssertionError, AttributeError, OSError, RuntimeError, ValueError):  # no CUDA here
        return []


def pin_to_one_cpu() -> int | None:
    """Pin every thread of this process to one core and return it, or None."""
    wanted = os.environ.get("BENCH_CPU", "")
    if wanted == "none" or not hasattr(os, "sched_setaffinity"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    near = [c for c in _near_the_gpu() if c in allowed and c != 0]
    cpu = int(wanted) if wanted else (near or allowed[-1:])[0]
    for thread in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(thread), {cpu})
        except OSError:  # a thread that ended meanwhile
            pass
    return cpu
