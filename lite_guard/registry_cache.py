"""The validated registry, cached per user: parsed and checked once, read back authenticated.

Parsing and validating the shipped registries (four TOML files, about 1,100 entries) costs about
50 ms, paid by every process that compiles in lite mode before its first result. The
``Registry`` that ``Registry.from_files`` built and validated is kept in the user cache
directory (``LITE_GUARD_CACHE_DIR``, else the lint cache's default), one file per set of
registry files, and read back instead of parsed:

* the entry's name hashes every registry file's path and bytes, the bytes of the code that
  validates them (lite_guard's registry modules and this one) and the Python version, so an
  edited registry or a new lite-guard is a different entry, never a stale one;
* the entry carries an HMAC-SHA256 over its name and content, keyed by a per-user secret (mode
  0600) in a directory only the user may write (mode 0700, refused otherwise), so anyone can
  compute a name but nobody else can write an entry that passes;
* only after the MAC matches is it unpickled, and only into the registry's own classes (an
  allow-list of globals); anything else is parsed again, never trusted.

Parsing is always the fallback and gives the same registry: a cache that cannot be used (not
owned by the user, writable by others, no permission, damaged) is skipped without a word.
``LITE_GUARD_REGISTRY_CACHE=0`` (or off, false, no: lite_guard.env_switch) switches it off.

Given the running torch's version (a string: this module never imports torch), the entry also
holds whether that version is in each ``torch = "..."`` range of the registry, so a process that
reads it never imports ``packaging`` (whose version regexes cost a few ms of every import);
another torch is another entry.
"""

from __future__ import annotations

import gc
import hashlib
import hmac
import io
import os
import pickle
import stat
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lite_guard import registry as _registry
from lite_guard.env_switch import switch
from lite_guard.registry import Registry

ENV_DIR = "LITE_GUARD_CACHE_DIR"
ENV_SWITCH = "LITE_GUARD_REGISTRY_CACHE"
LAYOUT = "registry-v2"  # v2: the payload is (registry, range answers)
SECRET_NAME = "secret.key"
_SECRET_BYTES = 32
_MAC_BYTES = 32
# Every cache of lite-guard is bounded the same way (the lint cache's policy): by last use (a hit
# touches its entry), at most LITE_GUARD_CACHE_MAX_RUNS entries (64 by default) and 1 GiB; temp
# files of killed processes go after an hour. Every edit of a registry file, and every test run
# with registries of its own, makes a new entry; the ones in use must not be pushed out.
DEFAULT_MAX_RUNS = _KEEP = 64
MAX_RUNS_ENV = "LITE_GUARD_CACHE_MAX_RUNS"
MAX_RUNS_LIMIT = 1 << 20
MAX_BYTES = 1 << 30
STALE_SECONDS = 3600  # a temp file this old is no process's write in progress
_KEEP_DAYS = 7  # a registry entry nobody has read for this long is removed whatever the count
_MAX_ENTRY_BYTES = 64 << 20


def max_runs() -> int | None:
    """LITE_GUARD_CACHE_MAX_RUNS, or None when it is set to something other than a number from 1
    to MAX_RUNS_LIMIT (the lint command says so in one warning line; the caches keep the default)."""
    text = os.environ.get(MAX_RUNS_ENV, "")
    if not text:
        return DEFAULT_MAX_RUNS
    # int() refuses what isdigit() accepts ("²") and past 4,300 digits raises: each was a
    # traceback of every lint run and every compile; a number that long is no number of runs.
    digits = text.strip()
    if not digits.isdecimal() or len(digits) > len(str(MAX_RUNS_LIMIT)):
        return None
    runs = int(digits)
    return runs if 0 < runs <= MAX_RUNS_LIMIT else None


def cached_registry(paths: Sequence[str | Path], torch_version: str | None = None) -> Registry:
    """``Registry.from_files(paths)``: read back from the cache when an authentic entry for these
    exact bytes exists, else parsed (and then cached). Errors are from_files' own.
    ``torch_version``: the torch in use, whose range answers the entry keeps (see above)."""
    paths = [Path(p) for p in paths]
    if not switch(ENV_SWITCH, True):
        return Registry.from_files(paths)
    contents = _read_all(paths)
    store = _Store.open() if contents is not None else None
    if store is None:
        return Registry.from_files(paths)
    try:
        found = store.get(_key(paths, contents, torch_version))
        if found is not None and found[0].files == tuple(paths):
            registry, answers = found
            registry._file_bytes = dict(zip(paths, contents))  # the very bytes the key hashes
            if torch_version is not None:
                _registry._VERSION_MATCHES.update(
                    ((spec, torch_version), match) for spec, match in answers.items())
            return registry
        fresh = Registry.from_files(paths)  # raises on bad input: nothing is cached then
        parsed = [fresh._file_bytes.get(path, b"") for path in fresh.files]
        store.put(_key(list(fresh.files), parsed, torch_version), fresh,
                  _range_answers(fresh, torch_version))
        return fresh
    finally:
        store.close()


