"""Hostile inputs of round 10, through the real CLI on real files (helpers of tests/test_hostile.py):
a checkout that plants packages named like ours where ``python -m lite_guard`` runs, a torch whose
version is no version, ``pass = []`` under ``--fix``, an outside module edited with its mtime set
back, pyproject and registry headers written as TOML allows, wildcards hiding glob characters in
their namespace, strings libcst cannot read, ``PYTHONWARNINGS=error``, and a traced script that
imports its sibling."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from test_hostile import BOUND, REAL_FINDING, REAL_PASS, VOCABULARY, assert_real_finding, check, \
    hostile_tree, lite_guard

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_python_m_lite_guard_in_a_hostile_checkout_imports_none_of_its_modules(tmp_path):
    """``python -m`` puts the working directory first on sys.path: run in a pull request's
    checkout, its ``lint_rules/`` was imported instead of ours (the check command is loaded
    lazily), so linting ran the linted code. Now the working directory is dropped from sys.path
    unless lite_guard itself came from there."""
    marker = tmp_path / "ran"
    planted = f"open({str(marker)!r}, 'w').write('linted code ran')\n"
    root = hostile_tree(tmp_path, {"platformdirs.py": planted, "tomllib.py": planted})
    for package in ("lint_rules", "libcst", "packaging"):
        (root / package).mkdir()
        (root / package / "__init__.py").write_text(planted)
    result = subprocess.run([sys.executable, "-m", "lite_guard", "check", "--no-project",
                             "--registry", str(VOCABULARY), "--check-syntax", "."], cwd=root,
                            capture_output=True, text=True, timeout=BOUND,
                            env={**os.environ, "PYTHONPATH": REPO,
                                 "LITE_GUARD_CACHE_DIR": str(tmp_path / "cache")})
    assert not marker.exists(), "code from the linted checkout ran"
    assert result.returncode == 1, result.stderr
    assert_real_finding(result)


def test_a_torch_version_py_that_states_no_version_is_no_version_not_a_traceback(tmp_path):
    """The installed torch is found on sys.path, never imported, and its version.py read: a
    ``__version__ = 'banana'`` there (a local build; a planted torch/ when the working directory
    was on sys.path) was handed to packaging as is, an InvalidVersion traceback that lost the run.
    Now it is no version, like an unreadable one."""
    fake = tmp_path / "site" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "version.py").write_text("__version__ = 'banana'\n")
    entry = ('[[pass]]\nname = "gone:Pass"\nstage = "post_grad"\nlite = "never"\nkind = "class"\n'
             'torch = ">=2.11"\n')
    (tmp_path / "gone.toml").write_text(entry)
    root = hostile_tree(tmp_path)
    result = lite_guard("check", "--no-project", "--no-cache", "--registry", str(VOCABULARY),
                        "--registry", str(tmp_path / "gone.toml"), ".", cwd=root,
                        env={"PYTHONPATH": f"{tmp_path / 'site'}{os.pathsep}{REPO}"})
    assert result.returncode == 1, result.stderr
    assert_real_finding(result)
    assert "gone:Pass" not in result.stdout  # the version is unknown: no ranged entry is stale


def test_fix_into_a_registry_holding_an_empty_inline_array_writes_loadable_toml(tmp_path):
    """``pass = []`` is a registry the loader accepts (no entries yet); --fix appended its table
    to that inline array and wrote ``pass = [name = ...]``: the project's registry could no longer
    be loaded by anyone (exit 2 on every later run). Now the entries are [[pass]] tables."""
    import tomllib

    root = hostile_tree(tmp_path)
    (root / "pyproject.toml").write_text('[tool.lite_guard]\npaths = ["."]\nregistries = ["passes.toml"]\n')
    (root / "passes.toml").write_text("pass = []\nconfig = []\n\n[meta]\nowner = 'us'\n")
    result = lite_guard("check", "--fix", cwd=root)
    assert result.returncode == 1, result.stderr  # the placeholder why is reported until replaced
    written = tomllib.loads((root / "passes.toml").read_text())
    assert [entry["name"] for entry in written["pass"]] == ["real_pass:MyPass"]
    assert written["meta"] == {"owner": "us"} and written["config"] == []
    again = lite_guard("check", cwd=root)
    assert again.returncode == 1 and not REAL_FINDING.search(again.stdout), again.stderr


def test_a_module_outside_the_linted_folder_edited_with_its_mtime_set_back_is_read_again(tmp_path):
    """Linting ``pkg/sub`` reads ``pkg/base.py`` (outside it) for the bases; the cache checked
    that module by size and mtime only, and kept its summary by mtime: an edit of the same size
    with the mtime set back (``touch -d``, os.utime) made the base a pass base, and the warm run
    still said clean. Its ctime, which no one can set back, is checked now, like a linted file's."""
    import time

    evil = "from torch._inductor.custom_graph_pass import CustomGraphPass as Base\n"
    benign = "class Base:\n    pass\n"
    benign += "#" * (len(evil) - len(benign) - 1) + "\n"
    root = hostile_tree(tmp_path)
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "sub" / "__init__.py").write_text("")
    (root / "pkg" / "sub" / "m.py").write_text(
        "from pkg.base import Base\n\n\nclass P(Base):\n    def __call__(self, graph):\n"
        "        return graph\n\n    def uuid(self):\n        return 'p'\n")
    base = root / "pkg" / "base.py"
    base.write_text(benign)
    before = base.stat()
    time.sleep(2.1)  # older than the cache's "too recent to trust" window
    args = ("check", "--no-project", "--registry", str(VOCABULARY), "pkg/sub")
    assert lite_guard(*args, cwd=root).returncode == 0
    base.write_text(evil)
    os.utime(base, ns=(before.st_atime_ns, before.st_mtime_ns))
    expected = "pkg/sub/m.py:4:7 LG001 graph pass 'pkg.sub.m:P' (class deriving from CustomGraphPass)"
    warm = lite_guard(*args, cwd=root)
    assert warm.returncode == 1 and warm.stdout.startswith(expected), warm.stdout + warm.stderr
    (root / "pkg" / "sub" / "other.py").write_text("y = 2\n")  # the record is not the answer:
    again = lite_guard(*args, cwd=root)  # the pack's summary of base.py must not be either
    assert again.returncode == 1 and again.stdout.startswith(expected), again.stdout + again.stderr


