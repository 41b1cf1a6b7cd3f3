"""On/off switches in the environment (``LITE_GUARD_REGISTRY_CACHE``, ``LITE_GUARD_VERDICT_CACHE``,
``LITE_GUARD_DEFER_GC``, ``LITE_GUARD_NO_PREFILTER``), read one way by every consumer.

On: ``1``, ``true``, ``yes``, ``on``; off: ``0``, ``false``, ``no``, ``off`` (any case, spaces
around ignored); unset or empty: the switch's default. Anything else keeps the default and says
so once per process and value, as an ``EnvSwitchWarning`` (the ``lite_guard`` command prints it
as one ``lite_guard: warning:`` line): ``LITE_GUARD_VERDICT_CACHE=off`` once left the cache on,
because only ``0`` switched it off.
"""

from __future__ import annotations

import os
import warnings

ON = ("1", "true", "yes", "on")
OFF = ("0", "false", "no", "off")
_warned: set[tuple[str, str]] = set()


class EnvSwitchWarning(UserWarning):
    """An on/off environment variable set to a value that is neither."""


def switch(name: str, default: bool) -> bool:
    """The environment variable ``name`` read as on (True) or off (False)."""
    raw = os.environ.get(name)
    value = (raw or "").strip().lower()
    if value in ON:
        return True
    if value in OFF:
        return False
    if value and (name, raw) not in _warned:
        _warned.add((name, raw))
        shown = raw if len(raw) <= 40 else raw[:20] + "..." + raw[-8:]
        warnings.warn(f"{name}={shown!r} is neither on ({', '.join(ON)}) nor off"
                      f" ({', '.join(OFF)}); the default ({'on' if default else 'off'}) is used:"
                      " set one of those or unset it", EnvSwitchWarning, stacklevel=2)
    return default
