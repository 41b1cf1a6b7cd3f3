"""The lint engine: find files, skip what cannot hold a pass, parse the rest once, run every rule
in one batched visit, cache per file, then run the tree-level rule.

Knows nothing of flake8 or of the CLI; both are thin adapters over ``lint_paths``/``lint_source``.
libcst is imported only in ``lint_source``, so a fully cached run never loads it.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from lint_rules import inductor_names
from lint_rules.cache import Cache
from lint_rules.findings import FileFacts, FileResult, Finding
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


def lint_source(path: str, data: bytes, registry: Registry, torch_version: str | None = None,
                parse: bool | None = None) -> FileResult:
    """Lint one file's bytes: facts always, findings from every file rule if it needs a parse."""
    facts = FileFacts(symbols=inductor_names.symbols(data),
                      strings=inductor_names.name_strings(data, _registry_names(registry)))
    module = inductor_names.config_module_of(path)
    if module:
        facts.config_modules.append(module)
    try:
        source = decode(data)
    except (UnicodeDecodeError, LookupError) as exc:
        return FileResult([Finding(path, 1, 1, UNCHECKABLE, f"cannot decode file: {exc}")], facts)
    if parse is None:
        parse = inductor_names.needs_parse(path, data)
    if not parse:
        # No rule needs this file's tree, but a file that is not valid Python is still reported:
        # the stdlib parser is several times faster than libcst's, and the result is cached.
        try:
            ast.parse(source, filename=path)
        except SyntaxError as exc:
            message = f"cannot parse: {exc.msg}; the file was not checked"
            return FileResult([Finding(path, exc.lineno or 1, exc.offset or 1, UNCHECKABLE, message)],
                              facts)
        except (RecursionError, MemoryError, ValueError):
            return FileResult([Finding(path, 1, 1, UNCHECKABLE, "cannot parse: nested too deeply")],
                              facts)
        return FileResult([], facts)

    import libcst as cst

    from lint_rules.rule import FileContext
    from lint_rules.rules import FILE_RULES

    try:
        module_node = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        message = f"cannot parse: {exc.message}; the file was not checked"
        return FileResult([Finding(path, exc.raw_line, exc.raw_column + 1, UNCHECKABLE, message)],
                          facts, parsed=True)
    except RecursionError:
        return FileResult([Finding(path, 1, 1, UNCHECKABLE, "cannot parse: nested too deeply")],
                          facts, parsed=True)
    context = FileContext(path, source, registry, torch_version, config_module=module, facts=facts)
    cst.visit_batched(module_node, [rule(context) for rule in FILE_RULES])
    findings = suppress(context.resolve_findings(module_node), source.splitlines())
    return FileResult(findings, facts, parsed=True)


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


_NAMES_CACHE: dict[int, frozenset[str]] = {}


def _registry_names(registry: Registry) -> frozenset[str]:
    names = _NAMES_CACHE.get(id(registry))
    if names is None:
        names = frozenset(p.name for p in registry.passes)
        _NAMES_CACHE[id(registry)] = names
    return names


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
        elif path.is_file() or path.is_symlink():
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
    """The version of the torch tree a file belongs to, read from ``torch/version.py``."""
    for parent in path.resolve().parents:
        if parent.name == "torch":
            return _read_version(parent / "version.py")
    return None


_VERSIONS: dict[Path, str | None] = {}


def _read_version(version_file: Path) -> str | None:
    if version_file not in _VERSIONS:
        try:
            match = _VERSION.search(version_file.read_text(encoding="utf-8"))
        except OSError:
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


_WORKER_REGISTRY: Registry | None = None


def _init_worker(registry: Registry) -> None:
    global _WORKER_REGISTRY
    _WORKER_REGISTRY = registry


def _lint_in_worker(path: str, data: bytes, torch_version: str | None) -> FileResult:
    return lint_source(path, data, _WORKER_REGISTRY, torch_version)


