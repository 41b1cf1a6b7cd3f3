"""Which code each BENCHMARKS.md section measured, and whether that code changed since.

Every ``## Section`` of BENCHMARKS.md carries at least one provenance line, written by
``markdown_section.replace_section`` when a bench script rewrites it::

    Measured: `.venv/bin/python bench/fuzz_throughput.py --write` at commit `932db3b` (...)

The section's *owner* is the bench script that writes it (its module-level ``SECTION``, or the
title it hands ``replace_section``). The code a section exercises is derived, not kept by hand:
the owner script itself, every repository file its imports reach (bench helpers, tests/ and
examples/ modules, followed transitively), the first-party packages those imports land in, plus
what the script declares in a module-level ``MEASURES`` tuple for code it reaches without importing
it (a ``lite_guard check`` subprocess, a data file of labels, a shell driver). A section is stale
when ``git log <commit>..HEAD -- <those paths>`` is not empty, when its commit is not in this
repository, or when it was measured on uncommitted edits.

Nothing here imports a bench script (they import torch): scripts are read with ``ast``.
"""

from __future__ import annotations

import ast
import re
import subprocess
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("lite_guard", "lint_rules", "lite_compiler")  # first-party: measured whole
# Where the bench scripts' plain imports resolve (they put these on sys.path).
IMPORT_ROOTS = (".", "bench", "tests", "examples")
# Sections that need the GPU machine: run_all reruns CPU sections only.
GPU_TITLE = re.compile(r"GPU|H200|CUDA|NCCL")

MEASURED = re.compile(r"^Measured: `(?P<command>[^`]+)` at commit `(?P<commit>[0-9a-f]{7,40})`"
                      r"(?P<note>.*)$", re.M)


@dataclass
class Section:
    title: str
    body: str
    runs: list[re.Match] = field(default_factory=list)  # its Measured: lines

    @property
    def gpu(self) -> bool:
        return bool(GPU_TITLE.search(self.title))


def sections(text: str) -> list[Section]:
    """The ``## `` sections of a BENCHMARKS.md text, in order (``###`` belong to their parent)."""
    parts = re.split(r"^## (.+)\n", text, flags=re.M)
    found = []
    for title, body in zip(parts[1::2], parts[2::2]):
        found.append(Section(title.strip(), body, list(MEASURED.finditer(body))))
    return found


# ---- owners and the code they exercise --------------------------------------------------------

@dataclass
class Script:
    path: Path
    sections: list[str]
    declared: tuple[str, ...]  # MEASURES
    writes: bool  # has a --write option (run_all runs it)

    @property
    def gpu(self) -> bool:
        return self.path.name.startswith("gpu_")


def _literal(tree: ast.Module, name: str):
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) and node.value else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            try:
                return ast.literal_eval(node.value)
            except ValueError:
                return None
    return None


