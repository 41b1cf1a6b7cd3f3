"""Hostile files are contained: safe reads, a parse guard, and per-file analysis in workers.

A lint run in CI must not be defeatable by one file of a pull request. So:

- ``read_regular`` reads only regular files (a FIFO would hang, ``/dev/zero`` would never end,
  a socket or device is no source file), never more than ``Limits.max_bytes``.
- ``parse_problem`` hands libcst only what CPython itself accepts, nested no deeper than
  ``Limits.max_depth`` (libcst's native parser segfaults on ~5000 nested parentheses and its
  visitors are quadratic in depth; CPython refuses past 200 nested brackets and says so).
- ``run_isolated`` analyses each file in a worker process under a time budget. A worker that
  dies (a signal), runs out of memory or time turns into ONE LG900 finding for that file, with
  the reason; a fresh worker takes over and every other file's findings are kept.
"""

from __future__ import annotations

import ast
import os
import re
import resource
import signal
import stat
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Callable, Sequence

from lint_rules.findings import FileResult, Finding

UNCHECKABLE = "LG900"


@dataclass(frozen=True)
class Limits:
    """What one file may cost. Every limit turns into an LG900 finding, never a skip."""

    max_bytes: int = 2 << 20  # larger files are generated or hostile; raise it with --max-file-size
    seconds: float = 30.0  # per file, parse and every rule
    max_depth: int = 1000  # AST nesting (an n-term a+b+... is n deep); libcst is quadratic in it
    memory_bytes: int = 4 << 30  # address space one worker may add to what it inherits


DEFAULT_LIMITS = Limits()


class Unreadable(Exception):
    """A file that is not read: the message is the LG900 text."""


def uncheckable(path: str, reason: str, line: int = 1, col: int = 1) -> FileResult:
    return FileResult([Finding(path, max(line, 1), max(col, 1), UNCHECKABLE, reason)])


def usable_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


# ---- reading ---------------------------------------------------------------------------------

_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_regular(path: str | os.PathLike, max_bytes: int = DEFAULT_LIMITS.max_bytes) -> bytes:
    """The bytes of a regular file (a symlink to one is fine), or ``Unreadable`` saying why."""
    try:
        # stat first, so a device or FIFO is never even opened (opening some devices acts).
        before = os.stat(path)
    except OSError as exc:
        raise Unreadable(f"cannot read file: {exc.strerror or exc}; it was not checked") from None
    if not stat.S_ISREG(before.st_mode):
        raise Unreadable(f"not a regular file ({_kind(before.st_mode)}); it was not read")
    if before.st_size > max_bytes:
        raise Unreadable(_too_big(before.st_size, max_bytes))
    try:
        # O_NONBLOCK: if the path was swapped for a FIFO since the stat, open does not hang.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise Unreadable(f"cannot read file: {exc.strerror or exc}; it was not checked") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable(f"not a regular file ({_kind(info.st_mode)}); it was not read")
        chunks, size = [], 0
        while size <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise Unreadable(f"cannot read file: {exc.strerror or exc}; it was not checked") from None
    finally:
        os.close(fd)
    if size > max_bytes:  # it grew after the stat
        raise Unreadable(_too_big(size, max_bytes))
    return b"".join(chunks)


_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_FIRST_TWO_LINES = re.compile(rb"([^\r\n]*)(?:\r\n|\r|\n)?([^\r\n]*)")


# Python's tree of a huge flat literal (5 million list items in a 10 MB line) needs more than a
# worker's memory; that is not nesting, and said so ("nested too deeply").
OUT_OF_MEMORY = ("cannot parse: Python's parser ran out of memory on this file (a worker may add"
                 " 4 GiB); the file was not checked (split the file or the huge expression in it)")
NESTED = "cannot parse: nested too deeply for Python's parser; the file was not checked"
# CPython's parser also raises MemoryError when its own stack overflows: 200,000 nested unary
# minus signs are a 200 KB file, not a memory problem. A source this small cannot fill a worker's
# memory (the flat 10 MB literal above needs ~400 bytes a byte), so its MemoryError is nesting.
_SMALL_SOURCE = 1 << 20


def memory_error_message(source: str) -> str:
    """The LG900 message for a MemoryError of Python's parser on ``source``."""
    return NESTED if len(source) < _SMALL_SOURCE else OUT_OF_MEMORY


