"""The authenticated lint cache: one record per lint run, naming one pack of per-file results.

A warm run must cost about one file read, not one per linted file. So a run (the same paths,
options, registry, rules and tool) keeps:

* a *run record*, ``run-<run key>.json``: every linted file with its size, times, inode and
  content key, the run's findings, and the SHA-256 of its pack. Its first line is an
  HMAC-SHA256 over the exact bytes that follow (nothing is re-serialised to check it), keyed by
  a per-user secret that lives (mode 0600) in the cache directory (mode 0700). A record that
  fails its MAC, its schema or its key is ignored (one note on stderr) and the tree is linted
  as if cold, never trusted;
* a *pack*, ``pack-<sha256>.json``: each file's result (findings, facts, index summary) by its
  content key, which the record's MAC vouches for through the hash.

When no linted file changed (same stat; a file changed too recently to trust its times is
hashed) the record's findings are the answer. Otherwise the pack's results of unchanged files
are reused and the rest is linted again (``lint_rules.engine``). Keys hash the file's bytes, its
path, version and module, the tool version, the registry and the rule set, so nothing stale is
ever read. A cache directory that someone else owns, or that others may write to, is refused
with one warning line; the run then goes on without a cache.

All file access goes through a descriptor of the verified directory (``dir_fd``), so the
directory cannot be swapped for another one between the check and the reads.
"""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import hmac
import json
import os
import re
import secrets
import stat
import sys
import time
import types
import typing
from pathlib import Path

from lint_rules.findings import FileResult, Finding
from lite_guard.registry_cache import DEFAULT_MAX_RUNS as MAX_RUNS
from lite_guard.registry_cache import (MAX_BYTES, MAX_RUNS_ENV, MAX_RUNS_LIMIT, STALE_SECONDS,
                                       cache_listing, max_runs)

ENV = "LITE_GUARD_CACHE_DIR"
LAYOUT = "lint-v3"  # v1 (no MAC) and v2 (an entry per file) are never read
SECRET_NAME = "secret.key"
_SECRET_BYTES = 32
_MAX_ENTRY_BYTES = 512 << 20  # a larger file is not one we wrote
_RUN_DOMAIN = b"lite-guard lint run\0"
# The cache is bounded: past either limit the least recently used runs go (record and pack).
# Every distinct set of paths is a run (pre-commit's lite-guard-files hook makes one per commit),
# so an unbounded cache grew by a record and a pack for each, forever.
# MAX_RUNS (LITE_GUARD_CACHE_MAX_RUNS sets another) and MAX_BYTES bound the registry and the
# verdict caches too: one setting, one policy (lite_guard.registry_cache.AuthenticatedStore.prune).


def default_cache_dir() -> Path:
    # The folder the registry and verdict caches use: one answer (a relative HOME or
    # XDG_CACHE_HOME is no folder of the user's), and platformdirs' RuntimeError, when it
    # cannot find an absolute home, is no traceback of a lint run.
    from lite_guard.registry_cache import default_dir

    return default_dir()


class CacheRefused(Exception):
    """The cache directory cannot be trusted (or used); the message says why and what to do."""


# ---- the entry schema, derived from the dataclasses so it follows their fields ---------------

def _json_type(hint: typing.Any) -> dict:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [_json_type(arg) for arg in args]}
    if hint is type(None):
        return {"type": "null"}
    if hint is dict:
        # An untyped dict (the index summary): its shape belongs to index.py; the MAC vouches
        # that we wrote it, the ruleset hash in the key that this version of us did.
        return {"type": "object"}
    if hint is str:
        return {"type": "string"}
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return {"type": "integer"}
    if hint is float:
        return {"type": "number"}
    if origin in (list, tuple) and len(args) == 1:
        return {"type": "array", "items": _json_type(args[0])}
    if origin is dict and len(args) == 2 and args[0] is str:
        return {"type": "object", "additionalProperties": _json_type(args[1])}
    if dataclasses.is_dataclass(hint):
        return _object_schema(hint)
    raise TypeError(f"lint cache: no JSON schema for field type {hint!r}; teach cache._json_type")


def _object_schema(cls: type) -> dict:
    hints = typing.get_type_hints(cls)
    fields = [f.name for f in dataclasses.fields(cls)]
    return {"type": "object", "additionalProperties": False, "required": fields,
            "properties": {name: _json_type(hints[name]) for name in fields}}


