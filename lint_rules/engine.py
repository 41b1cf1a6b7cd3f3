"""The lint engine: find files, summarize each one once (stdlib ``ast``: the whole-tree index
needs every file), run the libcst file rules only on the files their triggers select, cache all
of that per file by content, then run the index rules over the whole tree and the tree rules.

Knows nothing of flake8 or of the CLI; both are thin adapters over ``lint_paths``/``lint_source``.
libcst is imported only when a file rule needs a parse, so a fully cached run never loads it.
"""

from __future__ import annotations

import ast
import errno
import functools
import hashlib
import os
import re
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from lint_rules import isolation, prefilter, versions
from lint_rules.cache import Cache
from lint_rules.findings import (FileFacts, FileResult, Finding, config_module_of, name_strings,
                                 symbols)
from lint_rules.index import (SUMMARY_VERSION, Index, Vocabulary, checkout_module,
                              checkout_packages, module_name, source_lines, summarize,
                              suppression_comments)
from lite_guard import __version__
from lite_guard.registry import Registry

UNCHECKABLE = "LG900"  # a file the linter could not read, decode or parse
_RULES_DIR = Path(__file__).parent
# Bare "ignore" is every code; "ignore[" that is no code list ("ignore[LG-001]", "ignore[LG001")
# is none, not every code: a typo must not become a blanket suppression.
_SUPPRESS = re.compile(r"#\s*lite-guard:\s*ignore(?:\[(?P<codes>[A-Z0-9,\s]+)\]|(?!\s*\[))", re.I)
_NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.I)
_NESTED = isolation.NESTED
_VERSION = re.compile(r"__version__\s*=\s*['\"]([^'\"]+)['\"]")


@dataclass
class LintReport:
    findings: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # usage problems (a path that does not exist)
    facts: dict[str, FileFacts] = field(default_factory=dict)  # what each file defines
    files: int = 0
    parsed: int = 0  # parsed by libcst (for the file rules)
    cached: int = 0  # results that came from the cache
    read: int = 0  # files whose bytes were read (none when the run record answered)
    skipped: int = 0  # files the prefilter proved need no parse (lint_rules.prefilter)


# ---- what a registry asks of the rules (computed once per registry) --------------------------

class Plan:
    """The rules, split by kind, with their triggers compiled against one registry."""

    def __init__(self, registry: Registry) -> None:
        from lint_rules.rule import trigger_pattern
        from lint_rules.rules import FILE_RULES, INDEX_RULES, TREE_RULES

        self.vocab = Vocabulary.from_registry(registry)
        self.file_rules = [(rule, trigger_pattern(rule.triggers(registry))) for rule in FILE_RULES]
        self.index_rules = INDEX_RULES
        # A file with none of the index rules' trigger bytes has no site of theirs: its summary
        # keeps only what other files resolve through it (lint_rules.index, light mode).
        self.index_triggers = trigger_pattern(t for rule in INDEX_RULES for t in rule.triggers(registry))
        self.index_triggers_text = re.compile(self.index_triggers.pattern.decode("utf-8")) \
            if self.index_triggers is not None else None
        self.tree_rules = TREE_RULES
        self.names = frozenset(p.name for p in registry.passes)

    def file_rules_for(self, path: str, data: bytes) -> list[type]:
        return [rule for rule, pattern in self.file_rules if rule.wants(path, data, pattern)]


_PLANS: dict[int, tuple[Registry, Plan]] = {}


def plan_for(registry: Registry) -> Plan:
    entry = _PLANS.get(id(registry))
    if entry is None or entry[0] is not registry:
        entry = (registry, Plan(registry))
        _PLANS[id(registry)] = entry
    return entry[1]


# ---- one file --------------------------------------------------------------------------------

decode = isolation.decode  # source text as Python reads it (coding cookie, else UTF-8)