@pytest.mark.parametrize("header", ["[tool.lite_guard]  # our lint", '[ tool . "lite_guard" ]',
                                    "[[tool.lite_guard]]"])
def test_a_pyproject_error_is_on_its_line_however_the_header_is_written(tmp_path, header):
    """TOML allows a comment after a header, spaces and quotes inside it; the error line was
    looked for under the exact text ``[tool.lite_guard]``, so it pointed at another table's line
    (3, ``[tool.other]``), or line 0 for an array of tables ``[[tool.lite_guard]]``."""
    root = hostile_tree(tmp_path)
    (root / "pyproject.toml").write_text(f'[project]\nname = "x"\n[tool.other]\na = 1\n{header}\n'
                                         'paths = "."\n')
    result = lite_guard("check", cwd=root)
    assert result.returncode == 2
    what = ("[tool.lite_guard] must be a table" if header.startswith("[[") else
            "[tool.lite_guard] paths must be a list of paths (strings)")
    line = 5 if header.startswith("[[") else 6
    assert result.stderr == f"lite_guard: {root / 'pyproject.toml'}:{line}: {what}\n"


def test_a_registry_header_written_with_quotes_is_read_as_toml_reads_it(tmp_path):
    """``[["pass"]]`` is TOML's ``[[pass]]``; entry lines were found by the bare spelling only,
    so the count disagreed and a valid registry was refused as "'pass' must be an array of
    tables". Now its entries load, and an error in one is reported on its own line."""
    root = hostile_tree(tmp_path)
    entry = '[["pass"]]\nname = "real_pass:MyPass"\nstage = "post_grad"\nlite = "never"\nkind = "class"\n'
    (tmp_path / "quoted.toml").write_text(entry)
    result = lite_guard("check", "--no-project", "--no-cache", "--registry", str(VOCABULARY),
                        "--registry", str(tmp_path / "quoted.toml"), ".", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr  # the pass is registered
    (tmp_path / "quoted.toml").write_text(entry + "\n[[ 'pass' ]]\nname = \"x:Y\"\nstage = \"post_grad\""
                                          "\nlite = \"never\"\nkind = \"functio\"\n")
    bad = lite_guard("check", "--no-project", "--no-cache", "--registry", str(tmp_path / "quoted.toml"),
                     ".", cwd=root)
    assert bad.returncode == 2
    assert bad.stderr.startswith(f"lite_guard: {tmp_path / 'quoted.toml'}:11: unknown kind 'functio'")


def test_thousands_of_concatenated_strings_libcst_cannot_read_is_one_lg900_saying_so(tmp_path):
    """CPython reads 5,000 implicitly concatenated strings; libcst nests each in the next and
    gives up with a parser error at a line past the file's end, reported as if the file had a
    syntax error ("cannot parse: parser error: error at 13:0: expected one of STRING"). Now the
    LG900 says the reader gave up on a file Python accepts, and what to do; the rest is linted."""
    source = ("lite_mode_options = {'reorder_for_peak_memory': True}\n"
              "y = " + " ".join(['"a"'] * 5000) + "\n")
    root = hostile_tree(tmp_path, {"strings.py": source})
    result = check(root, "--no-cache")
    assert result.returncode == 1, result.stderr
    assert_real_finding(result)
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("strings.py:")]
    assert line.startswith("strings.py:2:1 LG900 lite-guard's reader (libcst) cannot read this file,"
                           " which Python accepts (parser error: "), line
    assert line.endswith("; the file was not checked (simplify the construct it names, such as"
                         " thousands of implicitly concatenated strings, or report it)"), line


