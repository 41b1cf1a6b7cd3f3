"""The layers of DESIGN.md, checked on the source: imports only go down, and no module circles.

    lite_guard (torch-free registry core + CLI shell)  <-  lint_rules, lite_compiler

Every ``import`` statement counts, at module level or inside a function (a lazy import is still
an import a reader has to follow). The graph is read from the AST, so nothing is imported.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path

import networkx
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("lite_guard", "lint_rules", "lite_compiler")
# Which package may import which (a package may always import itself).
ALLOWED = {
    "lite_guard": set(),
    "lint_rules": {"lite_guard"},
    "lite_compiler": {"lite_guard"},
}


@dataclass(frozen=True)
class Import:
    importer: str   # module doing the import
    imported: str   # module imported (one of ours)
    where: str      # path:line, for the failure message


def module_files() -> dict[str, Path]:
    """Every module of the three packages, by dotted name."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def imports_of(name: str, path: Path, known: set[str]) -> list[Import]:
    """The imports of our own modules in one file, lazy ones included."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    found = []
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against this module's package
                package = name.split(".") if is_package else name.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join(package + ([base] if base else []))
            # `from pkg import mod` imports the module pkg.mod; `from mod import name` imports mod.
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                       for a in node.names]
        elif isinstance(node, ast.Call) and _called_name(node) in ("import_module", "__import__") \
                and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            targets = [node.args[0].value]  # importlib.import_module("pkg.mod") is an import too
        for target in targets:
            # `import a.b.c` of ours: the deepest module of ours that the name covers.
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
                found.append(Import(name, target, f"{where}:{node.lineno}"))
    return sorted(found, key=lambda i: int(i.where.rsplit(":", 1)[1]))


def _called_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def all_imports() -> list[Import]:
    modules = module_files()
    known = set(modules)
    return [imp for name, path in modules.items() for imp in imports_of(name, path, known)]


def package_of(module: str) -> str:
    return module.split(".")[0]


def test_the_import_walker_sees_lazy_and_relative_imports(tmp_path):
    """The walker itself can fail: lazy, relative and importlib imports all count."""
    source = tmp_path / "mod.py"
    source.write_text("def f():\n    from lint_rules import engine\n\nfrom . import registry\n"
                      "importlib.import_module('lint_rules')\n")
    known = {"lint_rules", "lint_rules.engine", "lite_guard", "lite_guard.registry", "lite_guard.mod"}
    found = imports_of("lite_guard.mod", source, known)
    assert [(i.imported, i.where.rsplit(":", 1)[1]) for i in found] == [
        ("lint_rules.engine", "2"), ("lite_guard.registry", "4"), ("lint_rules", "5")]


def test_no_import_goes_up_a_layer():
    upward = [f"{i.where}: {i.importer} imports {i.imported}"
              for i in all_imports()
              if package_of(i.imported) != package_of(i.importer)
              and package_of(i.imported) not in ALLOWED[package_of(i.importer)]]
    assert upward == [], "imports that go up (or sideways) a layer:\n" + "\n".join(upward)


def test_the_packages_import_nothing_from_the_repo_around_them():
    # bench/, tests/, tools/ and examples/ sit on top: an installed package cannot reach them.
    above = {"bench", "tests", "tools", "examples", "compiler_models", "distributed_harness",
             "distributed_train"}
    found = []
    for name, path in module_files().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            found += [f"{path.relative_to(ROOT)}:{node.lineno}: {n}" for n in names
                      if n.split(".")[0] in above]
    assert found == [], "package modules importing repo scripts:\n" + "\n".join(found)


def test_no_module_import_circles():
    graph = networkx.DiGraph()
    graph.add_nodes_from(module_files())
    imports = all_imports()
    graph.add_edges_from((i.importer, i.imported) for i in imports)
    circles = [sorted(c) for c in networkx.strongly_connected_components(graph) if len(c) > 1]
    where = {(i.importer, i.imported): i.where for i in imports}
    detail = [", ".join(c) + "\n  " + "\n  ".join(
        f"{where[(a, b)]}: {a} -> {b}" for a in c for b in c if (a, b) in where)
        for c in circles]
    assert circles == [], f"{len(circles)} import circle(s):\n" + "\n".join(detail)


def test_the_graph_covers_every_package():
    # Guards the walker against silently finding nothing (then every check above would pass).
    counted = {package_of(i.importer) for i in all_imports()}
    assert counted == set(PACKAGES)


@pytest.mark.parametrize("modules", [
    "lite_guard", "lite_guard.registry",
    # the whole core and the shell, too: the registry is usable without torch or libcst
    "lite_guard.cli, lite_guard.project_config, lite_guard.identity, lite_guard.stages,"
    " lite_guard.hints, lite_guard.commands.registry",
    # pytest loads the plugin in every project that installs lite-guard, torch or not
    "lite_guard.pytest_plugin",
])
def test_lite_guard_imports_neither_torch_nor_libcst(modules):
    code = (f"import sys, {modules}\n"
            "heavy = sorted({'torch', 'libcst'} & set(sys.modules))\n"
            "assert not heavy, f'imported {heavy}'\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr


def test_pytest_startup_imports_no_torch(tmp_path):
    """The auto-loaded plugin must not make every pytest run pay for (or need) torch."""
    (tmp_path / "test_plain.py").write_text(
        "import sys\n\ndef test_no_torch():\n    assert 'torch' not in sys.modules\n")
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             str(tmp_path / "test_plain.py")], capture_output=True, text=True,
                            timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-2000:]
    assert "lite_bitwise" in subprocess.run(
        [sys.executable, "-m", "pytest", "--markers", "-p", "no:cacheprovider"], capture_output=True,
        text=True, timeout=300, cwd=tmp_path).stdout


def test_each_package_contributes_its_own_subcommands():
    commands = {ep.name: ep.value for ep in entry_points(group="lite_guard.commands")}
    assert {name: value.split(".")[0] for name, value in commands.items()} == {
        "check": "lint_rules", "registry": "lite_guard",
        "trace": "lite_compiler", "fuzz": "lite_compiler"}


@pytest.mark.parametrize("argv", [["check", "--help"], ["registry", "list"], ["--version"]])
def test_the_shell_loads_only_the_command_asked_for(argv):
    # `lite_guard check` (or --version) never pays for importing the compiler and torch.
    code = ("import sys\nfrom lite_guard.cli import build_parser\n"
            f"build_parser({argv!r})\n"
            "assert 'torch' not in sys.modules, 'torch was imported'\n"
            "assert 'lite_compiler' not in sys.modules, 'lite_compiler was imported'\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