def _quiet_parsing(function):
    """Run ``function`` with the warnings Python's compiler raises about linted code (an invalid
    escape ``"\\d"``, ``x is 1``) ignored: under ``PYTHONWARNINGS=error`` (a CI setting) each
    became a SyntaxError, an LG900 that hid the file's findings; and they are not ours to print.
    Workers forked inside inherit the filter."""
    @functools.wraps(function)
    def quiet(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            return function(*args, **kwargs)
    return quiet


@_quiet_parsing
def analyze(path: str, data: bytes, registry: Registry, torch_version: str | None = None,
            module: str | None = None, parse: bool | None = None) -> FileResult:
    """One file, on its own: its facts, its index summary, and the findings of the file rules
    whose triggers it holds (all of them when ``parse``). The unit that is cached."""
    plan = plan_for(registry)
    facts = FileFacts(symbols=symbols(data), strings=name_strings(data, plan.names))
    config_module = config_module_of(path)
    if config_module:
        facts.config_modules.append(config_module)
    try:
        source = decode(data)
    except (UnicodeError, LookupError) as exc:
        # UnicodeError: a codec that fails as a whole ("# coding: undefined", idna's "label too
        # long"), not at a byte; it was "the linter failed ... please report it" here and a
        # traceback under flake8. The file never runs: it is one that cannot be decoded.
        return FileResult([Finding(path, 1, 1, UNCHECKABLE, f"cannot decode file: {exc}; the file"
                                   " was not checked (save it as UTF-8, or fix its coding cookie)")],
                          facts)
    tree = None
    try:
        tree = ast.parse(source, filename=path)
        light = plan.index_triggers is None or plan.index_triggers.search(data) is None
        summary = summarize(source, module or module_name(path), Path(path).name == "__init__.py",
                            plan.vocab, tree, light=light, triggers=plan.index_triggers_text)
    except SyntaxError as exc:
        message = isolation.syntax_error_message(exc)
        return FileResult([Finding(path, exc.lineno or 1, exc.offset or 1, UNCHECKABLE, message)],
                          facts)
    except (RecursionError, MemoryError, ValueError) as exc:
        if isinstance(exc, MemoryError):  # a huge flat file is not a deep one (a small one is)
            return FileResult([Finding(path, 1, 1, UNCHECKABLE,
                                       isolation.memory_error_message(source))], facts)
        if tree is None:  # CPython's own parser gave up
            return FileResult([Finding(path, 1, 1, UNCHECKABLE, _NESTED)], facts)
        depth, line = isolation.ast_depth(tree)  # CPython parsed it; the index's reader did not
        return FileResult([Finding(path, line, 1, UNCHECKABLE, (
            f"code nested {depth} levels deep is too deep for lite-guard's reader; the file was not"
            " checked (split the expression)"))], facts)
    rules = [rule for rule, _ in plan.file_rules] if parse else plan.file_rules_for(path, data)
    if not rules:
        return FileResult([], facts, summary=summary)

    problem = isolation.parse_problem(source, path)  # libcst crashes on what CPython refuses
    if problem is not None:
        return FileResult([problem], facts, summary=summary)

    from lint_rules.rule import FileContext, cst

    try:
        module_node = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        # CPython accepted the file (parse_problem): this is the reader's limit, not a syntax
        # error of the file (4,000 implicitly concatenated strings, which libcst nests one in
        # the next); its position may lie past the file's end, so it is only named.
        message = (f"lite-guard's reader (libcst) cannot read this file, which Python accepts"
                   f" ({exc.message}); the file was not checked (simplify the construct it names,"
                   " such as thousands of implicitly concatenated strings, or report it)")
        line = exc.raw_line if 1 <= exc.raw_line <= source.count("\n") + 1 else 1
        return FileResult([Finding(path, line, 1, UNCHECKABLE, message)],
                          facts, parsed=True, summary=summary)
    except RecursionError:
        return FileResult([Finding(path, 1, 1, UNCHECKABLE, _NESTED)],
                          facts, parsed=True, summary=summary)
    context = FileContext(path, source, registry, torch_version, config_module=config_module,
                          facts=facts)
    cst.visit_batched(module_node, [rule(context) for rule in rules])
    comments = summary["suppress"] if summary else suppression_comments(source_lines(source), tree)
    findings = [f for f in context.resolve_findings(module_node)
                if not _suppressed(comments.get(str(f.line), ""), f.code)]
    return FileResult(findings, facts, parsed=True, summary=summary)


def lint_source(path: str, data: bytes, registry: Registry, torch_version: str | None = None,
                parse: bool | None = None) -> FileResult:
    """Lint one file as a tree of its own: the file rules, then the index rules over an index of
    this one module (names it imports from elsewhere stay unresolved, and are reported when a
    pass depends on them). flake8 and the rule examples use this."""
    result = analyze(path, data, registry, torch_version, parse=parse)
    if result.summary is not None:
        findings, _ = index_findings(registry, [(path, result.summary)], torch_version)
        result.findings = sorted(result.findings + findings)
    return result


def index_findings(registry: Registry, summaries: list[tuple[str, dict]],
                   torch_version: str | None = None) -> tuple[list[Finding], set[str]]:
    """Run the index rules over the summaries of a tree; also the pass names they recognised.
    What the tree holds is looked for with the whole registry's vocabulary; whether it is
    registered is asked of the entries in range for the tree's ``torch_version``."""
    plan = plan_for(registry)
    registered = versions.registry_at(registry, torch_version)
    index = Index(summaries, plan.vocab)
    findings: list[Finding] = []
    names: set[str] = set()
    suppressions = {path: summary.get("suppress", {}) for path, summary in summaries}
    for rule in plan.index_rules:
        try:
            found, recognised = rule.check(index, registered)
        except (RecursionError, Exception) as exc:  # a bug of ours: reported, never a traceback
            first = (str(exc).splitlines() or [""])[0][:200]
            where = summaries[0][0] if summaries else "<tree>"
            findings.append(Finding(where, 1, 1, UNCHECKABLE, f"rule {rule.CODE} failed on this tree"
                                    f" ({type(exc).__name__}: {first}); it was not checked by"
                                    " that rule, please report it"))
            continue
        names |= recognised
        for finding in found:
            line = suppressions.get(finding.path, {}).get(str(finding.line), "")
            if not (line and _suppressed(line, finding.code)):
                findings.append(finding)
    return findings, names


def suppress(findings: list[Finding], lines: list[str]) -> list[Finding]:
    """Drop findings whose line says ``# lite-guard: ignore[CODE]`` or ``# noqa: CODE`` (the tree
    rules' findings, on registry files: TOML, which Python's tokenizer does not read; Python files
    are matched against their comment tokens, ``suppression_comments``)."""
    kept = []
    for finding in findings:
        line = lines[finding.line - 1] if 0 < finding.line <= len(lines) else ""
        if "#" in line and _suppressed(line, finding.code):
            continue
        kept.append(finding)
    return kept


def _suppressed(line: str, code: str) -> bool:
    for pattern in (_SUPPRESS, _NOQA):
        match = pattern.search(line)
        if match and (not match.group("codes") or code in re.split(r"[,\s]+", match.group("codes"))):
            return True
    return False


# ---- trees -----------------------------------------------------------------------------------

def _too_long(exc: OSError) -> str:
    """What to do about a path the system cannot open (over PATH_MAX or NAME_MAX): nothing under
    it was linted, and the run says so (exit 2)."""
    if exc.errno != errno.ENAMETOOLONG:
        return ""
    return ("; that path is longer than the system allows and was not linted (shorten its folder"
            " or file names, or run from a folder nearer to it)")


def discover(paths: list[Path], exclude: tuple[str, ...] = ()) -> tuple[list[Path], list[str]]:
    files: list[Path] = []
    errors: list[str] = []
    walked: set[Path] = set()  # found under a directory (files named one by one may be excluded)
    for path in dict.fromkeys(paths):  # "." named 1,000 times is walked once, not 1,000 times
        try:
            is_dir = path.is_dir()
        except OSError as exc:  # a name too long for the file system (lintrunner's paths file)
            errors.append(f"{path}: {exc.strerror or exc}{_too_long(exc)}")
            continue
        if is_dir:
            found = _walk(path, errors)
            walked.update(found)
            files += found
        elif path.exists() or path.is_symlink():  # a FIFO or device given by name: LG900 below
            files.append(path)
        else:
            errors.append(f"{path}: no such file or directory")
    if exclude:
        excluded = _Exclusion(exclude)
        kept = [f for f in files if not excluded(f)]
        if walked and not walked.intersection(kept):
            # exclude = ["*"]: every file of the directories to lint is excluded; a green lint
            # that read nothing is no lint (a pre-commit run naming excluded files is fine)
            errors.append(f"exclude {list(exclude)} excludes every one of the {len(walked)} Python"
                          " file(s) under the directories to lint, so nothing would be checked; narrow"
                          " [tool.lite_guard] exclude")
        files = kept
    return _once_each(files), errors


def _once_each(files: list[Path]) -> list[Path]:
    """Each file once, under the first name it was given: ``. $PWD``, ``a.py ../tree/a.py``
    name one file twice, whose every finding was reported twice (and counted twice). Names
    are compared as absolute normalised paths, links not followed: two links are two modules."""
    seen: dict[str, Path] = {}
    for path in files:
        try:
            key = os.path.normpath(os.path.abspath(path))
        except (OSError, ValueError):  # a deleted working directory, a NUL: the name as given
            key = os.fspath(path)
        seen.setdefault(key, path)
    return list(seen.values())


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # a name too long for the file system: discover reports it
        return False


def _walk(top: Path, errors: list[str]) -> list[Path]:
    """The ``.py`` files under ``top`` in ``os.walk``'s order (top-down, sorted, symlinked
    directories listed but not entered), without its recursion: a tree 3,000 directories deep
    raised RecursionError there."""
    files: list[Path] = []
    stack = [os.fspath(top)]
    while stack:
        root = stack.pop()
        try:
            with os.scandir(root) as scan:
                entries = list(scan)
        except OSError as exc:
            errors.append(f"{exc.filename or root}: cannot read directory: {exc.strerror or exc}"
                          f"{_too_long(exc)}")
            continue
        dirs, names = [], []
        for entry in entries:
            try:
                is_dir = entry.is_dir()  # follows a symlink, as os.walk classifies
            except OSError:
                is_dir = False
            (dirs if is_dir else names).append(entry)
        files += [Path(root) / n for n in sorted(e.name for e in names) if n.endswith(".py")]
        entered = sorted((e for e in dirs if e.name != "__pycache__" and not e.name.startswith(".")),
                         key=lambda e: e.name)
        stack += [e.path for e in reversed(entered) if not e.is_symlink()]
    return files


class _Exclusion:
    """Is a file excluded: does a pattern match it (``Path.match``) or name one of its folders or
    itself (``build/``)? Asking ``Path.match`` for every file and pattern parsed the pattern at
    every call (20,000 files against 32 patterns took 5 s, 5,000 against 1,000 took 40 s). So
    the patterns are read once; a pattern without wildcards is a set lookup of the file's
    trailing parts; a folder's verdicts are reached once per folder; and a file's name is
    matched once against the name parts of the wildcard patterns its folder leaves open."""

    def __init__(self, patterns: tuple[str, ...]) -> None:
        import fnmatch
        from pathlib import PurePosixPath

        self.names: set[str] = set()  # patterns as written: a file's path ends with one
        self.folders: list[str] = []  # "/pattern/": a file under such a folder is excluded
        # Wildcard patterns: their parts as regular expressions, last first (up to a "**"); an
        # absolute one's first parts (up to a "**"); and whether matching the parts from the
        # right is the whole of Path.match (a relative pattern without "**").
        self.wild: list[tuple[str, list[str], list[str] | None, bool]] = []
        self._by_folder: dict[str, tuple[bool, object, list]] = {}
        for pattern in dict.fromkeys(p.rstrip("/") for p in patterns):
            parts = PurePosixPath(pattern).parts
            self.names.add(pattern)
            self.folders.append(f"/{pattern}/")
            if not parts:  # "", ".": Path.match raises ValueError, as it always did
                PurePosixPath("x.py").match(pattern)
            if str(PurePosixPath(pattern)) == pattern and not any(c in pattern for c in "*?["):
                continue  # Path.match of a plain path is "the file's path ends with it": names
            tail, head = [], None
            for part in reversed(parts):
                if "**" in part or part == "/":
                    break
                tail.append(fnmatch.translate(part))
            if parts[0] == "/":
                head = []
                for part in parts[1:]:
                    if "**" in part:
                        break
                    head.append(fnmatch.translate(part))
            self.wild.append((pattern, tail, head, len(tail) == len(parts)))

    def _folder(self, folder: str, parts: tuple[str, ...]) -> tuple[bool, object, list]:
        """For the files of one folder: are they all excluded; the one expression a file's
        name matches when a pattern excludes it; the patterns ``Path.match`` must decide."""
        if any(inner in f"/{folder}" for inner in self.folders):
            return True, None, []
        above = parts[::-1]
        exact, asked = [], []
        for pattern, tail, head, whole in self.wild:
            if head is not None and (parts[:1] != ("/",) or not all(
                    re.match(h, part) for h, part in zip(head, parts[1:]))):
                continue  # an absolute pattern: the file's first folders must match its first parts
            if len(tail) <= len(above) + 1 and all(re.match(t, part) for t, part in zip(tail[1:], above)):
                if whole:
                    exact.append(tail[0])
                else:
                    asked.append((pattern, re.compile(tail[0]).match if tail else None))
        return False, re.compile("|".join(exact)).match if exact else None, asked

    def __call__(self, path: Path) -> bool:
        text, name = path.as_posix(), path.name
        folder = text[:len(text) - len(name)]  # "" or ending with "/"
        if folder not in self._by_folder:
            self._by_folder[folder] = self._folder(folder, path.parts[:-1])
        excluded, exact, asked = self._by_folder[folder]
        if excluded or text in self.names or (exact is not None and exact(name)):
            return True
        at = text.find("/")
        while at != -1:
            if text[at + 1:] in self.names:
                return True
            at = text.find("/", at + 1)
        return any((last is None or last(name)) and path.match(pattern) for pattern, last in asked)


def torch_version_of(path: Path) -> str | None:
    """The version of the torch tree a file belongs to: ``torch/version.py``, else the checkout's
    ``version.txt`` (lint_rules.versions)."""
    return _version_of_directory(os.path.dirname(os.fspath(path)))


@functools.lru_cache(maxsize=4096)
def _version_of_directory(directory: str) -> str | None:
    # The answer depends only on the directories above a file: one lookup per directory, not
    # per file (a warm run over a large tree spent a third of its time here).
    return versions.torch_version_of(Path(directory or ".") / "__init__.py")


_VERSIONS: dict[Path, str | None] = {}


def _read_version(version_file: Path) -> str | None:
    if version_file not in _VERSIONS:
        try:
            # A linted tree's version.py is as untrusted as its sources: a FIFO must not hang us.
            text = isolation.read_regular(version_file, 1 << 20).decode("utf-8", "replace")
            match = _VERSION.search(text)
        except isolation.Unreadable:
            match = None
        # 'banana' (a local build, a planted torch/) is no version, not a traceback later
        _VERSIONS[version_file] = versions.valid_version(match.group(1)) if match else None
    return _VERSIONS[version_file]


def ruleset_hash() -> str:
    """Hash of the engine's and every rule's source: a rule change invalidates the cache."""
    digest = hashlib.sha256(__version__.encode())
    for path in sorted([*_RULES_DIR.glob("*.py"), *(_RULES_DIR / "rules").glob("*.py")]):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


@_quiet_parsing
def lint_paths(paths: list[Path], registry: Registry, *, jobs: int | None = None,
               cache: Cache | None = None, exclude: tuple[str, ...] = (),
               tree_rules: bool | None = None,
               limits: isolation.Limits = isolation.DEFAULT_LIMITS,
               torch_version: str | None = None, check_syntax: bool = False) -> LintReport:
    """Lint files and trees. The tree-level rule (LG003) runs when every path is a directory.
    ``check_syntax``: also give files the prefilter skips to CPython's parser, so a syntax
    error anywhere is an LG900 (as with the prefilter off; most of a cold run's CPU).

    A run the cache has seen with no file changed since is answered from its record; otherwise
    unchanged files' results come from the cache, files the prefilter proves irrelevant are not
    parsed (``lint_rules.prefilter``), and the rest are analysed in isolated workers."""
    report = LintReport()
    isolation.use_limits(limits)  # also for modules the index reads outside the linted paths
    files, report.errors = discover(paths, exclude)
    report.files = len(files)
    if tree_rules is None:
        tree_rules = bool(paths) and all(_is_dir(p) for p in paths)
    salt = "\0".join((__version__, registry.content_hash(), ruleset_hash(), str(SUMMARY_VERSION)))
    use_prefilter = prefilter.enabled()
    run_key = _run_key(salt, paths, exclude, tree_rules, limits, torch_version,
                       f"{use_prefilter}/{check_syntax}")
    record = cache.load_run(run_key) if cache is not None and not report.errors else None
    if record is not None:
        findings = _unchanged_findings(record, files, salt, torch_version)
        if findings is not None:  # nothing changed since that run: its findings are the answer
            report.findings, report.cached = findings, len(files)
            if _settle(record):
                cache.save_record(run_key, record)  # its times can be trusted from now on
            else:
                cache.touch(run_key, record["pack"])  # used: the last to be pruned
            return report
    pack = (cache.load_pack(record["pack"]) if record is not None else None) \
        or {"files": {}, "externals": []}
    _recall_externals(pack["externals"], record["externals"] if record is not None else [])

    started = time.time_ns()
    entries = [_read(path, salt, limits, torch_version, pack["files"]) for path in files]
    _name_checkouts(entries, salt, pack["files"])
    tree_version = _tree_version(files, torch_version)
    run = _Rounds(entries, registry, prefilter.Prefilter(registry, plan_for(registry))
                  if use_prefilter else None, jobs, limits, check_syntax, tree_version)
    found, names = run.index_findings()
    report.cached = sum(entry.cached for entry in entries)
    report.parsed = sum(entry.result.parsed for entry in entries)
    report.read = sum(entry.data is not None for entry in entries)
    report.skipped = sum(entry.lintable and not entry.parsed for entry in entries)

    for entry in entries:
        report.findings += entry.result.findings
        report.facts[str(entry.path)] = entry.result.facts
    report.findings += found
    if tree_rules:
        report.findings += tree_findings(registry, [e.result.facts for e in entries],
                                         [p.as_posix() for p in files], tree_version, names,
                                         skipped=run.skipped())
    report.findings.sort(key=lambda f: (f.path, f.line, f.col, f.code))
    if cache is not None and not report.errors:
        _remember(cache, run_key, record, entries, report.findings, tree_version, started)
    return report


# ---- one run, in rounds ----------------------------------------------------------------------

@dataclass
class _Entry:
    """One linted file in this run."""

    path: Path
    key: str = ""
    version: str | None = None
    module: str = ""
    stat: os.stat_result | None = None
    data: bytes | None = None  # None: not readable (its result says why)
    result: FileResult | None = None  # with a summary once parsed; facts only while skipped
    seeded: bool = False
    cached: bool = False
    scan: "prefilter.Scan | None" = None

    @property
    def parsed(self) -> bool:
        return self.result is not None and self.result.summary is not None

    @property
    def lintable(self) -> bool:
        """Readable and not an LG900: it stands in the index (parsed, or as a stub)."""
        return self.data is not None and (self.result is None or not any(
            f.code == UNCHECKABLE for f in self.result.findings))


def _read(path: Path, salt: str, limits: isolation.Limits, torch_version: str | None,
          pack: dict) -> _Entry:
    entry = _Entry(path)
    try:
        entry.stat = os.stat(path)  # before the read: a later edit shows as a changed stat
    except OSError:
        pass
    try:
        entry.data = isolation.read_regular(path, limits.max_bytes)  # FIFOs and devices refused
    except isolation.Unreadable as exc:
        entry.result = isolation.uncheckable(str(path), str(exc))
        return entry
    entry.version = torch_version_of(path) or torch_version  # --torch-version: when the tree cannot say
    entry.module = module_name(path, on_disk=True)  # by the __init__.py files around it: in the key
    entry.key = _content_key(salt, path, entry.version, entry.module, entry.data)
    stored = pack.get(entry.key)
    if stored is not None:
        entry.result, entry.seeded, entry.cached = FileResult.from_dict(stored["result"]), \
            stored["seeded"], True
    return entry


def _name_checkouts(entries: list[_Entry], salt: str, pack: dict) -> None:
    """A checkout that is its package by installation (``checkout_packages``): its files take
    the name their own imports give them, in the cache key too."""
    packages = checkout_packages((str(e.path), e.module, e.data) for e in entries)
    for entry in entries if packages else ():
        module = checkout_module(str(entry.path), entry.module, packages)
        if module != entry.module and entry.data is not None:
            entry.module = module
            entry.key = _content_key(salt, entry.path, entry.version, module, entry.data)
            stored = pack.get(entry.key)
            entry.result, entry.seeded, entry.cached = (
                FileResult.from_dict(stored["result"]), stored["seeded"], True) \
                if stored is not None else (None, False, False)


_MAX_ROUNDS = 12  # prefilter rounds before the rest is parsed whole (torch's tree needs 5)


class _Rounds:
    """Parse what the prefilter says may matter, build the index, and widen the parsed set by
    closure and demand until the index asks nothing more (lint_rules.prefilter)."""

    def __init__(self, entries: list[_Entry], registry: Registry,
                 prefilter_: "prefilter.Prefilter | None", jobs: int | None,
                 limits: isolation.Limits, check_syntax: bool = False,
                 torch_version: str | None = None) -> None:
        self.entries, self.registry, self.prefilter = entries, registry, prefilter_
        self.torch_version = torch_version  # the tree's: which entries are in range
        self.jobs, self.limits = jobs, limits
        self.triggers: frozenset[bytes] = prefilter_.seeds if prefilter_ else frozenset()
        self.bindings: dict[int, list[tuple[set[bytes], set[bytes]]]] = {}
        self.demand = prefilter.Demand()  # stubs the index asked about, over every round
        self.stubs: dict[int, dict] = {}
        if prefilter_ is None:
            self.wanted = {n for n, e in enumerate(entries) if e.data is not None}
            return
        # Which new files must be parsed whatever the tree holds: seeded (a few byte searches,
        # done here), or, with check_syntax, refused by CPython's parser (in workers, many
        # files a task; a batch that fails is parsed file by file).
        fresh = [n for n, e in enumerate(entries) if e.data is not None and e.result is None]

        def must_parse(batch: list[int]) -> list[bool]:
            # Workers are forked after every file was read: they find the bytes in memory,
            # so only the numbers travel.
            return [prefilter_.must_parse(str(entries[n].path), entries[n].module, entries[n].data,
                                          check_syntax) for n in batch]

        answers = isolation.run_batched(fresh, must_parse, jobs=jobs, limits=limits) \
            if check_syntax else must_parse(fresh)
        for number, answer in zip(fresh, answers):
            entries[number].seeded = answer is not False
        self.wanted = {n for n, e in enumerate(entries) if e.data is not None
                       and (e.seeded or e.parsed)}

    def index_findings(self) -> tuple[list[Finding], set[str]]:
        rounds = 0
        while True:
            rounds += 1
            if rounds > _MAX_ROUNDS and self.prefilter is not None:
                # Names chained through more files than real code chains them (hostile input
                # costs one round per link: 600 files, 18 s): parse every file, as with the
                # prefilter off, and the next round is the last.
                self.wanted |= {n for n, e in enumerate(self.entries) if e.lintable}
            self._parse_wanted()
            if self.prefilter is not None and self._close():
                continue  # new trigger words: parse the files that hold them first
            summaries = []
            for number, entry in enumerate(self.entries):
                if entry.parsed:
                    summaries.append((str(entry.path), entry.result.summary))
                elif entry.lintable:
                    summaries.append((str(entry.path), self._stub(number, entry)))
            found, names = index_findings(self.registry, summaries, self.torch_version)
            asked = self.demand.files - self.wanted
            if not asked:
                self._skip_rest()
                return found, names
            self.wanted |= asked

    def _stub(self, number: int, entry: _Entry) -> dict:
        if number not in self.stubs:
            self.stubs[number] = prefilter.stub_summary(
                number, entry.module, entry.path.name == "__init__.py", self._scan(entry),
                self.demand)
        return self.stubs[number]

    def skipped(self) -> list["prefilter.Scan"]:
        """The files left unparsed (LG003 looks into them only for names it asks about)."""
        return [self._scan(e) for e in self.entries if e.lintable and not e.parsed]

    def _scan(self, entry: _Entry) -> "prefilter.Scan":
        if entry.scan is None:
            entry.scan = prefilter.Scan(entry.data)
        return entry.scan

    def _parse_wanted(self) -> None:
        pending = [e for n, e in enumerate(self.entries) if n in self.wanted and not e.parsed
                   and (e.result is None or e.lintable)]
        results = _run([(e.path, e.data, e.version) for e in pending], self.registry, self.jobs,
                       self.limits, {str(e.path): e.module for e in pending})
        for entry, result in zip(pending, results):
            entry.result, entry.cached = result, False

    def _close(self) -> bool:
        """Grow the trigger words by the names parsed files bind to them; True when that makes
        more files wanted."""
        grown = set(self.triggers) | {prefilter.CALLABLE}
        # A worklist, not passes until nothing changes: a chain of 5,000 classes in one file
        # (hostile input) took one pass per link, 25 million set tests.
        users: dict[bytes, list[set[bytes]]] = {}  # a word -> the names bound to it
        queue: list[bytes] = []

        def grow(names: set[bytes]) -> None:
            for name in names - grown:
                grown.add(name)
                queue.append(name)

        pending = [number for number, entry in enumerate(self.entries) if entry.parsed]
        while True:
            still = []
            for number in pending:
                entry = self.entries[number]
                # Only a file that holds a trigger word can bind a name to one (a class that
                # defines __call__ is one by itself, and so is one rewriting an FX graph).
                scan = self._scan(entry)
                if scan.holds(grown) or scan.holds((b"__call__",)) or (
                        self.prefilter.mutator_words is not None
                        and scan.holds(self.prefilter.mutator_words)):
                    for names, mentions in self._bindings(number, entry):
                        if not mentions.isdisjoint(grown):
                            grow(names)
                        else:
                            for word in mentions:
                                users.setdefault(word, []).append(names)
                else:
                    still.append(number)
            pending = still
            if not queue:
                break
            while queue:
                for names in users.pop(queue.pop(), ()):
                    grow(names)
        grown.discard(prefilter.CALLABLE)
        added = frozenset(grown) - self.triggers
        self.triggers = frozenset(grown)
        if not added:
            return False
        more = {n for n, e in enumerate(self.entries) if n not in self.wanted and e.lintable
                and self._scan(e).holds(added)}
        self.wanted |= more
        return bool(more)

    def _bindings(self, number: int, entry: _Entry) -> list[tuple[set[bytes], set[bytes]]]:
        if number not in self.bindings:
            self.bindings[number] = prefilter.bindings(entry.result.summary)
        return self.bindings[number]

    def _skip_rest(self) -> None:
        """Files left unparsed: linted by what needs no parse (their byte-level facts)."""
        for entry in self.entries:
            if entry.result is None and entry.data is not None:
                entry.result = FileResult([], self.prefilter.facts(str(entry.path), self._scan(entry)))


def _run_key(salt: str, paths: list[Path], exclude: tuple[str, ...], tree_rules: bool,
             limits: isolation.Limits, torch_version: str | None, how: str) -> str:
    """What a run's answer depends on besides its files: tool, registry, rules, options, the
    Python that parses and the torch installed (the index reads its base classes)."""
    parts = [salt, sys.version, repr([os.path.abspath(p) for p in paths]), repr(exclude),
             repr(tree_rules), str(limits.max_bytes), str(torch_version),
             str(installed_torch_version()), how]
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()


def _racy(st: os.stat_result, started: int) -> bool:
    """Changed so close to the run that a later edit could keep the same times: hashed next
    time instead of trusting its stat (git's "racily clean" rule)."""
    return max(st.st_mtime_ns, st.st_ctime_ns) >= started - 2_000_000_000


def _unchanged_findings(record: dict, files: list[Path], salt: str, torch_version: str | None
                        ) -> list[Finding] | None:
    """The record's findings if no input changed since it was written, else None."""
    inputs = record["inputs"]
    if not record["complete"] or len(inputs) != len(files):
        return None
    for path, row in zip(files, inputs):
        name, size, mtime, ctime, inode, device, key, racy, version, module = row
        if name != str(path):
            return None
        try:
            st = os.stat(path)
        except OSError:
            return None
        if (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev) != \
                (size, mtime, ctime, inode, device):
            return None
        # The key also holds the file's torch version and module name, which files outside
        # the tree decide (version.txt, a parent's __init__.py): looked up again, per directory.
        if (torch_version_of(path) or torch_version) != version \
                or module_name(path, on_disk=True) != module:
            return None
        if racy:
            try:
                data = isolation.read_regular(path)
            except isolation.Unreadable:
                return None
            if _content_key(salt, path, version, module, data) != key:
                return None
    if _changed_externals(record["externals"]):
        return None
    if _tree_version(files, torch_version) != record["tree_version"]:
        return None
    return [Finding.from_dict(f) for f in record["findings"]]


def _settle(record: dict) -> bool:
    """Clear the racy mark of rows whose times are now old enough to trust; True if any was."""
    now, settled = time.time_ns(), False
    for row in record["inputs"]:
        if row[7] and max(row[2], row[3]) < now - 2_000_000_000:
            row[7], settled = False, True
    return settled


def _content_key(salt: str, path: Path, version: str | None, module: str, data: bytes) -> str:
    return hashlib.sha256(f"{salt}\0{path}\0{version}\0{module}\0".encode(
        "utf-8", "surrogateescape") + data).hexdigest()


def _remember(cache: Cache, run_key: str, record: dict | None, entries: list[_Entry],
              findings: list[Finding], tree_version: str | None, started: int) -> None:
    """Write this run's record and pack. A run with an LG900 is never answered from its record
    (an LG900 may depend on load or limits), and LG900 results are never kept."""
    complete = not any(f.code == UNCHECKABLE for f in findings)
    inputs = []
    for entry in entries:
        st = entry.stat
        if st is None or not entry.lintable:
            complete = False
            continue
        inputs.append([str(entry.path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino,
                       st.st_dev, entry.key, _racy(st, started), entry.version, entry.module])
    externals = []
    for path, mtime in external_sources():
        try:
            st = os.stat(path)
        except OSError:
            complete = False
            continue
        complete = complete and st.st_mtime_ns == mtime
        externals.append([path, st.st_size, st.st_mtime_ns, st.st_ctime_ns])
    pack = {"files": {entry.key: {"result": entry.result.to_dict(), "seeded": entry.seeded}
                      for entry in entries if entry.lintable},
            "externals": _external_summaries()}
    cache.save_run(run_key, {"started_ns": started, "inputs": inputs, "externals": externals,
                             "tree_version": tree_version, "complete": complete,
                             "findings": [f.to_dict() for f in findings],
                             "_previous_pack": record["pack"] if record else None}, pack)


def _external_summaries() -> list[list]:
    """The summaries the index made of modules outside the linted paths (siblings of the
    linted packages, installed base modules): kept in the pack, so a run after an edit does
    not parse them again. Keyed as the index keys them, by mtime among the rest."""
    from lint_rules import index

    return [[list(key), summary] for key, summary in getattr(index, "_EXTERNAL", {}).items()
            if len(key) == 6]


def _changed_externals(rows: list[list]) -> set[str]:
    """The modules read from outside the linted paths that changed since the record's run.
    Their ctime too: an edit that keeps the size and sets the mtime back (os.utime, touch -d)
    cannot set the ctime back, so a pass its summary hid is never answered from the cache."""
    changed = set()
    for path, size, mtime, ctime in rows:
        try:
            st = os.stat(path)
        except OSError:
            changed.add(path)
            continue
        if (st.st_size, st.st_mtime_ns, st.st_ctime_ns) != (size, mtime, ctime):
            changed.add(path)
    return changed


def _recall_externals(externals: list[list], rows: list[list]) -> None:
    """The pack's summaries of modules outside the linted paths, for those the record vouches
    are unchanged (``rows``: path, size, mtime, ctime); the others are read again."""
    from lint_rules import index

    known = getattr(index, "_EXTERNAL", None)
    if known is None:
        return
    unchanged = {row[0] for row in rows} - _changed_externals(rows)
    for key, summary in externals:
        if key[0] in unchanged:
            known.setdefault(tuple(key), summary)


def external_sources() -> list[tuple[str, int]]:
    """Installed source files the index read (the registry's base classes), with the mtime
    they had: a run that read them depends on them."""
    from lint_rules import index

    return sorted({(key[0], key[1]) for key in getattr(index, "_EXTERNAL", {})})


def _run(pending, registry: Registry, jobs: int | None,
         limits: isolation.Limits = isolation.DEFAULT_LIMITS,
         modules: dict[str, str] | None = None) -> list[FileResult]:
    """Each file in a worker under ``limits``: a crash, a hang or a recursion is one LG900.
    ``modules``: path -> module name, where the run named it (``_name_checkouts``)."""
    plan = plan_for(registry)  # built here, inherited by every worker
    heavy = any(plan.file_rules_for(str(path), data) for path, data, _ in pending)
    return isolation.run_isolated(
        [(str(path), data, version) for path, data, version in pending],
        lambda path, data, version: analyze(path, data, registry, version,
                                            module=(modules or {}).get(path)),
        jobs=jobs, limits=limits, preload=_import_libcst if heavy else None)


def _import_libcst() -> None:
    import libcst  # noqa: F401  (imported once in the parent, inherited by every worker)


def _tree_version(files: list[Path], given: str | None = None) -> str | None:
    """The torch version the tree is: its own if it is a torch tree (else ``given``, else
    unknown: None, so no ranged entry is judged), else ``given`` or the installed one."""
    for path in files:
        if path.name == "config.py" and config_module_of(path) == "inductor":  # name: cheap first
            return torch_version_of(path) or given
    return given or installed_torch_version()


def installed_torch_version() -> str | None:
    import importlib.util

    spec = importlib.util.find_spec("torch")  # finds, never imports
    if spec is None or not spec.submodule_search_locations:
        return None
    return _read_version(Path(list(spec.submodule_search_locations)[0]) / "version.py")


def tree_findings(registry: Registry, facts: list[FileFacts], files: list[str],
                  torch_version: str | None, names: set[str] = frozenset(),
                  skipped: list["prefilter.Scan"] = ()) -> list[Finding]:
    """The tree rules over every file's facts; ``names``: the passes the index rules found;
    ``skipped``: files not parsed, whose def/class names and string literals are looked for
    only when a rule asks about a name they hold (``prefilter.LazyNames``)."""
    from lint_rules.findings import name_strings
    from lint_rules.rules.lg003_stale_entry import TreeFacts

    tree = TreeFacts(files=files, torch_version=torch_version)
    tree.passes.update(n for n in names if "*" not in n)
    tree.globs.update(n for n in names if "*" in n)
    for fact in facts:
        tree.passes.update(fact.passes)
        tree.passes.update(fact.strings)
        for spellings in fact.alternatives:
            tree.passes.update(spellings)
        tree.configs.update(fact.configs)
        tree.symbols.update(fact.symbols)
        tree.globs.update(fact.globs)
        tree.config_modules.update(fact.config_modules)
    if skipped:
        wanted = plan_for(registry).names
        tree.symbols = prefilter.LazyNames(tree.symbols, skipped, lambda scan: symbols(scan.data),
                                           lambda scan, name: name.isidentifier())
        tree.passes = prefilter.LazyNames(tree.passes, skipped,
                                          lambda scan: name_strings(scan.data, wanted),
                                          prefilter.string_could_be)
    findings = [f for rule in plan_for(registry).tree_rules for f in rule.check_tree(registry, tree)]
    by_file: dict[str, list[str]] = {}
    kept = []
    for finding in findings:
        if finding.path not in by_file:
            try:
                by_file[finding.path] = source_lines(isolation.read_regular(finding.path).decode(
                    "utf-8", "replace"))
            except isolation.Unreadable:
                by_file[finding.path] = []
        kept += suppress([finding], by_file[finding.path])
    return kept
