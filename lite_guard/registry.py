"""The declarative pass registry: every graph pass and pass-gating config, tagged for lite mode.

Registries are TOML files read with ``tomllib``. Loading never imports torch and never
executes anything from the files, so the linter, the CLI and the compiler can all trust it.
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import os
import re
import stat
from pathlib import Path
from typing import Any, Iterable, NamedTuple, Sequence

from lite_guard.stages import STAGES

# Defined apart so that project_config can raise them without importing this module.
from lite_guard.errors import RegistryError, loads_toml, toml_error  # noqa: F401  (toml_error re-exported)


# never: must not run in lite mode; always: runs everywhere because correctness needs it and it
# is numerics-neutral; region: runs only inside regions annotated for Inductor.
LITE_FLAGS = ("never", "always", "region")
LITE_SAFE_FLAGS = ("always", "region")

# helper: a function a pipeline root calls that transforms nothing (registered so the lint can
# tell "known and neutral" from "new and unclassified").
PASS_KINDS = ("observer", "pattern", "function", "class", "custom_hook", "scheduler", "config",
              "helper")
# The first five kinds change what runs or how it rounds: lite mode forces a value for them.
FORCED_CONFIG_KINDS = ("pass_gate", "reorder", "optimization", "numerics", "mode")
# Classified but not forced: they change speed, logs or nothing a user could observe in numerics.
# custom_hook keys hold user passes; those are checked pass by pass, not forced.
FREE_CONFIG_KINDS = ("custom_hook", "tuning", "debug", "neutral")
CONFIG_KINDS = FORCED_CONFIG_KINDS + FREE_CONFIG_KINDS
CONFIG_MODULES = {"inductor": "torch._inductor.config", "functorch": "torch._functorch.config"}
# Types a [[config]] entry may declare (torch's type for the key); unions are written "bool|none".
CONFIG_TYPES = ("bool", "int", "float", "str", "list", "dict", "callable", "none", "any")
# How a region may override a key: "forced" (not at all), "free" (any value of its type), or a
# TOML array of the values it may set.
REGION_POLICIES = ("forced", "free")
BASE_ROLES = ("pass_class", "observer", "pattern_pass", "pattern_registration", "graph_type",
              "graph_mutation", "graph_store", "graph_rewrite", "graph_producer", "pass_argument", "compiler_argument",
              "lowering_registration")
# Roles whose rows list ``members`` (graph_type: what a pass uses of the graph it is handed;
# graph_mutation: the members that change a graph, the lint's evidence that a function rewrites one;
# graph_store: the attributes whose store changes a graph, ``node.target = f``, the same evidence)
MEMBER_ROLES = ("graph_type", "graph_mutation", "graph_store")

SHIPPED_DIR = Path(__file__).parent / "registries"

_PASS_FIELDS = {"name", "stage", "lite", "gated_by", "kind", "hook", "when", "torch", "source", "why"}
# lite_null = true: lite mode forces None (TOML has no null; torch's "automatic" defaults are None).
_CONFIG_FIELDS = {"key", "module", "kind", "type", "lite_value", "lite_null", "region", "torch", "why"}
_PIPELINE_FIELDS = {"root", "stage", "torch", "why"}
_BASE_FIELDS = {"name", "role", "name_arg", "name_position", "members", "stage", "torch", "why"}
_TABLES = ("pass", "config", "pipeline", "base")


class _Entry:
    """A registry entry: a frozen record, equal, hashed and shown by its fields' values.

    Written by hand rather than as a frozen dataclass: a dataclass's methods are generated as
    source text and compiled when its module is imported, about 1 ms of every import per class
    (every lite compile imports this module). Instances keep their fields in ``__dict__``, so
    pickling (lite_guard.registry_cache) stores and restores them as it did the dataclasses'.
    """

    FIELDS: tuple[str, ...] = ()  # the fields, in constructor order
    torch: str

    def _values(self) -> tuple[Any, ...]:
        values = self.__dict__
        return tuple(values[name] for name in self.FIELDS)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in zip(self.FIELDS, self._values()))
        return f"{type(self).__name__}({shown})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field '{name}': registry entries are frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field '{name}': registry entries are frozen")

    def as_dict(self) -> dict[str, Any]:
        """The fields by name, in constructor order (what ``dataclasses.asdict`` gave)."""
        return dict(zip(self.FIELDS, self._values()))

    def exists_in(self, torch_version: str | None) -> bool:
        """Whether the entry exists in that torch release (its ``torch`` range names it)."""
        return _version_matches(self.torch, torch_version)


def _set_fields(entry: _Entry, **values: Any) -> None:
    entry.__dict__.update(values)  # frozen: __setattr__ refuses every later assignment


class PassEntry(_Entry):
    FIELDS = ("name", "stage", "lite", "why", "gated_by", "kind", "hook", "when", "torch",
              "source", "origin", "line")

    def __init__(self, name: str, stage: str, lite: str, why: str = "",
                 gated_by: tuple[str, ...] = (), kind: str = "function",
                 # Where the runtime guard intercepts the pass ("module:qualname"); for kind =
                 # "custom_hook", the config attribute that holds user passes
                 # ("torch._inductor.config:post_grad_custom_pass").
                 hook: str = "",
                 # The pass only runs when this config key is truthy ("key", "functorch:key",
                 # dotted nested).
                 when: str = "",
                 torch: str = "", source: str = "", origin: str = "", line: int = 0) -> None:
        _set_fields(self, name=name, stage=stage, lite=lite, why=why, gated_by=gated_by, kind=kind,
                    hook=hook, when=when, torch=torch, source=source, origin=origin, line=line)

    @property
    def lite_safe(self) -> bool:
        return self.lite in LITE_SAFE_FLAGS

    @property
    def when_key(self) -> tuple[str, str] | None:
        """(config module, key) of ``when``, or None."""
        if not self.when:
            return None
        module, _, key = self.when.rpartition(":")
        return (module or "inductor", key)


class _Unset:
    """``lite_value`` of a config entry that is classified but not forced."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


