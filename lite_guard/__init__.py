"""lite-guard: a declarative registry of Inductor passes, tagged for lite mode.

Importing this package is cheap: it never imports torch (the compiler half lives in
``lite_compiler`` and pulls torch in only when used).
"""

__version__ = "0.1.0"

SUPPORTED_TORCH = ">=2.11,<2.15"

__all__ = ["__version__", "SUPPORTED_TORCH"]
