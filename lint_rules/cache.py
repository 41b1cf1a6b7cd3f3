"""An authenticated content-hash cache of per-file lint results, one small JSON file per entry.

Keys hash the file's bytes, its path, the tool version, the registry and the rule set, so a
stale entry is never read. Keys are computable by anyone, so a key alone proves nothing: every
entry also carries an HMAC-SHA256 over its key and its result, keyed by a per-user secret that
lives (mode 0600) in the cache directory (mode 0700). An entry that fails its MAC, its schema
or its key is linted again, never trusted. A cache directory that someone else owns, or that
others may write to, is refused with one warning line; the run then goes on without a cache.

All file access goes through a descriptor of the verified directory (``dir_fd``), so the
directory cannot be swapped for another one between the check and the reads.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import os
import secrets
import stat
import sys
import types
import typing
from pathlib import Path

from lint_rules.findings import FileResult, Finding

ENV = "LITE_GUARD_CACHE_DIR"
LAYOUT = "lint-v2"  # v1 entries (no MAC) are never read
SECRET_NAME = "secret.key"
_SECRET_BYTES = 32
_MAX_ENTRY_BYTES = 16 << 20  # a larger entry is not one we wrote


def default_cache_dir() -> Path:
    override = os.environ.get(ENV)
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_cache_dir("lite-guard"))


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


_VALIDATOR = None


def _validator():
    """The entry schema compiled to Python (fastjsonschema: ~25x faster than interpreting it, and
    a warm run validates every entry it reads)."""
    global _VALIDATOR
    if _VALIDATOR is None:
        import fastjsonschema

        _VALIDATOR = fastjsonschema.compile({"$schema": "http://json-schema.org/draft-07/schema#",
                                             **entry_schema()})
    return _VALIDATOR


def valid_entry(result: object) -> bool:
    import fastjsonschema

    try:
        _validator()(result)
    except fastjsonschema.JsonSchemaException:
        return False
    return True


def _canonical(key: str, result: dict) -> bytes:
    return key.encode("ascii") + b"\0" + json.dumps(
        result, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


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
        raise CacheRefused(f"cannot open cache dir {path}: {exc.strerror or exc}"
                           " (a symlink is not accepted)") from None
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
        raise CacheRefused(f"cannot open {where / SECRET_NAME}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
            raise CacheRefused(f"{where / SECRET_NAME} is not a private file of yours"
                               f" (mode {stat.S_IMODE(st.st_mode):o}); delete it to make a new one")
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
    """``get``/``put`` by key. A cache that cannot be trusted degrades to no cache at all."""

    def __init__(self, directory: Path | None = None, *, warn=None) -> None:
        self.root = directory or default_cache_dir()
        self.directory = self.root / LAYOUT
        self.rejected = 0  # entries that failed verification and were linted again
        self.refused: str | None = None
        self._dir_fd: int | None = None
        self._secret = b""
        self._writable = True
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

    def _name(self, key: str) -> str | None:
        # Keys are hex digests; anything else never becomes a file name.
        if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
            return None
        return f"{key}.json"

    def mac(self, key: str, result: dict) -> str:
        return hmac.new(self._secret, _canonical(key, result), hashlib.sha256).hexdigest()

    def get(self, key: str) -> FileResult | None:
        name = self._name(key)
        if not self.enabled or name is None:
            return None
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                         dir_fd=self._dir_fd)
        except OSError:
            return None  # missing: lint it
        with os.fdopen(fd, "rb") as handle:
            st = os.fstat(handle.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_ENTRY_BYTES:
                return self._reject()
            raw = handle.read(_MAX_ENTRY_BYTES + 1)
        result = self.verify(key, raw)
        return result if result is not None else self._reject()

    def verify(self, key: str, raw: bytes) -> FileResult | None:
        """The entry's result if its MAC, key and schema all check out, else None."""
        try:
            entry = json.loads(raw)
        except (ValueError, RecursionError):
            return None
        if not isinstance(entry, dict) or set(entry) != {"key", "mac", "result"} \
                or entry["key"] != key or not isinstance(entry["mac"], str):
            return None
        try:
            expected = self.mac(key, entry["result"])
        except (TypeError, ValueError, RecursionError):
            return None
        if not hmac.compare_digest(expected, entry["mac"]):
            return None
        if not valid_entry(entry["result"]):
            return None  # our own key, but not our shape: an older writer or a bug; re-lint
        return FileResult.from_dict(entry["result"])

    def _reject(self) -> None:
        self.rejected += 1
        return None

    def put(self, key: str, result: FileResult) -> None:
        name = self._name(key)
        if not self.enabled or not self._writable or name is None:
            return
        payload = result.to_dict()
        data = json.dumps({"key": key, "mac": self.mac(key, payload), "result": payload},
                          separators=(",", ":")).encode("ascii")
        tmp = f".tmp-{os.getpid()}-{secrets.token_hex(8)}"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                         0o600, dir_fd=self._dir_fd)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            # Atomic: readers, even of several runs at once, never see a half-written entry.
            os.replace(tmp, name, src_dir_fd=self._dir_fd, dst_dir_fd=self._dir_fd)
        except OSError:
            self._writable = False  # a read-only or full cache dir must not fail the lint
            try:
                os.unlink(tmp, dir_fd=self._dir_fd)
            except OSError:
                pass


def _warn(line: str) -> None:
    print(line, file=sys.stderr)