def _range_answers(reg: Registry, torch_version: str | None) -> dict[str, bool]:
    """Whether ``torch_version`` is in each version range the registry uses (packaging decides)."""
    if torch_version is None:
        return {}
    ranges = {e.torch for e in (*reg.passes, *reg.configs, *reg.pipelines, *reg.bases) if e.torch}
    return {spec: _registry._version_matches(spec, torch_version) for spec in sorted(ranges)}


# ---- the key ----------------------------------------------------------------------------------

_CODE_DIGEST: list[bytes] = []


def _code_digest() -> bytes:
    """The validating code's bytes: another lite-guard never reads this one's entries."""
    if not _CODE_DIGEST:
        digest = hashlib.sha256()
        for module in (_registry, sys.modules[__name__]):
            digest.update(Path(module.__file__).read_bytes())
        for name in ("stages.py", "errors.py"):
            digest.update(Path(_registry.__file__).with_name(name).read_bytes())
        _CODE_DIGEST.append(digest.digest())
    return _CODE_DIGEST[0]


def _key(paths: Sequence[Path], contents: Sequence[bytes], torch_version: str | None = None) -> str:
    digest = hashlib.sha256(LAYOUT.encode() + b"\0" + sys.version.encode() + b"\0" + _code_digest()
                            + b"\0" + (torch_version or "").encode() + b"\0")
    for path, data in zip(paths, contents):
        name = os.fsencode(str(path))
        digest.update(b"%d\0" % len(name) + name + b"%d\0" % len(data))
        digest.update(data)
    return digest.hexdigest()


def _read_all(paths: Sequence[Path]) -> list[bytes] | None:
    """Every file's bytes, or None when one cannot be read as a regular file (from_files then
    reports it, with its own message)."""
    try:
        return [_registry.read_regular_file(path) for path in paths]
    except OSError:
        return None


# ---- pickling into the registry's own classes only ----------------------------------------------

_ALLOWED = {
    "lite_guard.registry": {"Registry", "PassEntry", "ConfigEntry", "PipelineEntry", "BaseEntry"},
    "pathlib": {"Path", "PosixPath", "WindowsPath", "PurePath", "PurePosixPath", "PureWindowsPath"},
}


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj: Any) -> Any:
        return "UNSET" if obj is _registry.UNSET else None  # a singleton, compared with "is"


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if name in _ALLOWED.get(module, ()):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"global {module}.{name} is not a registry class")

    def persistent_load(self, pid: Any) -> Any:
        if pid == "UNSET":
            return _registry.UNSET
        raise pickle.UnpicklingError(f"unknown persistent id {pid!r}")


def _dumps(reg: Registry, answers: dict[str, bool] | None = None) -> bytes:
    """The payload: the registry and its range answers for the key's torch version."""
    _share_equal_strings(reg)
    saved = reg._file_bytes
    reg._file_bytes = {}  # the bytes are in the files; the key vouches for them
    try:
        buffer = io.BytesIO()
        _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump((reg, dict(answers or {})))
        return buffer.getvalue()
    finally:
        reg._file_bytes = saved


def _share_equal_strings(reg: Registry) -> None:
    """Make equal strings of the entries one object (the TOML parser makes one per occurrence:
    1,200 copies of a file name, of "post_grad", "never", ...), so pickle writes each once and
    every reader builds it once: a third less to read back. Equal values, nothing else changes."""
    seen: dict[str, str] = {}

    def shared(value: Any) -> Any:
        if isinstance(value, str):
            return seen.setdefault(value, value)
        if isinstance(value, tuple):
            return tuple(shared(v) for v in value)
        return value

    for entry in (*reg.passes, *reg.configs, *reg.pipelines, *reg.bases):
        for name, value in vars(entry).items():
            if isinstance(value, (str, tuple)):
                object.__setattr__(entry, name, shared(value))  # frozen: an equal value


# ---- the directory: the user's own, private ------------------------------------------------------

def default_dir() -> Path:
    override = os.environ.get(ENV_DIR)
    if override:
        # `LITE_GUARD_CACHE_DIR: ~/.cache/lg` in a CI file's env (YAML and docker expand no
        # tilde) made a folder named "~" in the working directory, the project's checkout.
        if override == "~" or override.startswith("~/"):
            override = _home() + override[1:]
        return Path(override)
    if sys.platform.startswith("linux"):  # platformdirs' answer there, without its 15 ms import
        base = os.environ.get("XDG_CACHE_HOME", "").strip()
        return Path(base if os.path.isabs(base) else os.path.join(_home(), ".cache")) / "lite-guard"
    import platformdirs

    return Path(platformdirs.user_cache_dir("lite-guard"))


