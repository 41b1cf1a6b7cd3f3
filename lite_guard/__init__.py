"""lite-guard: a declarative registry of Inductor passes, tagged for lite mode.

Importing this package is cheap: it never imports torch (the compiler half lives in
``lite_compiler`` and pulls torch in only when used).
"""

__version__ = "0.1.0"

# The torch releases lite-guard supports, inclusive minor releases: the ONE home of this range.
# Messages and the compiler's import-time check read the names below; pyproject.toml's torch
# extras (static TOML) and the README restate it, and tests/test_docs.py proves they agree.
SUPPORTED_TORCH_MINORS = ((2, 11), (2, 14))
_LOW, _HIGH = SUPPORTED_TORCH_MINORS
SUPPORTED_TORCH = f">={_LOW[0]}.{_LOW[1]},<{_HIGH[0]}.{_HIGH[1] + 1}"  # PEP 440, as pip reads it
SUPPORTED_TORCH_TEXT = f"{_LOW[0]}.{_LOW[1]} to {_HIGH[0]}.{_HIGH[1]}"  # for people

__all__ = ["__version__", "SUPPORTED_TORCH", "SUPPORTED_TORCH_MINORS", "SUPPORTED_TORCH_TEXT"]
