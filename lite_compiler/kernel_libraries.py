"""The C++ kernel libraries a region loads are the ones built for it, not files found in a cache.

Inductor's C++ cache (``torch._inductor.codecache``) files each kernel's shared object (and the
object files of a split build) under the hash of its source and compile command, and builds only
what is not there yet: a library planted, or written over, under a key the next compile will ask
for is loaded as it is (its initializer runs at load, its code as the region's kernel). While a
lite session is open, each target of Inductor's C++ build step (``_worker_compile_cpp``, which
torch calls in this process before it loads a library) that exists already must be one a lite
compile saw built: its bytes match an authentic record (an HMAC with the user's secret of
lite_guard's cache, as the registry cache writes them) or it was written since this compile
began (a build pool's). Any other is built again, with torch's own command, from the source it
was asked to build, and renamed over the file found (a ledger row says so); what is built is
recorded. A region's kernels loaded
before (outside a lite compile) are verified the same way after the region compiles and
reported if not authentic (the code is loaded already). Cost: a sha256 of each library a region loads (~0.1-1 ms).
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import stat
import tempfile
import types
from collections.abc import Callable
from typing import Any

from lite_compiler import guard
from lite_compiler.ledger import LedgerEntry

LAYOUT = "kernels-v1"
_SEEN: dict[str, tuple[tuple[int, ...], bytes]] = {}  # path -> (stat key, sha256) verified here
_STORE: list[Any] = []  # [AuthenticatedStore or None], opened once per process


def _store() -> Any:
    if not _STORE:
        from lite_guard.registry_cache import AuthenticatedStore

        try:
            _STORE.append(AuthenticatedStore.open_layout(LAYOUT))
        except OSError:
            _STORE.append(None)
    return _STORE[0]


def _record_name(path: str) -> str:
    return hashlib.sha256(os.path.realpath(path).encode()).hexdigest()[:48]


def _stat_key(info: os.stat_result) -> tuple[int, ...]:
    # ctime cannot be set from user space (utime sets it to now): a rewrite changes the key.
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _digest(path: str) -> tuple[tuple[int, ...], bytes] | None:
    """(stat key, sha256) of a regular file, or None (absent, a link, not a file)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            return None
        key = _stat_key(info)
        seen = _SEEN.get(path)
        if seen is not None and seen[0] == key:
            return seen
        return key, hashlib.file_digest(handle, "sha256").digest()


def verified(path: str) -> bool:
    """Whether the file at ``path`` is one a lite compile saw built (this process or another)."""
    found = _digest(path)
    if found is None:
        return False
    if _SEEN.get(path) == found:
        return True
    store = _store()
    name = _record_name(path)
    if store is not None and store.read(name, name) == found[1]:
        _SEEN[path] = found
        return True
    return False


def record(path: str) -> None:
    """``path`` was built under the guard: remember its bytes (and write the authentic record)."""
    found = _digest(path)
    if found is None:
        return
    _SEEN[path] = found
    store = _store()
    if store is not None:
        name = _record_name(path)
        store.write(name, name, found[1])


def _written_since_compile_began(path: str) -> bool:
    try:
        return os.stat(path, follow_symlinks=False).st_ctime >= guard.started() > 0.0
    except OSError:
        return False


def _rebuilt(path: str) -> None:
    sess = guard.current_session()
    if sess is not None:
        sess.ledger.add(LedgerEntry(
            name="<kernel library rebuilt>", stage="lowering", graph=sess.graph, allowed=True,
            lite="always", kind="cache", reason=(
                f"{path} in Inductor's C++ cache was not built by a lite compile (no authentic"
                " record of its bytes: planted, written over, or built outside lite mode): built"
                " again from the region's source with torch's command, in its place, before it was"
                " loaded")))


def _rebuild(lock_path: str, cpp_builders: Any, targets: list[str]) -> None:
    """Build again the targets that are not verified. The final library is built under a
    temporary name from torch's own command and renamed over the file found (atomic: another
    process that found it and is about to load it loads the old or the new file, never none);
    the object files of a split build, which only the link reads, are removed and rebuilt
    under Inductor's lock, as torch builds them."""
    from torch._inductor.codecache import LOCK_TIMEOUT
    from torch._inductor.cpp_builder import run_compile_cmd
    from torch.utils._filelock import FileLock

    *parts, final = list(zip(cpp_builders, targets))
    with FileLock(lock_path, timeout=LOCK_TIMEOUT):
        for builder, target in parts:
            if os.path.lexists(target) and not verified(target):
                os.remove(target)
            if not os.path.exists(target):
                builder.build()
        builder, target = final
        command, output = builder.get_command_line(), f" -o {target}"
        if command.count(output) != 1:  # not the command we know how to retarget: torch builds it
            os.remove(target)
            builder.build()
            return
        fresh = f"{target}.lite-{os.getpid()}-{os.urandom(4).hex()}"
        scratch = tempfile.mkdtemp(prefix=".lite-build-", dir=os.path.dirname(target))
        try:
            run_compile_cmd(command.replace(output, f" -o {fresh}"), cwd=scratch)
            os.replace(fresh, target)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
            if os.path.lexists(fresh):
                os.remove(fresh)