class ConfigEntry(_Entry):
    FIELDS = ("key", "lite_value", "module", "kind", "type", "region", "why", "torch", "origin",
              "line")

    def __init__(self, key: str, lite_value: Any = UNSET, module: str = "inductor",
                 kind: str = "pass_gate", type: str = "",
                 region: Any = "",  # "": the default, "forced" when lite_value is set, else "free"
                 why: str = "", torch: str = "", origin: str = "", line: int = 0) -> None:
        _set_fields(self, key=key, lite_value=lite_value, module=module, kind=kind, type=type,
                    region=region, why=why, torch=torch, origin=origin, line=line)

    @property
    def forced(self) -> bool:
        """Whether lite mode forces a value for this key."""
        return self.lite_value is not UNSET

    @property
    def region_policy(self) -> Any:
        if self.region:
            return self.region
        return "forced" if self.forced or self.kind == "custom_hook" else "free"

    def region_allows(self, value: Any) -> tuple[bool, str]:
        """(allowed, why not) for a region that sets this key to ``value``."""
        if self.type and not value_matches_type(value, self.type):
            return False, f"{self.key} is {self.type} in torch's config, got {type(value).__name__} {value!r}"
        policy = self.region_policy
        if policy == "free":
            return True, ""
        if policy == "forced":
            if self.forced and _same_value(value, self.lite_value):
                return True, ""
            return False, (f"the registry forces {self.key} = {self.lite_value!r} in regions too"
                           f" ({self.origin}:{self.line})" if self.forced else
                           f"the registry does not let regions set {self.key} ({self.origin}:{self.line})")
        if any(_same_value(value, allowed) for allowed in policy):
            return True, ""
        return False, (f"regions may set {self.key} only to one of {policy!r}"
                       f" ({self.origin}:{self.line})")


class PipelineEntry(_Entry):
    """A function that runs passes: every graph-transforming call inside it must be registered."""

    FIELDS = ("root", "stage", "why", "torch", "origin", "line")

    def __init__(self, root: str,  # "module:qualname"
                 stage: str, why: str = "", torch: str = "", origin: str = "",
                 line: int = 0) -> None:
        _set_fields(self, root=root, stage=stage, why=why, torch=torch, origin=origin, line=line)


class BaseEntry(_Entry):
    """Pass vocabulary: a class whose concrete subclasses are passes (pass_class), or whose
    constructor names a pass (observer, pattern_pass: argument ``name_arg`` / ``name_position``),
    or a function that registers a pattern into a pattern pass (pattern_registration: the
    argument holding the target pass dict; none when the target is fixed by the function), or
    one that changes which lowering, decomposition or fallback Inductor uses for an op
    (lowering_registration: torch's global tables, edited from outside torch), or a function of
    torch that rewrites the FX graph it is handed (graph_rewrite: ``replace_pattern``)."""

    FIELDS = ("name", "role", "name_arg", "name_position", "why", "torch", "origin", "line",
              "members", "stage")

    def __init__(self, name: str,  # "module:qualname"
                 role: str, name_arg: str = "", name_position: int = -1, why: str = "",
                 torch: str = "", origin: str = "", line: int = 0,
                 # graph_type: the FX graph class a pass is handed; ``members``: what a pass
                 # does with it (``nodes``, ``erase_node``, ...), the lint's evidence that a
                 # ``__call__`` takes a graph
                 members: tuple[str, ...] = (),
                 # pass_argument: the stage at which what flows into the argument runs
                 stage: str = "") -> None:
        _set_fields(self, name=name, role=role, name_arg=name_arg, name_position=name_position,
                    why=why, torch=torch, origin=origin, line=line, members=members, stage=stage)


def _same_value(a: Any, b: Any) -> bool:
    """Equality that does not confuse True with 1 (TOML and Python configs both have both)."""
    return type(a) is type(b) and a == b if isinstance(a, bool) or isinstance(b, bool) else a == b


def value_matches_type(value: Any, type_spec: str) -> bool:
    """Whether ``value`` is of the declared config type (``"bool|none"`` style unions)."""
    for name in type_spec.split("|"):
        name = name.strip()
        if name == "any" or name == "callable" and callable(value):
            return True
        if name == "bool" and isinstance(value, bool):
            return True
        if name == "int" and isinstance(value, int) and not isinstance(value, bool):
            return True
        if name == "float" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return True
        if name == "str" and isinstance(value, str):
            return True
        if name == "list" and isinstance(value, (list, tuple)):
            return True
        if name == "dict" and isinstance(value, dict):
            return True
        if name == "none" and value is None:
            return True
    return False


# (range, torch version) -> whether the version is in the range. packaging (imported only here
# and in validation: its regexes are a few ms of every import) answers once per pair;
# lite_guard.registry_cache keeps the answers for the running torch with the cached registry.
_VERSION_MATCHES: dict[tuple[str, str], bool] = {}


def _version_matches(spec: str, torch_version: str | None) -> bool:
    if not spec or torch_version is None:
        return True
    known = _VERSION_MATCHES.get((spec, torch_version))
    if known is None:
        from packaging.specifiers import SpecifierSet
        from packaging.version import Version

        # "2.13.0+cpu" and "2.14.0a0" must match ">=2.13": compare the release part only.
        release = Version(torch_version).release
        known = Version(".".join(map(str, release))) in SpecifierSet(spec)
        _VERSION_MATCHES[(spec, torch_version)] = known
    return known