def test_under_pythonwarnings_error_a_file_python_warns_about_keeps_its_findings(tmp_path):
    """``PYTHONWARNINGS=error`` is a common CI setting; it turned the compiler's warnings about
    the linted code (an invalid escape ``"\\d"``, ``x is 1``) into SyntaxErrors: an LG900 "cannot
    parse ... run lite_guard with a newer Python" and the file's own pass lost. The lint now
    ignores the warnings of the code it reads, and prints none of them."""
    source = ('x = "\\d"\nif x is 1:\n    pass\nlite_mode_options = {}\n\n\n'
              + REAL_PASS.replace("MyPass", "Warned").split("\n", 1)[1])
    root = hostile_tree(tmp_path, {"warned.py": "from torch._inductor.custom_graph_pass import"
                                                " CustomGraphPass\n" + source})
    for env in ({"PYTHONWARNINGS": "error"}, {}):
        result = check(root, "--no-cache", env=env)
        assert result.returncode == 1, result.stderr
        assert_real_finding(result)
        assert "LG900" not in result.stdout, result.stdout
        assert "warned.py:10:7 LG001 graph pass 'warned:Warned'" in result.stdout, result.stdout
        assert "Warning" not in result.stderr, result.stderr


@pytest.mark.parametrize("name", ["[t]orch._inductor.fx_passes:*", "?:*", "my_pro[j]ect:*"])
def test_a_wildcard_whose_namespace_holds_glob_characters_may_not_allow_passes(tmp_path, name):
    """A wildcard may allow passes only inside a qualified namespace of its own, not torch's;
    the namespace was read up to the first '*' only, so '?' and '[...]' before it passed as a
    module name: "[t]orch._inductor.fx_passes:*" is not "torch", yet matches torch's module."""
    root = hostile_tree(tmp_path)
    registry = tmp_path / "wild.toml"
    registry.write_text(f'[[pass]]\nname = "{name}"\nstage = "post_grad"\nlite = "always"\n'
                        'kind = "class"\nwhy = "trust me"\n')
    result = lite_guard("check", "--no-project", "--no-cache", "--registry", str(registry), ".",
                        cwd=root)
    assert result.returncode == 2
    assert result.stderr == (f"lite_guard: {registry}:2: wildcard pass '{name}' may not be lite ="
                             ' "always": a wildcard can only allow passes inside your own qualified'
                             ' namespace; write e.g. name = "my_project.passes:*" or list the passes'
                             " one by one\n")


def test_trace_runs_a_script_with_its_own_folder_first_on_sys_path(tmp_path):
    """``trace`` runs a script as ``python script.py`` would, whose folder Python puts first on
    sys.path: a script importing a module beside it failed (ModuleNotFoundError), unless run with
    ``python -m lite_guard`` from that folder, which no longer adds the working directory."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "helper.py").write_text("VALUE = 42\n")
    (tmp_path / "sub" / "script.py").write_text("import helper\nprint('helper says', helper.VALUE)\n")
    result = lite_guard("trace", "sub/script.py", cwd=tmp_path, timeout=BOUND * 4)
    assert result.returncode == 0, result.stderr
    assert "helper says 42" in result.stdout + result.stderr
