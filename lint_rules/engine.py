"""The lint engine: find files, summarize each one once (stdlib ``ast``: the whole-tree index
needs every file), run the libcst file rules only on the files their triggers select, cache all
of that per file by content, then run the index rules over the whole tree and the tree rules.

Knows nothing of flake8 or of the CLI; both are thin adapters over ``lint_paths``/``lint_source``.
libcst is imported only when a file rule needs a parse, so a fully cached run never loads it.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from lint_rules import isolation, versions
from lint_rules.cache import Cache
from lint_rules.findings import (FileFacts, FileResult, Finding, config_module_of, name_strings,
                                 symbols)
from lint_rules.index import SUMMARY_VERSION, Index, Vocabulary, module_name, summarize
from lite_guard import __version__
from lite_guard.registry import Registry

UNCHECKABLE = "LG900"  # a file the linter could not read, decode or parse
_RULES_DIR = Path(__file__).parent
_SUPPRESS = re.compile(r"#\s*lite-guard:\s*ignore(?:\[(?P<codes>[A-Z0-9,\s]+)\])?", re.I)
_NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.I)
_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_VERSION = re.compile(r"__version__\s*=\s*['\"]([^'\"]+)['\"]")


@dataclass
class LintReport:
    findings: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # usage problems (a path that does not exist)
    facts: dict[str, FileFacts] = field(default_factory=dict)  # what each file defines
    files: int = 0
    parsed: int = 0
    cached: int = 0


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

def decode(data: bytes) -> str:
    """Source text as Python reads it (PEP 263 coding cookie, else UTF-8); raises on bad bytes."""
    encoding = "utf-8"
    for line in data.splitlines()[:2]:
        match = _CODING.match(line)
        if match:
            encoding = match.group(1).decode("ascii")
            break
    if data.startswith(b"\xef\xbb\xbf"):
        data, encoding = data[3:], "utf-8"
    return data.decode(encoding)


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
    except (UnicodeDecodeError, LookupError) as exc:
        return FileResult([Finding(path, 1, 1, UNCHECKABLE, f"cannot decode file: {exc}")], facts)
    try:
        tree = ast.parse(source, filename=path)
        light = plan.index_triggers is None or plan.index_triggers.search(data) is None
        summary = summarize(source, module or module_name(path), Path(path).name == "__init__.py",
                            plan.vocab, tree, light=light, triggers=plan.index_triggers_text)
    except SyntaxError as exc:
        message = f"cannot parse: {exc.msg}; the file was not checked"
        return FileResult([Finding(path, exc.lineno or 1, exc.offset or 1, UNCHECKABLE, message)],
                          facts)
    except (RecursionError, MemoryError, ValueError):
        return FileResult([Finding(path, 1, 1, UNCHECKABLE, "cannot parse: nested too deeply")],
                          facts)
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
        message = f"cannot parse: {exc.message}; the file was not checked"
        return FileResult([Finding(path, exc.raw_line, exc.raw_column + 1, UNCHECKABLE, message)],
                          facts, parsed=True, summary=summary)
    except RecursionError:
        return FileResult([Finding(path, 1, 1, UNCHECKABLE, "cannot parse: nested too deeply")],
                          facts, parsed=True, summary=summary)
    context = FileContext(path, source, registry, torch_version, config_module=config_module,
                          facts=facts)
    cst.visit_batched(module_node, [rule(context) for rule in rules])
    findings = suppress(context.resolve_findings(module_node), source.splitlines())
    return FileResult(findings, facts, parsed=True, summary=summary)


def lint_source(path: str, data: bytes, registry: Registry, torch_version: str | None = None,
                parse: bool | None = None) -> FileResult:
    """Lint one file as a tree of its own: the file rules, then the index rules over an index of
    this one module (names it imports from elsewhere stay unresolved, and are reported when a
    pass depends on them). flake8 and the rule examples use this."""
    result = analyze(path, data, registry, torch_version, parse=parse)
    if result.summary is not None:
        findings, _ = index_findings(registry, [(path, result.summary)])
        result.findings = sorted(result.findings + findings)
    return result


def index_findings(registry: Registry, summaries: list[tuple[str, dict]]
                   ) -> tuple[list[Finding], set[str]]:
    """Run the index rules over the summaries of a tree; also the pass names they recognised."""
    plan = plan_for(registry)
    index = Index(summaries, plan.vocab)
    findings: list[Finding] = []
    names: set[str] = set()
    suppressions = {path: summary.get("suppress", {}) for path, summary in summaries}
    for rule in plan.index_rules:
        try:
            found, recognised = rule.check(index, registry)
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
    """Drop findings whose line says ``# lite-guard: ignore[CODE]`` or ``# noqa: CODE``."""
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

def discover(paths: list[Path], exclude: tuple[str, ...] = ()) -> tuple[list[Path], list[str]]:
    files: list[Path] = []
    errors: list[str] = []
    for path in paths:
        if path.is_dir():
            for root, dirs, names in os.walk(path, onerror=lambda e: errors.append(
                    f"{e.filename}: cannot read directory: {e.strerror}")):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
                files += [Path(root) / n for n in sorted(names) if n.endswith(".py")]
        elif path.exists() or path.is_symlink():  # a FIFO or device given by name: LG900 below
            files.append(path)
        else:
            errors.append(f"{path}: no such file or directory")
    if exclude:
        files = [f for f in files if not any(_excluded(f, pattern) for pattern in exclude)]
    return list(dict.fromkeys(files)), errors