class Registry:
    """Every entry of the registry files in use, in load order, with lookups by name and key.
    A plain class (not a dataclass: see _Entry); equal when every field is."""

    _FIELDS = ("passes", "configs", "pipelines", "bases", "files", "_by_name", "_by_key",
               "_file_bytes")
    __hash__ = None  # type: ignore[assignment]  (mutable, like the dataclass it was)

    def __init__(self, passes: tuple[PassEntry, ...] = (), configs: tuple[ConfigEntry, ...] = (),
                 pipelines: tuple[PipelineEntry, ...] = (), bases: tuple[BaseEntry, ...] = (),
                 files: tuple[Path, ...] = (), _by_name: dict[str, PassEntry] | None = None,
                 _by_key: dict[tuple[str, str], ConfigEntry] | None = None,
                 _file_bytes: dict[Path, bytes] | None = None) -> None:
        self.passes, self.configs, self.pipelines, self.bases = passes, configs, pipelines, bases
        self.files = files
        self._by_name: dict[str, PassEntry] = {} if _by_name is None else _by_name
        self._by_key: dict[tuple[str, str], ConfigEntry] = {} if _by_key is None else _by_key
        self._file_bytes: dict[Path, bytes] = {} if _file_bytes is None else _file_bytes

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self._FIELDS)

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._FIELDS[:5])
        return f"Registry({shown})"

    # ---- loading -------------------------------------------------------------------------
    @classmethod
    def load(
        cls,
        extra_paths: Iterable[str | Path] = (),
        project_root: str | Path | None = None,
        include_shipped: bool = True,
        include_project: bool = True,
        include_env: bool = True,
    ) -> "Registry":
        """Shipped registries, then the project's (``[tool.lite_guard] registries``), then those
        named in ``LITE_GUARD_REGISTRIES``, then extras."""
        return cls.from_files(registry_paths(extra_paths, project_root, include_shipped,
                                             include_project, include_env))

    @classmethod
    def from_files(cls, paths: Iterable[str | Path]) -> "Registry":
        registry = cls()
        for path in paths:
            parsed = parse_registry_file(Path(path))
            registry._add(Path(path), parsed)
        registry._check_types()
        return registry

    def _add(self, path: Path, parsed: "ParsedFile") -> None:
        passes, configs = parsed.passes, parsed.configs
        for entry in passes:
            previous = self._by_name.get(entry.name)
            if previous is not None:
                raise RegistryError(
                    path, entry.line,
                    f"duplicate pass '{entry.name}' (first defined at {previous.origin}:{previous.line});"
                    " remove one of them",
                )
            self._by_name[entry.name] = entry
        for entry in configs:
            previous = self._by_key.get((entry.module, entry.key))
            if previous is not None:
                raise RegistryError(
                    path, entry.line,
                    f"duplicate config '{entry.module}:{entry.key}' (first defined at"
                    f" {previous.origin}:{previous.line}); remove one of them",
                )
            self._by_key[(entry.module, entry.key)] = entry
        self.passes += tuple(passes)
        self.configs += tuple(configs)
        self.pipelines += tuple(parsed.pipelines)
        self.bases += tuple(parsed.bases)
        self.files += (path,)
        self._file_bytes[path] = parsed.raw

    def _check_types(self) -> None:
        """A forced value must have the type torch declares for the key (the inventory's
        ``type``); a string "false" for a bool key would switch the pass on."""
        for entry in self.configs:
            if entry.forced and entry.type and not value_matches_type(entry.lite_value, entry.type):
                raise RegistryError(entry.origin, entry.line,
                                    f"lite_value {entry.lite_value!r} of '{entry.key}' is"
                                    f" {type(entry.lite_value).__name__}, but torch's config declares"
                                    f" {entry.type}; write a {entry.type} value")
            if isinstance(entry.region, list):
                for value in entry.region:
                    if entry.type and not value_matches_type(value, entry.type):
                        raise RegistryError(entry.origin, entry.line,
                                            f"region value {value!r} of '{entry.key}' is not"
                                            f" {entry.type}; list only values of torch's type")

    # ---- queries -------------------------------------------------------------------------
    def get_pass(self, name: str) -> PassEntry | None:
        return self._by_name.get(name)

    def match_pass(self, name: str) -> PassEntry | None:
        """The entry for a pass name as Inductor reports it: an exact name first, else a
        wildcard entry such as ``group_batch_fusion_*`` (names built at run time)."""
        exact = self._by_name.get(name)
        if exact is not None:
            return exact
        for pattern in self._wildcard_names():
            if fnmatch.fnmatchcase(name, pattern):
                return self._by_name[pattern]
        return None

    def _wildcards(self) -> dict[str, PassEntry]:
        return {n: self._by_name[n] for n in self._wildcard_names()}

    def _wildcard_names(self) -> tuple[str, ...]:
        """The wildcard pass names, found once (per set of names): every lookup of a name no
        entry spells walked every pass (1,000 lookups in a registry of 100,000: 19 s)."""
        held = self.__dict__.get("_held_wildcards")
        if held is None or held[0] is not self._by_name or held[1] != len(self._by_name):
            held = (self._by_name, len(self._by_name), tuple(n for n in self._by_name if "*" in n))
            self._held_wildcards = held
        return held[2]

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_held_wildcards"}  # derived

    def get_config(self, key: str, module: str = "inductor") -> ConfigEntry | None:
        return self._by_key.get((module, key))

    def configs_of(self, module: str) -> list[ConfigEntry]:
        return [c for c in self.configs if c.module == module]

    def hooked_passes(self) -> list[PassEntry]:
        """Passes the guard intercepts at a function or method (``hook``), custom hooks aside."""
        return [p for p in self.passes if p.hook and p.kind != "custom_hook"]

    def custom_hooks(self) -> list[PassEntry]:
        """The config attributes that hold user passes (Inductor's and functorch's)."""
        return [p for p in self.passes if p.kind == "custom_hook" and p.hook]

    def bases_by_role(self, role: str) -> list[BaseEntry]:
        return [b for b in self.bases if b.role == role]

    def filter(self, stage: str | None = None, lite: str | None = None) -> list[PassEntry]:
        return [
            p for p in self.passes
            if (stage is None or p.stage == stage) and (lite is None or p.lite == lite)
        ]

    def suggest(self, name: str, limit: int = 3) -> list[str]:
        """Close names for a "did you mean" line, passes and config keys alike."""
        import difflib  # only for a "did you mean" line

        candidates = list(self._by_name) + [key for _, key in self._by_key]
        return difflib.get_close_matches(name, candidates, n=limit, cutoff=0.6)

    def derive_lite_config(
        self, module: str = "inductor", torch_version: str | None = None
    ) -> dict[str, Any]:
        """The config patch lite mode applies, derived from the registry, never written by hand."""
        return {
            c.key: c.lite_value
            for c in sorted(self.configs, key=lambda c: c.key)
            if c.module == module and c.forced and c.exists_in(torch_version)
        }

    def content_hash(self) -> str:
        """SHA-256 of the bytes every registry file in use had when it was parsed: the lint cache
        key and the compiler's "re-read?" test (an edit that keeps mtime and size still counts)."""
        digest = hashlib.sha256()
        for path in self.files:
            data = self._file_bytes.get(path, b"")
            # fsencode: a file name may hold any byte (kept as a surrogate escape in str)
            digest.update(os.fsencode(str(path)) + b"\0" + str(len(data)).encode() + b"\0")
            digest.update(data)
        return digest.hexdigest()