def entry_schema() -> dict:
    """What ``FileResult.to_dict`` writes, with the type of every field."""
    finding = _object_schema(Finding)
    for position in ("line", "col"):
        finding["properties"][position]["minimum"] = 1
    schema = _object_schema(FileResult)
    schema["properties"]["findings"]["items"] = finding
    schema["required"] = list(FileResult().to_dict())
    schema["properties"] = {k: v for k, v in schema["properties"].items() if k in schema["required"]}
    return schema


def valid_entry(result: object) -> bool:
    """Does ``result`` have the shape ``FileResult.to_dict`` writes?"""
    if "entry" not in _COMPILED:
        _COMPILED["entry"] = _compiled(entry_schema())
    return _valid(lambda: _COMPILED["entry"], result)


def run_schema() -> dict:
    """A run record: the inputs it was computed from, and what it found."""
    finding = entry_schema()["properties"]["findings"]
    count = {"type": "integer", "minimum": 0}
    # An input row: path, size, mtime_ns, ctime_ns, inode, device, content key, racy, torch
    # version, module (draft-07 spells a fixed-length tuple as "items": [...] with
    # "additionalItems": false).
    row = {"type": "array", "minItems": 10, "additionalItems": False, "items": [
        {"type": "string"}, count, {"type": "integer"}, {"type": "integer"}, count, count,
        {"type": "string"}, {"type": "boolean"}, {"type": ["string", "null"]}, {"type": "string"}]}
    # A module read from outside the linted paths: path, size, mtime_ns, ctime_ns.
    external = {"type": "array", "minItems": 4, "additionalItems": False,
                "items": [{"type": "string"}, {"type": "integer"}, {"type": "integer"},
                          {"type": "integer"}]}
    fields = {"run": {"type": "string"}, "pack": {"type": "string"}, "started_ns": {"type": "integer"},
              "inputs": {"type": "array", "items": row}, "externals": {"type": "array", "items": external},
              "tree_version": {"type": ["string", "null"]}, "findings": finding,
              "complete": {"type": "boolean"}}
    return {"type": "object", "additionalProperties": False, "required": list(fields),
            "properties": fields}


def pack_schema() -> dict:
    """A pack: per content key, the file's result and what the prefilter decided about it; and
    the summaries of modules read from outside the linted paths (keyed by path, mtime, module,
    package, vocabulary and lightness, as ``lint_rules.index`` keys them)."""
    record = {"type": "object", "additionalProperties": False, "required": ["result", "seeded"],
              "properties": {"result": entry_schema(), "seeded": {"type": "boolean"}}}
    key = {"type": "array", "minItems": 6, "additionalItems": False, "items": [
        {"type": "string"}, {"type": "integer"}, {"type": "string"}, {"type": "boolean"},
        {"type": "string"}, {"type": "boolean"}]}
    external = {"type": "array", "minItems": 2, "additionalItems": False,
                "items": [key, {"type": ["object", "null"]}]}
    return {"type": "object", "additionalProperties": False, "required": ["files", "externals"],
            "properties": {"files": {"type": "object", "additionalProperties": record},
                           "externals": {"type": "array", "items": external}}}


def _compiled(schema: dict):
    """A schema compiled to Python (fastjsonschema: ~25x faster than interpreting it)."""
    import fastjsonschema

    return fastjsonschema.compile({"$schema": "http://json-schema.org/draft-07/schema#", **schema})


_COMPILED: dict[str, object] = {}


def _run_validator():
    if "run" not in _COMPILED:
        _COMPILED["run"] = _compiled(run_schema())
    return _COMPILED["run"]


def _pack_validator():
    if "pack" not in _COMPILED:
        _COMPILED["pack"] = _compiled(pack_schema())
    return _COMPILED["pack"]


def _valid(validator, value: object) -> bool:
    import fastjsonschema

    try:
        validator()(value)
    except fastjsonschema.JsonSchemaException:
        return False
    return True


# ---- the directory ---------------------------------------------------------------------------

def _describe_unsafe(st: os.stat_result, what: str, path: Path) -> str | None:
    if not stat.S_ISDIR(st.st_mode):
        return f"{what} {path} is not a directory"
    if st.st_uid != os.getuid():
        return f"{what} {path} is owned by uid {st.st_uid}, not by you (uid {os.getuid()})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (f"{what} {path} is writable by others (mode {stat.S_IMODE(st.st_mode):o});"
                f" run 'chmod 700 {path}'")
    return None


