"""The compiler's ``lite_guard`` subcommands (``trace``, ``fuzz``), found by the CLI through the
``lite_guard.commands`` entry-point group: each module has ``register(subparsers)``."""

from __future__ import annotations

import os

# Settings whose value torch uses as a path when it starts its compiler: the first to blame.
_PATH_SETTINGS = ("TORCHINDUCTOR_", "TORCH_", "TRITON_", "XDG_CACHE_HOME", "TMPDIR", "HOME")


def torch_start_problem() -> str | None:
    """Why torch's compiler stack cannot be imported in this environment (one line), else None.

    ``import torch._inductor`` creates its cache folder: ``TORCHINDUCTOR_CACHE_DIR=/dev/null``
    made trace a bare "'/dev/null': File exists" line naming no setting, and made fuzz skip
    every program (aot_eager itself failed) and exit 0 having tested nothing."""
    try:
        import torch._inductor.config  # noqa: F401
    except Exception as exc:  # noqa: BLE001  (one line for people, whatever it was)
        from lite_guard.errors import escape_text

        reason = escape_text(" ".join(f"{type(exc).__name__}: {exc}".split()))
        setting = _setting_naming(getattr(exc, "filename", None))
        what = (f"; {setting} names that path: point it at a folder you can write, or unset it"
                if setting else "; check the environment torch starts in (TORCHINDUCTOR_* settings)")
        return f"torch cannot start its compiler ({reason}){escape_text(what)}"
    return None


def _setting_naming(filename: object) -> str | None:
    if not isinstance(filename, str) or not filename:
        return None
    for prefix in _PATH_SETTINGS:
        for key, value in sorted(os.environ.items()):
            if key.startswith(prefix) and value and (
                    filename == value or filename.startswith(value.rstrip("/") + "/")):
                return f"{key}={value!r}"
    return None