def shipped_registry_files() -> list[Path]:
    return sorted(SHIPPED_DIR.glob("*.toml"))


# Registry files every consumer adds (check, registry, the flake8 plugin, the compiler), paths
# separated by os.pathsep. `check` ignored it: a CI that set it linted against another registry
# than the one its compiles ran with.
REGISTRY_ENV = "LITE_GUARD_REGISTRIES"


def env_registry_paths() -> list[Path]:
    """The files named in ``LITE_GUARD_REGISTRIES`` (empty entries, as in ``a.toml::b.toml``,
    are nothing); one that does not exist is one line naming the variable."""
    found = [Path(p) for p in os.environ.get(REGISTRY_ENV, "").split(os.pathsep) if p]
    _require_exists(found, f"named in {REGISTRY_ENV}", "fix the path there or unset the variable")
    return found


def _require_exists(paths: Iterable[Path], source: str, fix: str) -> None:
    """Each of ``paths`` exists, else one line naming where it was given (``source``)."""
    for path in paths:
        try:
            os.stat(path)
        except FileNotFoundError:
            try:
                target = os.readlink(path)
            except OSError:  # (ValueError cannot be: stat would have raised it)
                raise RegistryError(path, 0, f"registry file does not exist ({source}); {fix}") \
                    from None
            raise RegistryError(path, 0, f"registry file is a link to {target!r}, which does not"
                                f" exist ({source}); {fix}") from None
        except (ValueError, OSError):  # a NUL, a link loop, a name too long: read_regular_file
            continue                   # (parse_registry_file) says which, in one line


def registry_paths(
    extra_paths: Iterable[str | Path] = (),
    project_root: str | Path | None = None,
    include_shipped: bool = True,
    include_project: bool = True,
    include_env: bool = True,
    extra_source: tuple[str, str] = ("given with --registry", "fix the path"),
) -> list[Path]:
    """The registry files in use, in load order: shipped, the project's, ``LITE_GUARD_REGISTRIES``,
    then ``extra_paths`` (said to be ``extra_source`` when one does not exist)."""
    paths: list[Path] = []
    if include_shipped:
        paths += shipped_registry_files()
    if include_project:
        from lite_guard.project_config import load_project_config

        paths += load_project_config(project_root).registries
    if include_env:
        paths += env_registry_paths()
    extra = [Path(p) for p in extra_paths]
    _require_exists(extra, *extra_source)
    # One file named twice (in pyproject and by --registry, or in LITE_GUARD_REGISTRIES) is
    # loaded once: else each of its entries is a "duplicate" of itself.
    unique: dict[str, Path] = {}
    for path in paths + extra:
        try:
            unique.setdefault(os.path.realpath(path), path)
        except ValueError:  # a NUL in the name: parse_registry_file says so, one line
            unique.setdefault(str(path), path)
    return list(unique.values())


# ---- parsing and validation -------------------------------------------------------------

# Patterns as text: re compiles (and caches) them at their first use, i.e. only when a file is
# parsed; a registry read from the cache never pays for them.
# `[["pass"]]` and `[[ 'pass' ]]` are the same table to TOML (it was "must be an array of tables")
_TABLE_HEADER = r"""^[ \t]*\[\[[ \t]*(["']?)(?P<table>pass|config|pipeline|base)\1[ \t]*\]\]"""
# A registry is a few hundred KB; anything far larger is not one (and must not fill memory).
MAX_REGISTRY_BYTES = 16 * 1024 * 1024


class ParsedFile(NamedTuple):  # a NamedTuple: a frozen dataclass costs ~1 ms of every import
    passes: list[PassEntry]
    configs: list[ConfigEntry]
    pipelines: list[PipelineEntry]
    bases: list[BaseEntry]
    raw: bytes


