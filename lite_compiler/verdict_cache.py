"""Signature verdicts kept on disk, authenticated, so a second process pays nothing for them.

Checking a signature on every input bit pattern costs a compile and seconds of device time; its
verdict depends only on the code that ran. An entry is therefore named by a hash of:
- torch's and triton's versions;
- the device's name and compute capability;
- the signature;
- the Inductor configs the check compiled under;
- the bytes of the checking code (this module, bitwise_check, bitwise_enumerate, fusion_regions,
  bits).

So another torch, GPU, config or checker is another entry, never a stale one.

Entries live in the per-user cache of lite_guard.registry_cache, in a subdirectory only the user
may write (mode 0700). Each entry is a small JSON object that carries an HMAC-SHA256 over its name
and bytes, keyed by that directory's per-user secret (mode 0600). An entry whose MAC does not
match is not read; the signature is checked again. A cache that cannot be used is skipped without
a word. ``LITE_GUARD_VERDICT_CACHE=0`` switches it off; ``LITE_GUARD_CACHE_DIR`` moves it.

It is bounded as every lite-guard cache is (AuthenticatedStore.prune): by last use (a hit touches
its entry), 1 GiB, and PER_RUN entries per run of LITE_GUARD_CACHE_MAX_RUNS (64 x 64 = 4,096
verdicts by default: one model's compile checks tens of signatures, and each one evicted is
seconds of device time to check again).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lite_guard.registry_cache import AuthenticatedStore
from lite_guard.env_switch import switch

ENV_SWITCH = "LITE_GUARD_VERDICT_CACHE"
LAYOUT = "bitwise-verdicts-v1"
_MAX_ENTRY_BYTES = 1 << 16
PER_RUN = 64  # verdicts one run of lite-guard keeps (see the module doc)
_CODE: list[bytes] = []


def _code_digest() -> bytes:
    if not _CODE:
        digest = hashlib.sha256()
        here = Path(__file__).parent
        for name in ("verdict_cache.py", "bitwise_check.py", "bitwise_enumerate.py",
                     "fusion_regions.py", "bits.py", "data_movement.py",
                     "faithful_decompositions.py"):
            digest.update((here / name).read_bytes())
        _CODE.append(digest.digest())
    return _CODE[0]


def entry_name(key: Any, configs: Mapping[str, Any]) -> str:
    """The file name of a verdict: a hash of everything it depends on (see the module doc)."""
    import torch

    try:
        import triton  # noqa: PLC0415
        triton_version = triton.__version__
    except ImportError:
        triton_version = ""
    torch_version, _, device, sig = key
    capability = ""
    if sig[1] == "cuda" and torch.cuda.is_available():
        capability = ".".join(map(str, torch.cuda.get_device_capability()))
    text = json.dumps([LAYOUT, sys.version, torch_version, triton_version, device, capability,
                       repr(sig), repr(sorted(configs.items(), key=lambda kv: kv[0]))])
    return hashlib.sha256(text.encode() + b"\0" + _code_digest()).hexdigest()


class VerdictStore(AuthenticatedStore):
    """The verdict directory (lite_guard.registry_cache.AuthenticatedStore: verified descriptor,
    HMAC per entry)."""

    max_bytes = _MAX_ENTRY_BYTES
    suffix = ".json"
    per_run = PER_RUN
    written = False

    @classmethod
    def open(cls) -> VerdictStore | None:
        if not switch(ENV_SWITCH, True):
            return None
        return cls.open_layout(LAYOUT)

    def get(self, name: str) -> dict[str, Any] | None:
        payload = self.read(f"{name}.json", name)
        if payload is None:
            return None  # not written by us, or damaged: check again
        try:
            entry = json.loads(payload)
        except ValueError:
            return None
        types = {"bitwise": bool, "reason": str, "coverage": str, "proven": bool}
        if not isinstance(entry, dict) or set(entry) != set(types) \
                or not all(isinstance(entry[k], t) for k, t in types.items()):
            return None
        self.touch(f"{name}.json")  # last use
        return entry

    def put(self, name: str, entry: Mapping[str, Any]) -> None:
        payload = json.dumps(dict(entry), sort_keys=True).encode()
        self.written |= self.write(f"{name}.json", name, payload)

    def close(self) -> None:
        """Prune once per batch of puts (one listing, not one per verdict), then close."""
        if self.written:
            self.prune()
        super().close()
