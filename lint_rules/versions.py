"""Which torch a linted tree is, and torch version ranges written as valid PEP 440 specifiers.

The version of a tree comes from, in order:
1. ``torch/version.py`` (an installed torch or an unpacked wheel: ``__version__ = '2.13.0+cpu'``);
2. ``version.txt`` at the checkout root, the directory that holds ``torch/`` (a PyTorch source
   checkout has no ``torch/version.py`` until it is built: ``2.14.0a0``);
3. the command line (``--torch-version``).
Unknown stays unknown (``None``): a rule must then never report a ranged entry as stale.

Ranges compare the release part only (``2.13.0+cpu`` and ``2.14.0a0`` match ``>=2.13``), and a
suggested range never carries a local or pre-release part (``<2.12.0``, never ``<2.12.0+cu130``).
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

_VERSION_PY = re.compile(r"""^__version__\s*(?::\s*str\s*)?=\s*['"]([^'"]+)['"]""", re.M)


def _read(path: Path) -> str | None:
    try:
        stat = path.stat()
    except OSError:
        return None  # not cached: the file may appear later in a long-lived process
    return _read_file(path, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=256)
def _read_file(path: Path, mtime_ns: int, size: int) -> str | None:
    """The version a version.py / version.txt states (cached per file state)."""
    from lint_rules.isolation import Unreadable, read_regular

    try:  # a linted tree's version files are untrusted: a FIFO or /dev/zero must not hang us
        text = read_regular(path, 1 << 20).decode("utf-8")
    except (Unreadable, UnicodeDecodeError):
        return None
    if path.name == "version.py":
        match = _VERSION_PY.search(text)
        return valid_version(match.group(1)) if match else None
    return valid_version(text.strip().splitlines()[0].strip() if text.strip() else "")


def valid_version(text: str) -> str | None:
    try:
        Version(text)
    except (InvalidVersion, ValueError):  # ValueError: a number past CPython's 4300-digit limit
        return None
    return text


def torch_root_of(path: Path) -> Path | None:
    """The ``torch`` package directory a file or directory belongs to, if any."""
    parts = _resolved(path).parts
    for end in range(len(parts), 0, -1):  # nearest first (not path.parents: one Path per level)
        if parts[end - 1] == "torch":
            return Path(*parts[:end])
    return None


_REAL: dict[str, str] = {}  # directory -> its real path (memo)


def _resolved(path: Path) -> Path:
    """``path.resolve()``, with one lstat per directory not seen before: resolve() walks every
    component, so a tree 1,400 package directories deep cost a million lstat calls (80 s)."""
    text = os.path.abspath(path)
    if ".." in Path(os.fspath(path)).parts:
        return path.resolve()  # ".." after a symlink: only realpath gets it right
    if len(_REAL) > 65536:
        _REAL.clear()
    parent, name = os.path.split(text)
    joined = os.path.join(_real_directory(parent), name) if name else _real_directory(text)
    return Path(os.path.realpath(joined) if os.path.islink(joined) else joined)


def _real_directory(directory: str) -> str:
    chain = []
    current = directory
    while current not in _REAL:
        parent, name = os.path.split(current)
        if not name or parent == current:
            _REAL[current] = current
            break
        chain.append((current, parent, name))
        current = parent
    for current, parent, name in reversed(chain):  # down again: each from its parent
        joined = os.path.join(_REAL[parent], name)
        _REAL[current] = os.path.realpath(joined) if os.path.islink(joined) else joined
    return _REAL[directory]


def version_of_torch_dir(root: Path) -> str | None:
    """The version of the torch package at ``root``: its version.py, else the checkout's
    version.txt next to it."""
    return _read(root / "version.py") or _read(root.parent / "version.txt")


def torch_version_of(path: Path, fallback: str | None = None) -> str | None:
    """The torch version of the tree ``path`` is in (see the module doc), else ``fallback``."""
    root = torch_root_of(path)
    found = version_of_torch_dir(root) if root is not None else None
    return found or fallback


def release(version: str) -> str:
    """``2.12.0+cu130`` -> ``2.12.0``; ``2.14.0a0`` -> ``2.14.0``."""
    return ".".join(map(str, Version(version).release))


def matches(spec: str, version: str | None) -> bool:
    """Does a ``torch = "..."`` range include ``version``? An empty range, or an unknown version,
    always does."""
    if not spec or version is None:
        return True
    try:
        return Version(release(version)) in SpecifierSet(spec)
    except (InvalidVersion, InvalidSpecifier):
        return True


def upper_bound(version: str) -> str:
    """The range that ends before ``version``: a valid specifier, never a local version."""
    spec = f"<{release(version)}"
    SpecifierSet(spec)  # raises if we ever build an invalid one
    return spec


def range_of(present: list[str], scanned: list[str]) -> str:
    """The narrowest ``torch`` range that holds exactly the ``present`` versions out of the
    ``scanned`` ones (``""`` when all have it). Bounds are minor versions (``>=2.12``) unless a
    patch release of the same minor differs (``>=2.12.1``)."""
    order = sorted(scanned, key=lambda v: Version(release(v)))
    have = [v in present for v in order]
    if all(have):
        return ""
    first, last = have.index(True), len(have) - 1 - have[::-1].index(True)
    if not all(have[first:last + 1]):
        raise ValueError(f"present in {present} but not in the versions between them; write the"
                         " range by hand")
    parts = []
    if first > 0:
        lo, before = Version(release(order[first])), Version(release(order[first - 1]))
        parts.append(f">={lo.major}.{lo.minor}" if before.release[:2] != lo.release[:2] else f">={lo}")
    if last < len(order) - 1:
        hi, after = Version(release(order[last])), Version(release(order[last + 1]))
        parts.append(f"<{after.major}.{after.minor}" if hi.release[:2] != after.release[:2]
                     else f"<{after}")
    spec = ",".join(parts)
    SpecifierSet(spec)
    return spec


class RegistryAt:
    """A registry as one torch release sees it: an entry whose ``torch`` range excludes the
    release registers nothing there (the guard running on that torch would not find it
    either), so a pass or config it names is unregistered for that tree. Everything else (the
    vocabulary: bases, hooks, pipelines; the files and their hash) is the whole registry's, so
    the lint still looks for every structure any release declares."""

    def __init__(self, registry, version: str | None) -> None:
        self.whole, self.version = registry, version
        self.passes_in_range = tuple(p for p in registry.passes if matches(p.torch, version))
        self._wildcards = tuple(p for p in self.passes_in_range if "*" in p.name)

    def __getattr__(self, name: str):
        return getattr(self.whole, name)

    def get_pass(self, name: str):
        entry = self.whole.get_pass(name)
        return entry if entry is not None and matches(entry.torch, self.version) else None

    def match_pass(self, name: str):
        """Exact name first, then any wildcard entry, both only in range."""
        from fnmatch import fnmatchcase

        exact = self.get_pass(name)
        if exact is not None:
            return exact
        return next((entry for entry in self._wildcards if fnmatchcase(name, entry.name)), None)

    def get_config(self, key: str, module: str = "inductor"):
        entry = self.whole.get_config(key, module)
        return entry if entry is not None and matches(entry.torch, self.version) else None


def registry_at(registry, version: str | None) -> RegistryAt:
    """``registry`` as the torch release ``version`` sees it (unknown: every entry counts)."""
    if isinstance(registry, RegistryAt):
        return registry if registry.version == version else RegistryAt(registry.whole, version)
    return RegistryAt(registry, version)
