"""Static lint rules for lite-guard: reject graph passes and reorder configs no registry names.

Importing this package is cheap: libcst is imported only when a file really needs parsing, so
the cached (warm) path of ``lite_guard check`` never pays for it.
"""

from lint_rules.findings import Finding

__all__ = ["Finding"]