def _home() -> str:
    """The user's home folder, absolute. A relative HOME (``HOME=h``) made ``~/.cache`` a folder
    of whatever directory the process ran in: the compiler wrote its cache, secret and all,
    into the project being compiled. A relative HOME counts as unset, as XDG and platformdirs
    say: the password database's home, else no home (the caller's directory is then refused)."""
    home = os.environ.get("HOME", "")
    if os.path.isabs(home):
        return home
    try:
        import pwd

        home = pwd.getpwuid(os.getuid()).pw_dir
    except (ImportError, KeyError):
        home = ""
    return home if os.path.isabs(home) else "/nonexistent"


def _private_dir(name: str | Path, parent_fd: int | None) -> int | None:
    """A descriptor of a directory only this user may write (created 0700 if missing), or None."""
    try:
        if parent_fd is None:
            Path(name).parent.mkdir(parents=True, exist_ok=True)
        os.mkdir(name, 0o700, dir_fd=parent_fd)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                     dir_fd=parent_fd)
    except OSError:
        return None
    info = os.fstat(fd)
    if info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        os.close(fd)
        return None
    return fd


def _secret(dir_fd: int) -> bytes | None:
    """The per-user MAC key, created once (mode 0600); None if it is not a private file of ours."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = os.open(SECRET_NAME, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        _publish_secret(dir_fd)
        try:
            fd = os.open(SECRET_NAME, flags, dir_fd=dir_fd)
        except OSError:
            return None
    except OSError:
        return None
    info = os.fstat(fd)  # before fdopen: a directory opens, but fdopen raises on it
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        os.close(fd)
        return None
    with os.fdopen(fd, "rb") as handle:
        secret = handle.read(_SECRET_BYTES + 1)
    return secret if len(secret) == _SECRET_BYTES else None


def _publish_secret(dir_fd: int) -> None:
    """Write a secret to a private temporary file and link it into place: of two processes
    starting at once, exactly one secret wins and nobody sees half of one."""
    import secrets  # only when a secret is made (its imports cost a reader nothing then)

    tmp = f".secret-{os.getpid()}-{secrets.token_hex(8)}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600, dir_fd=dir_fd)
        with os.fdopen(fd, "wb") as handle:
            handle.write(secrets.token_bytes(_SECRET_BYTES))
        try:
            os.link(tmp, SECRET_NAME, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
        except FileExistsError:
            pass
    except OSError:
        pass
    finally:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass


def open_private_dir(layout: str) -> tuple[int, bytes] | None:
    """(descriptor, secret) of the verified private subdirectory ``layout`` of the user's cache,
    or None when it cannot be trusted or made (callers then work without a cache)."""
    root_fd = _private_dir(default_dir(), None)
    if root_fd is None:
        return None
    try:
        dir_fd = _private_dir(layout, root_fd)
    finally:
        os.close(root_fd)
    if dir_fd is None:
        return None
    secret = _secret(dir_fd)
    if secret is None:
        os.close(dir_fd)
        return None
    return dir_fd, secret


def cache_listing(dir_fd: int, temporary) -> list[tuple[str, os.stat_result]] | None:
    """The files of a cache directory with their stat, after removing the temporary ones
    (``temporary(name)``) older than an hour: a killed process's, no write in progress. None when
    the directory cannot be listed (the caller then prunes nothing)."""
    import time

    stale = time.time() - STALE_SECONDS
    found = []
    try:
        with os.scandir(dir_fd) as listing:
            for item in listing:
                try:
                    info = item.stat(follow_symlinks=False)
                except OSError:
                    continue
                if not temporary(item.name):
                    found.append((item.name, info))
                elif info.st_mtime < stale:
                    try:
                        os.unlink(item.name, dir_fd=dir_fd)
                    except OSError:
                        pass
    except OSError:
        return None
    return found


class AuthenticatedStore:
    """Entries of one private cache directory, every file opened through its verified descriptor
    and carrying an HMAC-SHA256 (the user's 0600 secret) over its name and bytes. Shared by the
    registry cache and lite_compiler's fusion verdict cache."""

    max_bytes = _MAX_ENTRY_BYTES
    suffix = ""  # the entries' file names end so; temp files start with "."
    per_run = 1  # entries one run may make: the store keeps per_run * LITE_GUARD_CACHE_MAX_RUNS
    max_age: float | None = None  # seconds unused after which an entry goes whatever the count

    def __init__(self, dir_fd: int, secret: bytes):
        self.dir_fd, self.secret = dir_fd, secret

    @classmethod
    def open_layout(cls, layout: str) -> Any:
        opened = open_private_dir(layout)
        return cls(*opened) if opened is not None else None

    def close(self) -> None:
        os.close(self.dir_fd)

    def _mac(self, key: str, payload: bytes) -> bytes:
        return hmac.new(self.secret, key.encode("ascii") + b"\0" + payload, hashlib.sha256).digest()

    def read(self, filename: str, key: str) -> bytes | None:
        """The payload of ``filename`` if it is ours (regular, the user's, bounded, MAC right)."""
        try:
            fd = os.open(filename, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                         dir_fd=self.dir_fd)
        except OSError:
            return None
        info = os.fstat(fd)  # before fdopen (which raises on a directory planted under the name)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() \
                or info.st_size > self.max_bytes:
            os.close(fd)
            return None
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(self.max_bytes + 1)
        mac, payload = data[:_MAC_BYTES], data[_MAC_BYTES:]
        if len(mac) != _MAC_BYTES or not hmac.compare_digest(mac, self._mac(key, payload)):
            return None  # not written by us, or damaged: the caller computes it again
        return payload

    def write(self, filename: str, key: str, payload: bytes) -> bool:
        """Write ``filename`` atomically (temporary file, then rename); False if it could not."""
        tmp = f".{key}-{os.getpid()}-{os.urandom(4).hex()}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                         0o600, dir_fd=self.dir_fd)
            with os.fdopen(fd, "wb") as handle:
                handle.write(self._mac(key, payload) + payload)
            os.replace(tmp, filename, src_dir_fd=self.dir_fd, dst_dir_fd=self.dir_fd)
        except OSError:
            try:
                os.unlink(tmp, dir_fd=self.dir_fd)
            except OSError:
                pass
            return False
        return True

    def touch(self, filename: str) -> None:
        """Mark an entry as just used: pruning goes by least recent use."""
        try:
            os.utime(filename, dir_fd=self.dir_fd, follow_symlinks=False)
        except (OSError, NotImplementedError):
            pass

    def prune(self, keep: str = "") -> None:
        """Keep the most recently used entries (an entry's mtime is its last use): at most
        ``per_run`` * LITE_GUARD_CACHE_MAX_RUNS of them and MAX_BYTES in all, none unused for
        ``max_age``; ``keep`` (the entry just written) stays. Temp files of killed processes
        go after an hour."""
        import time

        now = time.time()
        found = cache_listing(self.dir_fd, lambda name: name.startswith("."))
        if found is None:
            return
        entries = [(info.st_mtime, name, info.st_size) for name, info in found
                   if name.endswith(self.suffix) and name != keep]
        entries.sort(reverse=True)  # most recently used first
        count = (max_runs() or DEFAULT_MAX_RUNS) * self.per_run - (1 if keep else 0)
        total = 0
        for rank, (used, name, size) in enumerate(entries):
            total += size
            if rank >= count or total > MAX_BYTES \
                    or (self.max_age is not None and used < now - self.max_age):
                self._unlink(name)

    def _unlink(self, name: str) -> None:
        try:
            os.unlink(name, dir_fd=self.dir_fd)
        except OSError:
            pass


class _Store(AuthenticatedStore):
    """The registry entries."""

    suffix = ".pickle"
    max_age = _KEEP_DAYS * 86400

    @classmethod
    def open(cls) -> _Store | None:
        return cls.open_layout(LAYOUT)

    def get(self, key: str) -> tuple[Registry, dict[str, bool]] | None:
        payload = self.read(f"{key}.pickle", key)
        if payload is None:
            return None
        collecting = gc.isenabled()
        gc.disable()  # ~10,000 new objects: the collector would walk them 5-10 times meanwhile
        try:
            found = _Unpickler(io.BytesIO(payload)).load()
        except Exception:  # an entry of ours that still fails to load: parse again
            return None
        finally:
            if collecting:
                gc.enable()
        if not (isinstance(found, tuple) and len(found) == 2 and isinstance(found[0], Registry)
                and isinstance(found[1], dict)
                and all(isinstance(k, str) and isinstance(v, bool) for k, v in found[1].items())):
            return None
        self.touch(f"{key}.pickle")  # last use
        return found

    def put(self, key: str, reg: Registry, answers: dict[str, bool] | None = None) -> None:
        try:
            payload = _dumps(reg, answers)
        except Exception:  # a value pickle cannot hold: this registry is simply not cached
            return
        if not self.write(f"{key}.pickle", key, payload):
            return
        self.prune(keep=f"{key}.pickle")