@lru_cache(maxsize=None)
def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def read_script(path: Path) -> Script:
    tree = _parse(path)
    titles = []
    section = _literal(tree, "SECTION")
    if isinstance(section, str):
        titles.append(section)
    for node in ast.walk(tree):  # replace_section(path, "Title", ...) with a literal title
        if (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", ""))
                == "replace_section" and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
            titles.append(node.args[1].value)
    declared = _literal(tree, "MEASURES") or ()
    text = path.read_text(encoding="utf-8")
    return Script(path, sorted(set(titles)), tuple(declared), '"--write"' in text)


def scripts(repo: Path = REPO) -> list[Script]:
    return [read_script(p) for p in sorted((repo / "bench").glob("*.py"))
            if not p.name.startswith("_")]


def owner(title: str, repo: Path = REPO) -> Script | None:
    return next((s for s in scripts(repo) if title in s.sections), None)


def _resolve(module: str, repo: Path) -> Path | None:
    """The repository file an import of ``module`` loads, if it is one of ours."""
    parts = module.split(".")
    if parts[0] in PACKAGES:
        return repo / parts[0]
    for root in IMPORT_ROOTS:
        base = (repo / root).joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(_parse(path)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


@lru_cache(maxsize=None)
def _command_entry_points(repo: Path) -> dict[str, str]:
    """``lite_guard`` subcommand -> its entry point (pyproject.toml; none without one)."""
    pyproject = repo / "pyproject.toml"
    if not pyproject.is_file():
        return {}
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    return dict(project.get("entry-points", {}).get("lite_guard.commands", {}))


def cli_commands(repo: Path = REPO) -> dict[str, str]:
    """``lite_guard`` subcommand -> the first-party package that implements it."""
    return {name: target.split(".", 1)[0].split(":", 1)[0]
            for name, target in _command_entry_points(repo).items()}


def cli_command_files(repo: Path = REPO) -> dict[str, str]:
    """``lite_guard`` subcommand -> the module file its entry point names (the CLI layer of that
    command: its arguments and its output), relative to the repository."""
    return {name: target.split(":", 1)[0].replace(".", "/") + ".py"
            for name, target in _command_entry_points(repo).items()}


def _cli_commands_run(path: Path, repo: Path) -> set[str]:
    """The ``lite_guard <command>`` subprocesses a script runs: any list literal that spells
    ``lite_guard`` and a subcommand (``[sys.executable, "-m", "lite_guard", "check"]``,
    ``[str(ROOT / ".venv" / "bin" / "lite_guard"), "fuzz", ...]``)."""
    commands = set()
    for node in ast.walk(_parse(path)):
        if isinstance(node, (ast.List, ast.Tuple)):
            words = {n.value for n in ast.walk(node)
                     if isinstance(n, ast.Constant) and isinstance(n.value, str)}
            if any(w == "lite_guard" or w.endswith("/lite_guard") for w in words):
                commands.update(cmd for cmd in cli_commands(repo) if cmd in words)
    return commands


# Writes the provenance line, never what is measured: a change to it leaves sections fresh.
NOT_MEASURED = {"bench/markdown_section.py", "bench/provenance.py"}


def exercised(script: Script, repo: Path = REPO) -> list[str]:
    """Repository paths (relative) whose change can change what ``script`` measures."""
    seen: set[Path] = set()
    run: set[str] = set()  # the lite_guard subcommands it runs
    todo = [script.path]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        if path.is_file() and path.suffix == ".py":
            commands = _cli_commands_run(path, repo)
            run |= commands
            todo.extend(repo / cli_commands(repo)[cmd] for cmd in commands)
            for module in _imports(path):
                target = _resolve(module, repo)
                if target is not None and target not in seen:
                    todo.append(target)
    paths = ({str(p.relative_to(repo)) for p in seen} | set(script.declared)) - NOT_MEASURED
    # a file inside a first-party package is covered by the package
    measured = sorted(p for p in paths if not any(p.startswith(f"{pkg}/") for pkg in PACKAGES))
    # ... except the CLI module of a subcommand it never runs (only that command's arguments and
    # output live there): `lite_guard registry`'s table does not change a compile benchmark.
    return measured + sorted(
        f":(exclude){file}" for cmd, file in cli_command_files(repo).items()
        if cmd not in run and file.split("/", 1)[0] in measured and file not in script.declared)


# ---- staleness --------------------------------------------------------------------------------

def git(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], capture_output=True, text=True, cwd=cwd)


@dataclass
class Verdict:
    section: Section
    script: Script | None
    stale: bool
    why: str
    paths: list[str] = field(default_factory=list)


def verdict(section: Section, repo: Path = REPO) -> Verdict:
    script = owner(section.title, repo)
    if script is None:
        return Verdict(section, None, True, "no bench script writes this section (SECTION or"
                       " replace_section title); its numbers cannot be rerun")
    paths = exercised(script, repo)
    if not section.runs:
        return Verdict(section, script, True, "no 'Measured: `command` at commit `sha`' line", paths)
    reasons = []
    for run in section.runs:
        commit = run["commit"]
        if "uncommitted" in run["note"]:
            reasons.append(f"{commit} was measured with uncommitted edits")
            continue
        if git("cat-file", "-e", f"{commit}^{{commit}}", cwd=repo).returncode != 0:
            reasons.append(f"commit {commit} is not in this repository")
            continue
        later = git("log", "--format=%h %s", f"{commit}..HEAD", "--", *paths,
                    cwd=repo).stdout.splitlines()
        if later:
            reasons.append(f"{len(later)} later commit(s) (newest {later[0].split()[0]}) changed"
                           f" the code it measured since {commit}")
    if reasons:
        return Verdict(section, script, True, "; ".join(reasons) + f" ({', '.join(paths)})", paths)
    commits = ", ".join(sorted({r["commit"] for r in section.runs}))
    return Verdict(section, script, False, f"no commit since {commits} touches its code", paths)


def verdicts(repo: Path = REPO) -> list[Verdict]:
    return [verdict(s, repo) for s in sections((repo / "BENCHMARKS.md").read_text(encoding="utf-8"))]