def read_regular_file(path: Path, limit: int = MAX_REGISTRY_BYTES) -> bytes:
    """The bytes of a regular file; a FIFO, socket or device (or a symlink to one) is refused
    instead of blocking or reading forever. Raises OSError with a reason people can act on."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"not a regular file (a FIFO, socket, device or directory)")
        if info.st_size > limit:
            raise OSError(f"file is {info.st_size} bytes, over the {limit}-byte limit")
        chunks, total = [], 0
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise OSError(f"file grew over the {limit}-byte limit while being read")
        return b"".join(chunks)
    finally:
        os.close(fd)


def parse_registry_file(path: Path) -> ParsedFile:
    try:
        raw = read_regular_file(path)
        text = raw.decode("utf-8-sig")  # a BOM (Windows editors) is no error
    except FileNotFoundError:
        # (Each source names its missing files first; this is one that vanished since.)
        raise RegistryError(path, 0, "registry file does not exist; fix the path in [tool.lite_guard]"
                            " registries, LITE_GUARD_REGISTRIES or on the command line") from None
    except (OSError, ValueError) as exc:  # undecodable; a NUL in the path
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        # An undecodable byte: on its line (utf-8-sig counts its position after the BOM).
        line = raw.count(b"\n", 0, exc.start + 3 * raw.startswith(b"\xef\xbb\xbf")) + 1 \
            if isinstance(exc, UnicodeDecodeError) else 0
        raise RegistryError(path, line, f"cannot read registry file: {reason}; point the registry"
                            " path at a regular UTF-8 TOML file") from None
    data = loads_toml(path, text)

    # Split once, as TOML counts lines ("\n" only: str.splitlines() also splits at a U+2028,
    # U+0085 or form feed that a string or comment may hold, and every later line would be off).
    text_lines = text.split("\n")
    lines = _entry_lines(text)
    unknown_tables = set(data) - {*_TABLES, "meta"}
    if unknown_tables:
        table = sorted(unknown_tables)[0]
        raise RegistryError(path, _line_of(text_lines, table), f"unknown table '{table}'; expected"
                            " [[pass]], [[config]], [[pipeline]], [[base]] or [meta]")
    parsers = {"pass": _parse_pass, "config": _parse_config, "pipeline": _parse_pipeline,
               "base": _parse_base}
    entries = {}
    for table, parse in parsers.items():
        raw_entries = _as_table_list(path, data, table, text_lines, lines[table])
        entries[table] = [parse(path, entry, line, text_lines)
                          for entry, line in zip(raw_entries, lines[table])]
    return ParsedFile(entries["pass"], entries["config"], entries["pipeline"], entries["base"], raw)



def _as_table_list(path: Path, data: dict, table: str, lines: Sequence[str],
                   headers: list[int]) -> list[dict]:
    """The entries of ``[[table]]``; each must be written as its own header (that is where its
    line number comes from), not as an inline array."""
    value = data.get(table, [])
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value) \
            or len(value) != len(headers):
        raise RegistryError(path, _line_of(lines, table), f"'{table}' must be an array of tables:"
                            f" write each entry under its own [[{table}]] header")
    return value


# What may hold a "[[pass]]" line that is no header: multi-line strings (whose closing quotes
# may be followed by up to two more), and the strings and comments that could open one falsely.
_TOML_TEXT = (r'"""(?:\\.|[^\\])*?"{3,5}|\'\'\'.*?\'{3,5}|"(?:\\.|[^"\\\n])*"|\'[^\'\n]*\'|#[^\n]*')


def _entry_lines(text: str) -> dict[str, list[int]]:
    """The line of each ``[[table]]`` header, in order; a header-like line inside a multi-line
    string is text, not a header (tomllib has already accepted the file)."""
    found: dict[str, list[int]] = {table: [] for table in _TABLES}
    inside = [m.span() for m in re.finditer(_TOML_TEXT, text, re.S) if m.group()[:3] in ('"""', "'''")]
    span, line, counted = 0, 1, 0
    for match in re.finditer(_TABLE_HEADER, text, re.M):
        start = match.start()
        while span < len(inside) and inside[span][1] <= start:
            span += 1
        if span < len(inside) and inside[span][0] < start:
            continue
        line += text.count("\n", counted, start)
        counted = start
        found[match.group("table")].append(line)
    return found


def _line_of(lines: Sequence[str], word: str) -> int:
    for number, line in enumerate(lines, start=1):
        if word in line:
            return number
    return 0


@functools.lru_cache(maxsize=None)
def _field_pattern(field_name: str) -> re.Pattern[str]:
    return re.compile(rf"^\s*{re.escape(field_name)}\s*=")


def _field_line(lines: Sequence[str], entry_line: int, field_name: str) -> int:
    """Line of ``field =`` inside the entry that starts at entry_line (or the header line).

    ``lines`` is the file split once (at "\\n", as TOML counts lines), shared by every lookup
    in the file.
    """
    pattern = _field_pattern(field_name)
    for index in range(entry_line, len(lines)):
        line = lines[index]
        if re.match(_TABLE_HEADER, line) or line.lstrip().startswith("["):
            break
        if pattern.match(line):
            return index + 1
    return entry_line


def _require_str(path, raw, key, line, lines, *, choices=None, required=True) -> str:
    value = raw.get(key, "")
    if not isinstance(value, str):
        raise RegistryError(path, _field_line(lines, line, key),
                            f"'{key}' must be a string, got {type(value).__name__}")
    if required and not value:
        raise RegistryError(path, line, f"entry has no '{key}'; add {key} = \"...\"")
    if choices and value and value not in choices:
        import difflib  # only for a message

        hint = difflib.get_close_matches(value, choices, n=1)
        did_you_mean = f" (did you mean '{hint[0]}'?)" if hint else ""
        raise RegistryError(path, _field_line(lines, line, key), f"unknown {key} '{value}'{did_you_mean};"
                            f" expected one of: {', '.join(choices)}")
    return value


def _check_fields(path, raw, allowed, line, lines, what) -> None:
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise RegistryError(path, _field_line(lines, line, unknown[0]),
                            f"unknown field '{unknown[0]}' in [[{what}]]; allowed:"
                            f" {', '.join(sorted(allowed))}")


def _check_torch_spec(path, spec, line, lines) -> None:
    if not spec:
        return
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    where = _field_line(lines, line, "torch")
    if any(not part.strip() for part in spec.split(",")):
        # packaging drops empty parts: ">=2.11,,<2.13", ">=2.11," or " " were taken (the last
        # as "every version") where a bound was probably lost.
        raise RegistryError(path, where, f"torch version range '{spec}' has an empty part"
                            " (two commas, a trailing comma, or only spaces); write e.g."
                            " \">=2.11,<2.14\", or leave torch out for every version")
    try:
        bounds = list(SpecifierSet(spec))
        for bound in bounds:
            bound.contains("2.13.0")  # reads the bound's version: a 5,000-digit one raises here
    except (InvalidSpecifier, ValueError):  # ValueError: a number past CPython's 4300-digit limit
        raise RegistryError(path, where,
                            f"invalid torch version range '{spec}'; write e.g. \">=2.11,<2.14\"") from None
    arbitrary = next((bound for bound in bounds if bound.operator == "==="
                      and re.fullmatch(r"\d+(\.\d+)*", bound.version)
                      and bound.version.count(".") != 2), None)
    if arbitrary is not None:
        # "===2.13" compares text with the torch release, always three parts ("2.13.0" of
        # "2.13.0+cpu"), so it never matched; the release check below, which tries "2.13", took it.
        raise RegistryError(path, where, f"torch version range '{spec}' uses '{arbitrary}', which"
                            " compares the version as text and matches no torch release"
                            f" (torch says e.g. 2.13.0); write '=={arbitrary.version}' or"
                            f" '=={arbitrary.version}.*'")
    if not _range_can_match(spec):
        # ">=2.14,<2.12" (bounds swapped), "==2.13,!=2.13", "===banana" or "==2.13.0a1" (torch
        # versions are compared by their release part): the entry applied to no torch at all,
        # and said nothing.
        raise RegistryError(path, where, f"torch version range '{spec}' matches no torch version"
                            f"{_release_only_note(bounds)}; write a range some release is in, e.g."
                            " \">=2.11,<2.14\"")


def _release_only_note(bounds) -> str:
    from packaging.version import InvalidVersion, Version

    for bound in bounds:
        try:
            version = Version(bound.version.rstrip(".*"))
        except InvalidVersion:  # "===banana": text, compared as text
            return (f" ('{bound}' compares text, and no torch version is"
                    f" '{bound.version}')") if bound.operator == "===" else ""
        if version.pre or version.post is not None or version.dev is not None or version.local:
            return (f" (torch versions are compared by their release part, {version}"
                    f" as {version.base_version}: write '{bound.operator}{version.base_version}')")
    return ""


@functools.lru_cache(maxsize=1024)  # a registry repeats a few ranges hundreds of times
def _range_can_match(spec: str) -> bool:
    """Whether some release (``X.Y.Z...``, as _version_matches compares torch versions) is in
    ``spec``. The releases in a range are intervals cut at its bounds' versions, so a release
    next to each bound (just below, at, just above; longer and shorter) meets every non-empty
    part; a few more far away cover ranges with no upper or lower bound."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    specifiers = SpecifierSet(spec)
    candidates = {(0,), (0, 0, 1), (10**6,)}
    for bound in specifiers:
        try:
            release = Version(bound.version.rstrip(".*")).release
        except InvalidVersion:
            continue
        release = release[:12]  # (a bound of 5,000 parts: its first ones decide)
        candidates.update({release, release + (1,), release + (0, 1), release + (0, 0, 1),
                           release[:-1] + (release[-1] + 1,), release[:1] + (10**6,)})
        for cut in range(1, len(release) + 1):
            head = release[:cut]
            candidates.update({head, head[:-1] + (head[-1] + 1,)})
            if head[-1] > 0:
                below = head[:-1] + (head[-1] - 1,)
                candidates.update({below, below + (10**6,)})
    return any(Version(".".join(map(str, c))) in specifiers for c in candidates)


_QUALIFIED = r"^[A-Za-z_][\w.]*:[A-Za-z_<][\w.<>]*$"  # compiled at first use, as above
_CONFIG_REF = r"^(?:(inductor|functorch):)?[A-Za-z_][\w.]*$"


def _check_qualified(path, value, field_name, line, lines, example) -> None:
    if value and not re.match(_QUALIFIED, value):
        raise RegistryError(path, _field_line(lines, line, field_name),
                            f"{field_name} '{value}' is not 'module:qualname'; write e.g. \"{example}\"")


def _check_wildcard_scope(path, name, lite, line, lines) -> None:
    """A wildcard that allows passes must be scoped to the project's own qualified namespace:
    "*" or "fx_*" with lite = "always" would let any pass, torch's included, run unchecked."""
    if "*" not in name or lite not in LITE_SAFE_FLAGS:
        return
    # Up to the first glob character of any kind: "[t]orch.x:*" or "?:*" is no namespace.
    prefix = re.split(r"[*?\[]", name, maxsplit=1)[0]
    module = prefix.split(":", 1)[0]
    if ":" not in prefix or not module or module == "torch" or module.startswith("torch."):
        raise RegistryError(path, _field_line(lines, line, "name"),
                            f"wildcard pass '{name}' may not be lite = \"{lite}\": a wildcard can"
                            " only allow passes inside your own qualified namespace; write e.g."
                            " name = \"my_project.passes:*\" or list the passes one by one")


def _check_identity_shape(path, name, kind, line, lines) -> None:
    """A class or function pass outside torch is ``module:qualname``, both dotted names. One with
    an empty module or qualname (``"m:"``, ``":P"``), a second colon (``"m::P"``), an empty
    dotted part (``"m:P."``, ``"a..b:P"``) or a part padded with spaces (``" m:P"``, ``"m: P"``: pasted) is no
    identity the lint or the guard ever produces: the entry allowed nothing, silently. (Other
    characters stay: ``__qualname__`` can be set to any text, and a module can be a file named
    ``my-pass.py``.)"""
    if kind not in ("class", "function") or ":" not in name or re.search(r"[*?\[]", name):
        return
    module, _, qualname = name.partition(":")
    for part_of, text in (("module", module), ("qualname", qualname)):
        if not text:
            problem = f"its {part_of} is empty"
        elif ":" in text:  # "m::P", "a:b:c"
            problem = "it has a second ':'"
        elif any(not part for part in text.split(".")):
            problem = f"its {part_of} '{text}' has an empty dotted part"
        elif any(part != part.strip() for part in text.split(".")):
            problem = f"its {part_of} '{text}' has spaces around a name"
        else:
            continue
        raise RegistryError(path, _field_line(lines, line, "name"),
                            f"pass '{name}' ({kind}) is no 'module:qualname' identity: {problem};"
                            f" write the module and the {kind}'s __qualname__, e.g."
                            f" \"my_project.passes:{'FusePass' if kind == 'class' else 'fuse_pass'}\"")


def _check_spelled_as_python(path, name, kind, line, lines) -> None:
    """A class or function pass is named by its ``__qualname__``, which Python spells in NFKC:
    ``class ＭyPass`` (a fullwidth M) defines ``MyPass``. A name written ``"m:ＭyPass"`` matched
    no pass ever (the lint kept reporting ``m:MyPass``, the guard refused it) and said nothing."""
    if kind not in ("class", "function") or name.isascii():
        return
    import unicodedata

    module, colon, qualname = name.rpartition(":")
    folded = unicodedata.normalize("NFKC", qualname)
    if folded != qualname:
        spelled = f"{module}{colon}{folded}"
        if unicodedata.normalize("NFC", qualname) == folded:
            # Only the composition differs ("e" + U+0301 against "é"): both print alike, so a
            # suggestion written in letters reads as "write what you wrote". Spelled with TOML's
            # own \uXXXX escapes, what to write is visible (and pastes as the right letters).
            spelled = "".join(c if c.isascii() else f"\\u{ord(c):04x}" for c in spelled)
            written = "".join(c if c.isascii() else f"\\u{ord(c):04x}" for c in name)
            raise RegistryError(path, _field_line(lines, line, "name"),
                                f"pass '{name}' ({kind}) is written with decomposed letters"
                                f" (\"{written}\"); Python composes identifiers (NFKC), so this name"
                                f" matches no {kind}; write name = \"{spelled}\"")
        raise RegistryError(path, _field_line(lines, line, "name"),
                            f"pass '{name}' ({kind}): Python spells that qualified name"
                            f" '{spelled}' (identifiers are NFKC-normalised), so this"
                            f" name matches no {kind}; write name = \"{spelled}\"")


def _parse_pass(path: Path, raw: dict, line: int, lines: Sequence[str]) -> PassEntry:
    _check_fields(path, raw, _PASS_FIELDS, line, lines, "pass")
    name = _require_str(path, raw, "name", line, lines)
    stage = _require_str(path, raw, "stage", line, lines, choices=STAGES)
    lite = _require_str(path, raw, "lite", line, lines, choices=LITE_FLAGS)
    why = _require_str(path, raw, "why", line, lines, required=False)
    if lite in LITE_SAFE_FLAGS and not why.strip():
        raise RegistryError(path, line, f"pass '{name}' is lite-safe (lite = \"{lite}\") but has no"
                            " 'why'; add why = \"<one line: why it is numerics-neutral>\"")
    _check_wildcard_scope(path, name, lite, line, lines)
    kind = _require_str(path, raw, "kind", line, lines, choices=PASS_KINDS, required=False) \
        or "function"
    _check_spelled_as_python(path, name, kind, line, lines)
    _check_identity_shape(path, name, kind, line, lines)
    gated_by = raw.get("gated_by", [])
    if not isinstance(gated_by, list) or not all(isinstance(g, str) for g in gated_by):
        raise RegistryError(path, _field_line(lines, line, "gated_by"),
                            "'gated_by' must be a list of config keys (strings)")
    torch_spec = _require_str(path, raw, "torch", line, lines, required=False)
    _check_torch_spec(path, torch_spec, line, lines)
    hook = _require_str(path, raw, "hook", line, lines, required=False)
    _check_qualified(path, hook, "hook", line, lines, "torch._inductor.scheduler:Scheduler.fuse_nodes")
    when = _require_str(path, raw, "when", line, lines, required=False)
    if when and not re.match(_CONFIG_REF, when):
        raise RegistryError(path, _field_line(lines, line, "when"),
                            f"when '{when}' is not a config key; write e.g. \"use_dce\","
                            " \"triton.cudagraphs\" or \"functorch:activation_memory_budget\"")
    return PassEntry(
        name=name, stage=stage, lite=lite, why=why, gated_by=tuple(gated_by),
        kind=kind, hook=hook, when=when,
        torch=torch_spec,
        source=_require_str(path, raw, "source", line, lines, required=False),
        origin=str(path), line=line,
    )


def _parse_config(path: Path, raw: dict, line: int, lines: Sequence[str]) -> ConfigEntry:
    _check_fields(path, raw, _CONFIG_FIELDS, line, lines, "config")
    key = _require_str(path, raw, "key", line, lines)
    module = _require_str(path, raw, "module", line, lines, choices=tuple(CONFIG_MODULES),
                          required=False) or "inductor"
    kind = _require_str(path, raw, "kind", line, lines, choices=CONFIG_KINDS,
                        required=False) or "pass_gate"
    lite_null = raw.get("lite_null", False)
    if not isinstance(lite_null, bool) or lite_null and "lite_value" in raw:
        raise RegistryError(path, _field_line(lines, line, "lite_null"),
                            f"config '{key}': lite_null must be true (lite mode forces None) or"
                            " absent, and never beside a lite_value")
    if lite_null:
        raw = {**raw, "lite_value": None}
    if kind in FORCED_CONFIG_KINDS and "lite_value" not in raw:
        raise RegistryError(path, line, f"config '{key}' (kind = \"{kind}\") has no 'lite_value';"
                            " add the value lite mode forces, e.g. lite_value = false (lite_null ="
                            " true forces None)")
    if kind in FREE_CONFIG_KINDS and "lite_value" in raw:
        raise RegistryError(path, _field_line(lines, line, "lite_value"),
                            f"config '{key}' is kind = \"{kind}\", which lite mode does not force;"
                            " remove lite_value or classify it as pass_gate, reorder, optimization,"
                            " numerics or mode")
    type_spec = _require_str(path, raw, "type", line, lines, required=False)
    for part in filter(None, type_spec.split("|")):
        if part.strip() not in CONFIG_TYPES:
            raise RegistryError(path, _field_line(lines, line, "type"),
                                f"unknown type '{part.strip()}' for '{key}'; expected one of:"
                                f" {', '.join(CONFIG_TYPES)} (unions as \"bool|none\")")
    region = raw.get("region", "")
    if not (region in ("", *REGION_POLICIES) or isinstance(region, list)):
        raise RegistryError(path, _field_line(lines, line, "region"),
                            f"region policy {region!r} of '{key}' must be \"forced\", \"free\" or"
                            " a list of the values a region may set")
    for field_name, values in (("lite_value", [raw.get("lite_value")]),
                               ("region", region if isinstance(region, list) else [])):
        odd = next((v for v in values if _non_finite(v)), None)
        if odd is not None:
            raise RegistryError(path, _field_line(lines, line, field_name),
                                f"config '{key}': {field_name} holds {odd!r}: nan and inf are no"
                                " value lite mode can force or compare (nan equals nothing, and"
                                " JSON, which lite-config prints, has neither); write a finite number")
        dated = next((v for v in values if _toml_date(v)), None)
        if dated is not None:
            raise RegistryError(path, _field_line(lines, line, field_name),
                                f"config '{key}': {field_name} holds {dated!r}: a TOML date or time is"
                                " no torch config value (and JSON, which lite-config prints, has"
                                " none); write it as a string")
    torch_spec = _require_str(path, raw, "torch", line, lines, required=False)
    _check_torch_spec(path, torch_spec, line, lines)
    return ConfigEntry(
        key=key, lite_value=raw.get("lite_value", UNSET), module=module, kind=kind,
        type=type_spec, region=region,
        why=_require_str(path, raw, "why", line, lines, required=False),
        torch=torch_spec, origin=str(path), line=line,
    )


def _toml_date(value: Any) -> bool:
    """A TOML date, time or date-time, or a list or table holding one."""
    import datetime

    if isinstance(value, (datetime.date, datetime.time)):
        return True
    if isinstance(value, list):
        return any(_toml_date(v) for v in value)
    if isinstance(value, dict):
        return any(_toml_date(v) for v in value.values())
    return False


def _non_finite(value: Any) -> bool:
    """nan or inf, or a list or table holding one (TOML has them; JSON and equality do not)."""
    if isinstance(value, float):
        return value != value or value in (float("inf"), float("-inf"))
    if isinstance(value, list):
        return any(_non_finite(v) for v in value)
    if isinstance(value, dict):
        return any(_non_finite(v) for v in value.values())
    return False


def _parse_pipeline(path: Path, raw: dict, line: int, lines: Sequence[str]) -> PipelineEntry:
    _check_fields(path, raw, _PIPELINE_FIELDS, line, lines, "pipeline")
    root = _require_str(path, raw, "root", line, lines)
    _check_qualified(path, root, "root", line, lines,
                     "torch._inductor.fx_passes.post_grad:post_grad_passes")
    torch_spec = _require_str(path, raw, "torch", line, lines, required=False)
    _check_torch_spec(path, torch_spec, line, lines)
    return PipelineEntry(
        root=root, stage=_require_str(path, raw, "stage", line, lines, choices=STAGES),
        why=_require_str(path, raw, "why", line, lines, required=False),
        torch=torch_spec, origin=str(path), line=line)


def _parse_base(path: Path, raw: dict, line: int, lines: Sequence[str]) -> BaseEntry:
    _check_fields(path, raw, _BASE_FIELDS, line, lines, "base")
    name = _require_str(path, raw, "name", line, lines)
    _check_qualified(path, name, "name", line, lines,
                     "torch._inductor.custom_graph_pass:CustomGraphPass")
    role = _require_str(path, raw, "role", line, lines, choices=BASE_ROLES)
    position = raw.get("name_position", -1)  # -1: none
    if not isinstance(position, int) or isinstance(position, bool) \
            or "name_position" in raw and position < 0:  # written -1 or -5: silently "none"
        raise RegistryError(path, _field_line(lines, line, "name_position"),
                            "'name_position' must be an integer, 0 or more (the argument's index,"
                            " self excluded)")
    name_arg = _require_str(path, raw, "name_arg", line, lines, required=False)
    # pattern_registration: name_arg / name_position is the argument holding the target pass
    # dict; without one, the function always registers into its own module's pattern passes.
    members = raw.get("members", [])
    if not isinstance(members, list) or not all(isinstance(m, str) and m.isidentifier()
                                                for m in members) \
            or bool(members) != (role in MEMBER_ROLES):
        raise RegistryError(path, _field_line(lines, line, "members") if "members" in raw else line,
                            f"base '{name}': 'members' (a list of attribute names) is required for"
                            " role = \"graph_type\", \"graph_mutation\" or \"graph_store\" and allowed"
                            " for no"
                            " other role")
    if role not in ("pass_class", "pattern_registration", "lowering_registration", "graph_rewrite",
                    "graph_producer", *MEMBER_ROLES) \
            and not name_arg \
            and position < 0:
        raise RegistryError(path, line, f"base '{name}' (role = \"{role}\") must say which argument"
                            " names the pass: add name_arg = \"...\" and/or name_position = N")
    stage = _require_str(path, raw, "stage", line, lines, required=False,
                         choices=STAGES) if "stage" in raw else ""
    if stage and role != "pass_argument":
        raise RegistryError(path, _field_line(lines, line, "stage"), f"base '{name}': 'stage' (where"
                            " what flows into the argument runs) is allowed for role ="
                            " \"pass_argument\" only")
    torch_spec = _require_str(path, raw, "torch", line, lines, required=False)
    _check_torch_spec(path, torch_spec, line, lines)
    return BaseEntry(
        name=name, role=role, name_arg=name_arg, name_position=position,
        why=_require_str(path, raw, "why", line, lines, required=False),
        torch=torch_spec, origin=str(path), line=line, members=tuple(members), stage=stage)