def coding_cookie(data: bytes) -> str | None:
    """The PEP 263 coding cookie of a source, if any (only its first two lines can hold one;
    read without splitting the whole file into lines)."""
    if data.startswith(b"\xef\xbb\xbf"):  # Python reads the cookie after a byte-order mark
        data = data[3:]
    for line in _FIRST_TWO_LINES.match(data).groups():
        match = _CODING.match(line)
        if match:
            return match.group(1).decode("ascii")
    return None


def decode(data: bytes) -> str:
    """Source text as Python reads it (PEP 263 coding cookie, else UTF-8); raises on bad bytes."""
    cookie = coding_cookie(data)
    encoding = _normal_name(cookie) if cookie else "utf-8"
    if data.startswith(b"\xef\xbb\xbf"):
        # Python refuses a UTF-8 byte-order mark under a cookie naming another encoding
        # ("encoding problem: iso-8859-1 with BOM"): such a file never runs, so it is no file
        # to call clean (the BOM won, and a syntax error went unreported under --check-syntax).
        # "Another" as Python's tokenizer decides it: "utf-8-sig" is utf-8 to it, "UTF8" is not.
        if cookie is not None and encoding != "utf-8":
            raise LookupError(f"it starts with a UTF-8 byte-order mark but its coding cookie says"
                              f" {cookie}, which Python refuses")
        data, encoding = data[3:], "utf-8"
    return data.decode(encoding)


def _normal_name(cookie: str) -> str:
    """The encoding Python's tokenizer reads a coding cookie as (``get_normal_name`` in
    CPython's Parser/tokenizer.c): its first 12 characters, lower case, ``_`` as ``-``; "utf-8"
    and "utf-8-anything" are UTF-8, "latin-1", "iso-8859-1", "iso-latin-1" (also followed by
    "-anything") Latin-1; any other name is looked up as written. ``# coding: utf-8-sig`` under
    a byte-order mark, which Python runs, was LG900 "Python refuses" and its passes unreported;
    ``utf-8-unix`` (Emacs writes it) was "unknown encoding"."""
    short = cookie[:12].lower().replace("_", "-")
    if short == "utf-8" or short.startswith("utf-8-"):
        return "utf-8"
    if short in ("latin-1", "iso-8859-1", "iso-latin-1") \
            or short.startswith(("latin-1-", "iso-8859-1-", "iso-latin-1-")):
        return "iso-8859-1"
    return cookie


def _too_big(size: int, limit: int) -> str:
    return (f"file is {size} bytes, over the {limit}-byte limit; it was not checked"
            f" (raise it with --max-file-size if the file is genuine)")


# ---- the parse guard -------------------------------------------------------------------------

def syntax_error_message(exc: SyntaxError) -> str:
    """The LG900 text of a syntax error, naming the grammar it was parsed with: newer syntax
    (PEP 695's `type X[T] = ...` before 3.12) is an error only for an older Python, and the
    fix then is to run lite_guard on the Python the code is written for."""
    if "null bytes" in exc.msg:  # not grammar: no Python parses a NUL (3.11.4+ say so this way)
        return f"cannot parse: {exc.msg}; the file was not checked"
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    return (f"cannot parse: {exc.msg}; the file was not checked (parsed as Python {version}; if"
            f" it is written for a newer Python, run lite_guard with that one)")