def verifying_build(original: Callable[..., Any]) -> Callable[..., Any]:
    """Wraps ``torch._inductor.codecache._worker_compile_cpp(lock_path, cpp_builders)``. The
    wrapper keeps torch's name (functools.wraps), so a build pool pickles it as torch's own."""
    @functools.wraps(original)
    def _worker_compile_cpp(lock_path: str, cpp_builders: Any, *args: Any, **kwargs: Any) -> Any:
        if not guard.enforcing():
            return original(lock_path, cpp_builders, *args, **kwargs)
        targets = [builder.get_target_file_path() for builder in cpp_builders]
        final = targets[-1] if targets else None
        if final is not None and os.path.lexists(final) and not verified(final) \
                and not _written_since_compile_began(final):
            _rebuild(lock_path, cpp_builders, targets)
            _rebuilt(final)
        result = original(lock_path, cpp_builders, *args, **kwargs)
        for target in targets:
            if _SEEN.get(target) != _digest(target):
                record(target)
        return result

    return _worker_compile_cpp


def check_region_kernels(namespace: dict[str, Any], region_graph: str, source: str | None = None) -> None:
    """After a region compiled: every kernel library its module holds (a function of an
    extension module loaded from a file) must be verified. One Inductor loaded earlier in this
    process outside a lite compile (its memory cache: no build step ran now) and with no
    authentic record is reported (ledger row and a LiteGuardReport warning): the code already
    loaded cannot be rebuilt, and a default-mode compile of the same kernel loads it that way."""
    if not guard.enforcing():
        return
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    # Only Inductor's C++ cache: a CUDA region's module also binds torch's own extension
    # (torch._C._cuda_getCurrentRawStream), which is torch's install, not a cached kernel.
    cache = os.path.join(os.path.realpath(cache_dir()), "")
    kernels = _kernel_sources(source) if source else {}
    for name, value in list(namespace.items()):
        owner = getattr(value, "__self__", None)
        path = getattr(owner, "__file__", None) if isinstance(owner, types.ModuleType) else None
        if not isinstance(path, str) or not path.endswith((".so", ".pyd", ".dylib")) \
                or not os.path.realpath(path).startswith(cache):
            continue
        if name in kernels:
            _check_built_from(name, kernels[name], path, region_graph)
        if path in _REPORTED or verified(path):
            continue
        _REPORTED.add(path)
        _report_unverified(path, region_graph)


def _kernel_sources(source: str) -> dict[str, str]:
    """{kernel name: its C++ source} as the region's module binds them (``name =
    async_compile.cpp_pybinding([...], r'''...''')``: a call whose last text argument is the source)."""
    import ast

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Call):
            texts = [a.value for a in node.value.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if texts:
                found[node.targets[0].id] = texts[-1]
    return found


def _check_built_from(name: str, kernel_source: str, path: str, region_graph: str) -> None:
    """By effect: the library bound as kernel ``name`` was built from the source the region's
    module gives for it. Inductor files the C++ it builds beside the library, under the same key
    (``<key>.main.cpp`` for ``<key>.main.so``), and finds libraries in a memory cache by that key:
    an entry put under another kernel's key (``CppPythonBindingsCodeCache.cache[k] = ...``) runs
    the other kernel's code, with no file changed."""
    stem, _ = os.path.splitext(path)
    try:
        with open(f"{stem}.cpp", encoding="utf-8", errors="replace") as built:
            built_from = built.read()
    except OSError:
        built_from = None
    if built_from is not None and kernel_source.strip() in built_from:
        return
    guard.refuse_effect("lowering", (
        f"the region's kernel {name} runs the library {path}, which was not built from the source"
        f" the region's module gives for {name} (" + ("no source filed beside it" if built_from is None
                                                      else f"{stem}.cpp holds other code") +
        "): Inductor's kernel cache (in memory or on disk) handed over another kernel; clear"
        " torch._inductor.codecache's caches and remove the patch for lite compiles"), graph=region_graph)


_REPORTED: set[str] = set()  # reported once a process


def _report_unverified(path: str, region_graph: str) -> None:
    import warnings

    from lite_compiler.errors import LiteGuardReport

    reason = (f"the region's kernel library {path} was loaded from Inductor's C++ cache earlier in"
              " this process, outside a lite compile, and has no authentic record: lite mode"
              " cannot verify the code already loaded (reported, not refused); remove the file"
              " and restart the process to have it built under lite mode")
    sess = guard.current_session()
    if sess is not None:
        sess.ledger.add(LedgerEntry(name="<kernel library unverified>", stage="lowering",
                                    graph=region_graph, allowed=True, lite="unregistered",
                                    kind="cache", reason=reason))
    warnings.warn(f"lite_compiler ({region_graph}): {reason}", LiteGuardReport, stacklevel=3)