def lint_paths(paths: list[Path], registry: Registry, *, jobs: int | None = None,
               cache: Cache | None = None, exclude: tuple[str, ...] = (),
               tree_rules: bool | None = None) -> LintReport:
    """Lint files and trees. The tree-level rule (LG003) runs when every path is a directory."""
    report = LintReport()
    files, report.errors = discover(paths, exclude)
    report.files = len(files)
    if tree_rules is None:
        tree_rules = bool(paths) and all(p.is_dir() for p in paths)
    salt = "\0".join((__version__, registry.content_hash(), ruleset_hash()))
    results: dict[Path, FileResult] = {}
    pending: list[tuple[Path, bytes, str | None, str]] = []
    for path in files:
        try:
            data = path.read_bytes()
        except OSError as exc:
            results[path] = FileResult([Finding(str(path), 1, 1, UNCHECKABLE,
                                                f"cannot read file: {exc.strerror or exc}")])
            continue
        version = torch_version_of(path)
        key = hashlib.sha256(f"{salt}\0{path}\0{version}\0".encode() + data).hexdigest()
        cached = cache.get(key) if cache else None
        if cached is not None:
            results[path] = cached
            report.cached += 1
        else:
            pending.append((path, data, version, key))

    for (path, _, _, key), result in zip(pending, _run(pending, registry, jobs)):
        results[path] = result
        report.parsed += result.parsed
        if cache:
            cache.put(key, result)

    for path in files:
        report.findings += results[path].findings
        report.facts[str(path)] = results[path].facts
    if tree_rules:
        report.findings += tree_findings(registry, [results[p].facts for p in files],
                                         [p.as_posix() for p in files], _tree_version(files))
    report.findings.sort(key=lambda f: (f.path, f.line, f.col, f.code))
    return report


def _run(pending, registry: Registry, jobs: int | None) -> list[FileResult]:
    jobs = jobs or len(os.sched_getaffinity(0))
    # Only files that need libcst are worth a worker; the rest are a regex away.
    heavy = [i for i, (path, data, _, _) in enumerate(pending)
             if inductor_names.needs_parse(path, data)]
    results: list[FileResult | None] = [None] * len(pending)
    if jobs > 1 and len(heavy) > 1:
        import multiprocessing

        # Biggest first, so no worker is left with one huge file at the end.
        heavy.sort(key=lambda i: -len(pending[i][1]))
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(min(jobs, len(heavy)), mp_context=context,
                                 initializer=_init_worker, initargs=(registry,)) as pool:
            futures = {i: pool.submit(_lint_in_worker, str(pending[i][0]), pending[i][1],
                                      pending[i][2]) for i in heavy}
            for i, (path, data, version, _) in enumerate(pending):
                if i not in futures:
                    results[i] = lint_source(str(path), data, registry, version, parse=False)
            for i, future in futures.items():
                results[i] = future.result()
    else:
        for i, (path, data, version, _) in enumerate(pending):
            results[i] = lint_source(str(path), data, registry, version)
    return results  # type: ignore[return-value]


def _tree_version(files: list[Path]) -> str | None:
    """The torch version the tree is: its own if it is a torch tree, else the installed one."""
    for path in files:
        if inductor_names.config_module_of(path) == "inductor":
            return torch_version_of(path)
    return installed_torch_version()


def installed_torch_version() -> str | None:
    import importlib.util

    spec = importlib.util.find_spec("torch")  # finds, never imports
    if spec is None or not spec.submodule_search_locations:
        return None
    return _read_version(Path(list(spec.submodule_search_locations)[0]) / "version.py")


def tree_findings(registry: Registry, facts: list[FileFacts], files: list[str],
                  torch_version: str | None) -> list[Finding]:
    from lint_rules.rules.lg003_stale_entry import StaleEntry, TreeFacts

    tree = TreeFacts(files=files, torch_version=torch_version)
    for fact in facts:
        tree.passes.update(fact.passes)
        tree.passes.update(fact.strings)
        for spellings in fact.alternatives:
            tree.passes.update(spellings)
        tree.configs.update(fact.configs)
        tree.symbols.update(fact.symbols)
        tree.globs.update(fact.globs)
        tree.config_modules.update(fact.config_modules)
    findings = StaleEntry.check_tree(registry, tree)
    by_file: dict[str, list[str]] = {}
    kept = []
    for finding in findings:
        if finding.path not in by_file:
            try:
                by_file[finding.path] = Path(finding.path).read_text(encoding="utf-8").splitlines()
            except OSError:
                by_file[finding.path] = []
        kept += suppress([finding], by_file[finding.path])
    return kept