def _excluded(path: Path, pattern: str) -> bool:
    text = path.as_posix()
    pattern = pattern.rstrip("/")
    return path.match(pattern) or f"/{pattern}/" in f"/{text}" or text.endswith(f"/{pattern}") \
        or text == pattern


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
        _VERSIONS[version_file] = match.group(1) if match else None
    return _VERSIONS[version_file]


def ruleset_hash() -> str:
    """Hash of the engine's and every rule's source: a rule change invalidates the cache."""
    digest = hashlib.sha256(__version__.encode())
    for path in sorted([*_RULES_DIR.glob("*.py"), *(_RULES_DIR / "rules").glob("*.py")]):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def lint_paths(paths: list[Path], registry: Registry, *, jobs: int | None = None,
               cache: Cache | None = None, exclude: tuple[str, ...] = (),
               tree_rules: bool | None = None,
               limits: isolation.Limits = isolation.DEFAULT_LIMITS,
               torch_version: str | None = None) -> LintReport:
    """Lint files and trees. The tree-level rule (LG003) runs when every path is a directory."""
    report = LintReport()
    files, report.errors = discover(paths, exclude)
    report.files = len(files)
    if tree_rules is None:
        tree_rules = bool(paths) and all(p.is_dir() for p in paths)
    salt = "\0".join((__version__, registry.content_hash(), ruleset_hash(), str(SUMMARY_VERSION)))
    results: dict[Path, FileResult] = {}
    pending: list[tuple[Path, bytes, str | None, str]] = []
    for path in files:
        try:
            data = isolation.read_regular(path, limits.max_bytes)  # FIFOs and devices are refused
        except isolation.Unreadable as exc:
            results[path] = isolation.uncheckable(str(path), str(exc))
            continue
        version = torch_version_of(path) or torch_version  # --torch-version: when the tree cannot say
        module = module_name(path, on_disk=True)  # by the __init__.py files around it: in the key
        key = hashlib.sha256(f"{salt}\0{path}\0{version}\0{module}\0".encode(
            "utf-8", "surrogateescape") + data).hexdigest()
        cached = cache.get(key) if cache else None
        if cached is not None:
            results[path] = cached
            report.cached += 1
        else:
            pending.append((path, data, version, key))

    for (path, _, _, key), result in zip(pending, _run(pending, registry, jobs, limits)):
        results[path] = result
        report.parsed += result.parsed
        if cache and not any(f.code == UNCHECKABLE for f in result.findings):
            cache.put(key, result)  # an LG900 may depend on load or limits: never cached

    for path in files:
        report.findings += results[path].findings
        report.facts[str(path)] = results[path].facts
    summaries = [(str(p), results[p].summary) for p in files if results[p].summary is not None]
    found, names = index_findings(registry, summaries)
    report.findings += found
    if tree_rules:
        report.findings += tree_findings(registry, [results[p].facts for p in files],
                                         [p.as_posix() for p in files],
                                         _tree_version(files, torch_version),
                                         names)
    report.findings.sort(key=lambda f: (f.path, f.line, f.col, f.code))
    return report


def _run(pending, registry: Registry, jobs: int | None,
         limits: isolation.Limits = isolation.DEFAULT_LIMITS) -> list[FileResult]:
    """Each file in a worker under ``limits``: a crash, a hang or a recursion is one LG900."""
    plan = plan_for(registry)  # built here, inherited by every worker
    heavy = any(plan.file_rules_for(str(path), data) for path, data, _, _ in pending)
    return isolation.run_isolated(
        [(str(path), data, version) for path, data, version, _ in pending],
        lambda path, data, version: analyze(path, data, registry, version),
        jobs=jobs, limits=limits, preload=_import_libcst if heavy else None)


def _import_libcst() -> None:
    import libcst  # noqa: F401  (imported once in the parent, inherited by every worker)


def _tree_version(files: list[Path], given: str | None = None) -> str | None:
    """The torch version the tree is: its own if it is a torch tree (else ``given``, else
    unknown: None, so no ranged entry is judged), else ``given`` or the installed one."""
    for path in files:
        if config_module_of(path) == "inductor":
            return torch_version_of(path) or given
    return given or installed_torch_version()


def installed_torch_version() -> str | None:
    import importlib.util

    spec = importlib.util.find_spec("torch")  # finds, never imports
    if spec is None or not spec.submodule_search_locations:
        return None
    return _read_version(Path(list(spec.submodule_search_locations)[0]) / "version.py")


def tree_findings(registry: Registry, facts: list[FileFacts], files: list[str],
                  torch_version: str | None, names: set[str] = frozenset()) -> list[Finding]:
    """The tree rules over every file's facts; ``names``: the passes the index rules found."""
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
    findings = [f for rule in plan_for(registry).tree_rules for f in rule.check_tree(registry, tree)]
    by_file: dict[str, list[str]] = {}
    kept = []
    for finding in findings:
        if finding.path not in by_file:
            try:
                by_file[finding.path] = isolation.read_regular(finding.path).decode(
                    "utf-8", "replace").splitlines()
            except isolation.Unreadable:
                by_file[finding.path] = []
        kept += suppress([finding], by_file[finding.path])
    return kept