def parse_problem(source: str, path: str, max_depth: int | None = None,
                  tree: ast.AST | None = None) -> Finding | None:
    """Why ``source`` must not reach libcst (an LG900 finding), or None when it may.

    CPython's own parser is the judge: libcst accepts some input CPython rejects (1000 nested
    parentheses), and crashes on some deeper input, so what CPython rejects is reported instead.
    ``tree``: CPython's tree of ``source`` when the caller already has it (saves a parse).
    """
    limit = _ACTIVE.max_depth if max_depth is None else max_depth
    try:
        if tree is None:
            tree = compile(source, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        return Finding(path, max(exc.lineno or 1, 1), max(exc.offset or 1, 1), UNCHECKABLE,
                       syntax_error_message(exc))
    except RecursionError:
        return Finding(path, 1, 1, UNCHECKABLE, NESTED)
    except MemoryError:
        return Finding(path, 1, 1, UNCHECKABLE, memory_error_message(source))
    except ValueError as exc:  # e.g. "source code string cannot contain null bytes"
        return Finding(path, 1, 1, UNCHECKABLE, f"cannot parse: {exc}; the file was not checked")
    depth, line = ast_depth(tree)
    if depth > limit:
        return Finding(path, line, 1, UNCHECKABLE,
                       f"code nested {depth} levels deep, over the limit of {limit}; the file was"
                       f" not checked (split the expression)")
    return None


def ast_depth(tree: ast.AST) -> tuple[int, int]:
    """The deepest nesting of ``tree`` and a line where it is reached; iterative (no recursion)."""
    deepest, line = 0, 1
    stack = [(tree, 1, 1)]
    while stack:
        node, depth, where = stack.pop()
        where = getattr(node, "lineno", where)
        if depth > deepest:
            deepest, line = depth, where
        stack.extend((child, depth + 1, where) for child in ast.iter_child_nodes(node))
    return deepest, line


# ---- workers ---------------------------------------------------------------------------------

Task = tuple[str, bytes, "str | None"]  # path, bytes, torch version
Analyse = Callable[[str, bytes, "str | None"], FileResult]

_ACTIVE = DEFAULT_LIMITS  # the limits of this process (a worker inherits the run's)


def use_limits(limits: Limits) -> None:
    """The run's limits, for what this process reads besides the linted files (modules the
    index reads from outside the linted paths): the same limits, whoever reads the file."""
    global _ACTIVE
    _ACTIVE = limits


def limits_in_force() -> Limits:
    return _ACTIVE
_STACK_BYTES = 256 << 20  # deep (but allowed) trees need deep recursion in libcst's visitors


def _die_with_parent(parent: int) -> None:
    """Linux: the kernel kills this worker when the parent dies (SIGTERM from a CI timeout,
    SIGKILL, the OOM killer). Orphaned workers never ended: each holds the parent's end of the
    others' pipes (inherited at fork), so none sees EOF, and all hold stdout open, so whatever
    reads the run's output (a CI step, `lite_guard check | tee`) waited forever."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: the parent's SIGTERM handler (lint_rules.command) still stops us
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(1)


def _worker_main(conn, analyse: Analyse, limits: Limits, parent: int) -> None:
    global _ACTIVE
    _ACTIVE = limits
    _die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and ends us
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's handler (a clean exit)
    # On top of what the forked worker already maps (a parent that imported CUDA torch maps
    # tens of GiB it never touches): the budget is for this file's analysis.
    budget = _mapped_bytes() + limits.memory_bytes
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            budget = min(budget, hard)
        resource.setrlimit(resource.RLIMIT_AS, (budget, hard))
    except (ValueError, OSError):
        pass  # a lower limit is already in force
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20 * limits.max_depth))
    threading.stack_size(_STACK_BYTES)
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        index, path, data, version = task
        box: list[FileResult] = []
        thread = threading.Thread(target=_analyse_one, args=(analyse, path, data, version, box))
        thread.start()
        thread.join()
        conn.send((index, box[0] if box else uncheckable(
            path, "the linter stopped on this file; the file was not checked, please report it")))


def _mapped_bytes() -> int:
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _analyse_one(analyse: Analyse, path: str, data: bytes, version: str | None,
                 box: list[FileResult]) -> None:
    try:
        box.append(analyse(path, data, version))
    except RecursionError:
        box.append(uncheckable(path, "analysis recursed too deeply; the file was not checked"))
    except MemoryError:
        box.append(uncheckable(path, "analysis ran out of memory; the file was not checked"))
    except Exception as exc:  # a bug of ours on this input: reported, never skipped
        first = (str(exc).splitlines() or [""])[0][:200]
        box.append(uncheckable(path, f"the linter failed on this file ({type(exc).__name__}:"
                                     f" {first}); the file was not checked, please report it"))


class _Worker:
    def __init__(self, context, analyse: Analyse, limits: Limits) -> None:
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_worker_main, daemon=True,
                                       args=(child, analyse, limits, os.getpid()))
        self.process.start()
        child.close()
        self.task: int | None = None
        self.deadline = 0.0

    def stop(self, kill: bool = False) -> None:
        if kill:
            self.process.kill()
        else:
            try:
                self.conn.send(None)
            except OSError:
                self.process.kill()
        self.process.join(5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.conn.close()

    def death(self) -> str:
        self.process.join(5)
        code = self.process.exitcode
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"the linter's worker was killed by {name} on this file; the file was not checked"
        return f"the linter's worker exited with status {code} on this file; the file was not checked"


def run_isolated(tasks: Sequence[Task], analyse: Analyse, *, jobs: int | None = None,
                 limits: Limits = DEFAULT_LIMITS,
                 preload: Callable[[], None] | None = None) -> list[FileResult]:
    """``analyse`` every task in worker processes; one result per task, in order, always."""
    import multiprocessing

    results: list[FileResult | None] = [None] * len(tasks)
    if not tasks:
        return []
    if preload is not None:
        preload()  # imported once here, inherited by every (re)started worker
    count = max(1, min(jobs or usable_cores(), usable_cores(), len(tasks)))
    context = multiprocessing.get_context("fork")  # workers inherit the registry, nothing pickled
    # Biggest first, so no worker is left with one huge file at the end.
    queue = deque(sorted(range(len(tasks)), key=lambda i: -len(tasks[i][1])))
    workers = [_Worker(context, analyse, limits) for _ in range(count)]
    try:
        while queue or any(w.task is not None for w in workers):
            for n, worker in enumerate(workers):
                if worker.task is None and queue:
                    workers[n] = worker = _assign(worker, queue.popleft(), tasks, results,
                                                  context, analyse, limits)
            busy = [w for w in workers if w.task is not None]
            if not busy:
                continue
            # At most an hour per wait: selectors cannot take --file-timeout 1e308 (an
            # OverflowError traceback); the loop simply waits again.
            timeout = min(max(0.0, min(w.deadline for w in busy) - time.monotonic()), 3600.0)
            ready = wait([w.conn for w in busy], timeout)
            for n, worker in enumerate(workers):
                if worker.task is None:
                    continue
                index = worker.task
                path = tasks[index][0]
                if worker.conn in ready:
                    try:
                        done, result = worker.conn.recv()
                        results[done] = result
                        worker.task = None
                        continue
                    except (EOFError, OSError):
                        results[index] = uncheckable(path, worker.death())
                        worker.stop(kill=True)
                elif time.monotonic() >= worker.deadline:
                    worker.stop(kill=True)
                    results[index] = uncheckable(
                        path, f"analysis took longer than {limits.seconds:g} s; the file was not"
                              f" checked (raise the budget with --file-timeout if it is genuine)")
                else:
                    continue
                workers[n] = _Worker(context, analyse, limits)  # a fresh one for the rest
    finally:
        for worker in workers:
            worker.stop(kill=worker.task is not None)
    return results  # type: ignore[return-value]


def run_batched(items: Sequence, check: Callable[[list], list], *, jobs: int | None = None,
                limits: Limits = DEFAULT_LIMITS, size: int = 64) -> list:
    """``check`` many small items in worker processes, ``size`` at a time (one task per file
    costs more than a cheap check of it). One answer per item, in order; None for every item
    of a batch whose worker crashed or ran out of time: the caller gives those files the
    per-file isolation of ``run_isolated``, so nothing is lost and nothing is trusted."""
    if not items:
        return []
    batches = [list(items[i:i + size]) for i in range(0, len(items), size)]
    tasks = [(f"<batch {n}>", batch, None) for n, batch in enumerate(batches)]
    done = run_isolated(tasks, lambda _label, batch, _version: check(batch), jobs=jobs,
                        limits=limits)
    answers: list = []
    for batch, result in zip(batches, done):
        answers += result if isinstance(result, list) and len(result) == len(batch) \
            else [None] * len(batch)
    return answers


def _assign(worker: _Worker, index: int, tasks, results, context, analyse, limits) -> _Worker:
    """Hand a task to an idle worker (a worker that died while idle is replaced, once)."""
    path, data, version = tasks[index]
    for attempt in range(2):
        try:
            worker.conn.send((index, path, data, version))
            worker.task, worker.deadline = index, time.monotonic() + limits.seconds
            return worker
        except OSError:
            worker.stop(kill=True)
            worker = _Worker(context, analyse, limits)
    results[index] = uncheckable(path, "no linter worker could be started for this file")
    return worker