def _open_private_dir(path: Path, parent_fd: int | None = None) -> int:
    """Open (creating it 0700 if missing) a directory that only this user may write."""
    name = path.name if parent_fd is not None else path
    try:
        if parent_fd is None:
            path.parent.mkdir(parents=True, exist_ok=True)  # e.g. ~/.cache on a fresh machine
        os.mkdir(name, 0o700, dir_fd=parent_fd)
    except FileExistsError:
        pass
    except OSError as exc:
        raise CacheRefused(f"cannot create cache dir {path}: {exc.strerror or exc}") from None
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(name, flags, dir_fd=parent_fd)
    except OSError as exc:
        link = os.path.islink(path)
        raise CacheRefused(f"cannot open cache dir {path}: "
                           + ("it is a symlink, which is not accepted; point the cache at a real"
                              " directory" if link else f"{exc.strerror or exc}")) from None
    problem = _describe_unsafe(os.fstat(fd), "cache dir", path)
    if problem:
        os.close(fd)
        raise CacheRefused(problem)
    return fd


def _load_secret(dir_fd: int, where: Path) -> bytes:
    """The per-user MAC key: created once with 0600, refused if anyone else could read it."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        os.stat(SECRET_NAME, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        _publish_secret(dir_fd, where)
    except OSError as exc:
        raise CacheRefused(f"cannot read {where / SECRET_NAME}: {exc.strerror or exc}") from None
    try:
        fd = os.open(SECRET_NAME, flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW on a link: "Too many levels of symbolic links"
            raise CacheRefused(f"{where / SECRET_NAME} is a symlink, which is not accepted; delete"
                               " it to make a new one") from None
        raise CacheRefused(f"cannot open {where / SECRET_NAME}: {exc.strerror or exc}") from None
    st = os.fstat(fd)  # before fdopen: a directory opens, but fdopen raises on it
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        os.close(fd)
        # A FIFO was "mode 644", which reads as a permission problem: say what it is.
        what = "a directory" if stat.S_ISDIR(st.st_mode) else \
            "a FIFO, socket or device, not a regular file" if not stat.S_ISREG(st.st_mode) else \
            f"mode {stat.S_IMODE(st.st_mode):o}"
        raise CacheRefused(f"{where / SECRET_NAME} is not a private file of yours ({what});"
                           " delete it to make a new one")
    with os.fdopen(fd, "rb") as handle:
        secret = handle.read(_SECRET_BYTES + 1)
    if len(secret) != _SECRET_BYTES:
        raise CacheRefused(f"{where / SECRET_NAME} is damaged; delete it to make a new one")
    return secret


def _publish_secret(dir_fd: int, where: Path) -> None:
    """Write a new secret to a private temp file, then link it into place: another run starting
    at the same moment sees either no secret or a whole one, and exactly one secret wins."""
    tmp = f".secret-{os.getpid()}-{secrets.token_hex(8)}"
    create = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(tmp, create, 0o600, dir_fd=dir_fd)
        with os.fdopen(fd, "wb") as handle:
            handle.write(secrets.token_bytes(_SECRET_BYTES))
        try:
            os.link(tmp, SECRET_NAME, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
        except FileExistsError:
            pass  # another run published first: use theirs
    except OSError as exc:
        raise CacheRefused(f"cannot create {where / SECRET_NAME}: {exc.strerror or exc}") from None
    finally:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass


class Cache:
    """One authenticated record per lint run (see the module docstring). A cache that cannot be
    trusted degrades to no cache at all."""

    def __init__(self, directory: Path | None = None, *, warn=None) -> None:
        self.root = directory or default_cache_dir()
        self.directory = self.root / LAYOUT
        self.rejected = 0  # records that failed verification (and were ignored)
        self.refused: str | None = None
        self._dir_fd: int | None = None
        self._secret = b""
        self._writable = True
        self.max_runs = _max_runs(warn or _warn)
        try:
            root_fd = _open_private_dir(self.root)
            try:
                self._dir_fd = _open_private_dir(self.directory, root_fd)
            finally:
                os.close(root_fd)
            self._secret = _load_secret(self._dir_fd, self.directory)
        except CacheRefused as exc:
            if self._dir_fd is not None:
                os.close(self._dir_fd)
                self._dir_fd = None
            self.refused = str(exc)
            (warn or _warn)(f"lite_guard: warning: lint cache not used: {exc}")

    def __del__(self) -> None:
        if getattr(self, "_dir_fd", None) is not None:
            os.close(self._dir_fd)

    @property
    def enabled(self) -> bool:
        return self._dir_fd is not None

    # ---- runs ------------------------------------------------------------------------------
    def mac(self, run_key: str, body: bytes) -> str:
        return hmac.new(self._secret, _RUN_DOMAIN + run_key.encode("ascii") + b"\0" + body,
                        hashlib.sha256).hexdigest()

    def load_run(self, run_key: str) -> dict | None:
        """The record of the last run with this key, if its MAC, key and schema check out."""
        raw = self._read(_run_name(run_key), lambda handle: self._mac_matches(run_key, handle))
        if raw is None:
            return None
        record = self.verify_run(run_key, raw)
        if record is None:
            self.rejected += 1
        return record

    def _mac_matches(self, run_key: str, handle) -> bool:
        """Does the record in ``handle`` carry our MAC? Read in chunks, kept nowhere: a planted
        record of 500 MB cost 1.5 GB of memory to refuse when it was read whole first."""
        mac = handle.readline(65)
        digest = hmac.new(self._secret, _RUN_DOMAIN + run_key.encode("ascii") + b"\0", hashlib.sha256)
        return len(mac) == 65 and mac.endswith(b"\n") and _streamed(handle, digest) \
            and hmac.compare_digest(mac[:64], digest.hexdigest().encode("ascii"))

    def verify_run(self, run_key: str, raw: bytes) -> dict | None:
        mac, newline, body = raw.partition(b"\n")
        if not newline or len(mac) != 64:
            return None
        try:
            # The MAC covers the exact bytes on disk: nothing is parsed before it matches.
            if not hmac.compare_digest(mac.decode("ascii"), self.mac(run_key, body)):
                return None
            record = json.loads(body)
        except (UnicodeDecodeError, ValueError, RecursionError):
            return None
        if not _valid(_run_validator, record) or record["run"] != run_key:
            return None  # our key, not our shape: an older writer or a bug; lint again
        return record

    def load_pack(self, digest: str) -> dict | None:
        """The per-file results a run record names by their SHA-256 (which the record's MAC
        vouches for), or None when missing, altered or of another shape."""
        raw = self._read(_pack_name(digest), lambda handle: _hash_is(handle, digest))
        if raw is None or hashlib.sha256(raw).hexdigest() != digest:
            return None
        try:
            pack = json.loads(raw)
        except (ValueError, RecursionError):
            return None
        return pack if _valid(_pack_validator, pack) else None

    def save_run(self, run_key: str, record: dict, pack: dict) -> None:
        """Write the pack, then the run record that names it (readers see one or the other,
        whole), then remove the pack the previous record of this run named."""
        if not self.enabled or not self._writable:
            return
        previous = record.pop("_previous_pack", None)
        data = json.dumps(pack, separators=(",", ":"), ensure_ascii=True).encode("ascii")
        digest = hashlib.sha256(data).hexdigest()
        if self._write(_pack_name(digest), data) and self.save_record(
                run_key, {**record, "pack": digest}) and previous and previous != digest:
            self._unlink(_pack_name(previous))
        self.prune(keep=run_key)

    def touch(self, run_key: str, digest: str) -> None:
        """Mark a run (its record and pack) as just used: pruning goes by least recent use."""
        for name in (_run_name(run_key), _pack_name(digest)):
            if self.enabled and name is not None:
                try:
                    os.utime(name, dir_fd=self._dir_fd, follow_symlinks=False)
                except OSError:
                    pass

    def prune(self, keep: str = "") -> None:
        """Keep at most MAX_RUNS runs and MAX_BYTES of records and packs: the least recently used
        runs go first, each with the pack its record names (a pack another record also named is
        then a cache miss for that run, never a wrong answer). Temp files of killed runs and packs
        no record has used for an hour go too (a record's pack is touched whenever the record is
        written or used, so a live pack is never older than its record by more than a write)."""
        if not self.enabled or not self._writable:
            return
        now = time.time()
        found = cache_listing(self._dir_fd, lambda name: name.startswith((".tmp-", ".secret-")))
        if found is None:
            return
        runs, packs, total = [], {}, 0
        for name, st in found:
            if name.startswith("run-"):
                runs.append((st.st_mtime, name, st.st_size))
                total += st.st_size
            elif name.startswith("pack-"):
                packs[name] = (st.st_mtime, st.st_size)
                total += st.st_size
        runs.sort()
        current = _run_name(keep)
        while runs and (len(runs) > self.max_runs or total > MAX_BYTES):
            mtime, name, size = runs.pop(0)
            if name == current:
                continue
            pack = self._pack_of(name)
            self._unlink(name)
            total -= size
            if pack in packs:
                self._unlink(pack)
                total -= packs.pop(pack)[1]
        oldest = runs[0][0] if runs else now
        for name, (mtime, size) in packs.items():
            if mtime < min(oldest, now) - STALE_SECONDS:  # an unnamed pack: no run's in progress
                self._unlink(name)

    def _pack_of(self, record_name: str) -> str | None:
        """The pack a run record names (read without trusting it: only a cache file's name)."""
        raw = self._read(record_name)
        found = re.search(rb'"pack":"([0-9a-f]{64})"', raw or b"")
        return _pack_name(found.group(1).decode("ascii")) if found else None

    def _unlink(self, name: str | None) -> None:
        if name is not None:
            try:
                os.unlink(name, dir_fd=self._dir_fd)
            except OSError:
                pass

    def save_record(self, run_key: str, record: dict) -> bool:
        """Write (or rewrite) a run record; its pack must already be in place."""
        if not self.enabled or not self._writable:
            return False
        body = json.dumps({**record, "run": run_key}, separators=(",", ":"),
                          ensure_ascii=True).encode("ascii")
        written = self._write(_run_name(run_key), self.mac(run_key, body).encode("ascii") + b"\n" + body)
        if written:
            self.touch(run_key, record.get("pack", ""))  # the pack is as fresh as its record
        return written

    # ---- files -----------------------------------------------------------------------------
    def _read(self, name: str | None, ours=None) -> bytes | None:
        """The bytes of a cache file, or None. ``ours(handle)`` looks at the file in chunks first:
        only a file it vouches for is read whole (and checked again by the caller); for another
        the caller gets no bytes."""
        if not self.enabled or name is None:
            return None
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                         dir_fd=self._dir_fd)
        except OSError:
            return None  # missing: lint it
        st = os.fstat(fd)  # before fdopen, which raises on a directory planted under the name
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_ENTRY_BYTES:
            os.close(fd)
            self.rejected += 1
            return None
        with os.fdopen(fd, "rb") as handle:
            try:
                if ours is not None:
                    if not ours(handle):
                        return b""  # what fails every check of the caller, as before
                    handle.seek(0)
                return handle.read(_MAX_ENTRY_BYTES + 1)
            except OSError:
                self.rejected += 1
                return None

    def _write(self, name: str | None, data: bytes) -> bool:
        if name is None:
            return False
        tmp = f".tmp-{os.getpid()}-{secrets.token_hex(8)}"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                         0o600, dir_fd=self._dir_fd)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            # Atomic: readers, even of several runs at once, never see a half-written file.
            os.replace(tmp, name, src_dir_fd=self._dir_fd, dst_dir_fd=self._dir_fd)
            return True
        except OSError:
            self._writable = False  # a read-only or full cache dir must not fail the lint
            try:
                os.unlink(tmp, dir_fd=self._dir_fd)
            except OSError:
                pass
            return False


def _streamed(handle, digest):
    """``digest`` updated with the rest of ``handle``, 1 MiB at a time (at most the entry limit:
    a file that grows while read is not ours), or None past the limit."""
    total = 0
    while chunk := handle.read(1 << 20):
        total += len(chunk)
        if total > _MAX_ENTRY_BYTES:
            return None
        digest.update(chunk)
    return digest


def _hash_is(handle, digest: str) -> bool:
    streamed = _streamed(handle, hashlib.sha256())
    return streamed is not None and streamed.hexdigest() == digest


def _hex(key: str) -> bool:
    return len(key) == 64 and all(c in "0123456789abcdef" for c in key)


def _run_name(key: str) -> str | None:
    return f"run-{key}.json" if _hex(key) else None  # keys never become other file names


def _pack_name(digest: str) -> str | None:
    return f"pack-{digest}.json" if _hex(digest) else None


def _max_runs(warn) -> int:
    runs = max_runs()
    if runs is None:
        value = os.environ[MAX_RUNS_ENV]
        shown = repr(value if len(value) <= 40 else value[:20] + "..." + value[-8:])
        warn(f"lite_guard: warning: {MAX_RUNS_ENV}={shown} is not a number of"
             f" runs from 1 to {MAX_RUNS_LIMIT}; keeping at most {MAX_RUNS}")
        return MAX_RUNS
    return runs


def _warn(line: str) -> None:
    from lite_guard.errors import escape_text

    print(escape_text(line), file=sys.stderr)  # the cache path is the user's: any character
