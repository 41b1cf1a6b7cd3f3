"""Hostile inputs of round 15, through the real commands on real files (helpers of
tests/test_hostile.py, every subprocess bounded by a timeout): registries that do not exist
(named with ``--registry``, in ``[tool.lite_guard]``, in ``LITE_GUARD_REGISTRIES``: said where,
never as "line 0"); ``check``, ``registry`` and the flake8 plugin reading
``LITE_GUARD_REGISTRIES`` as the compiler does; torch version ranges no torch can be in; pass
identities no Python name has; lintrunner options without their value; configured paths that
do not exist; and inputs that held (file times, deep trees, links, long lines and lists)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_hostile import BOUND, REAL_PASS, VOCABULARY, assert_real_finding, check, hostile_tree, \
    lg900, lite_guard

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHIPPED = sorted((Path(REPO) / "lite_guard" / "registries").glob("*.toml"))
TRACE_BOUND = 60  # trace imports the compiler (and torch)
# A registry that allows the real pass of hostile_tree: what a team's registry holds.
TEAM = ('[[pass]]\nname = "real_pass:MyPass"\nstage = "post_grad"\nlite = "never"\nkind = "class"\n'
        'why = "reviewed"\n')


def _entry(name: str = "m:P", torch: str | None = None, kind: str = "class") -> str:
    """One [[pass]]: ``name`` on line 2, ``torch`` (when given) on line 6."""
    return (f'[[pass]]\nname = "{name}"\nstage = "post_grad"\nlite = "never"\nkind = "{kind}"\n'
            + (f'torch = "{torch}"\n' if torch is not None else "") + 'why = "x"\n')


class _Ran:
    def __init__(self, returncode: int, stdout: str, stderr: str):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def registry_error(tmp_path, capsys, monkeypatch):
    """``lite_guard registry list --registry r.toml`` through the CLI's own main(), in this
    process (a subprocess per case doubled this file's time)."""
    from lite_guard.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LITE_GUARD_REGISTRIES", raising=False)

    def run(text: str) -> _Ran:
        (tmp_path / "r.toml").write_text(text)
        capsys.readouterr()
        status = main(["registry", "list", "--no-project", "--registry", "r.toml"])
        out, err = capsys.readouterr()
        return _Ran(status, out, err)
    return run


# ---- 1a: a registry that does not exist is said where it was named, never "path:0:" ---------------

@pytest.mark.parametrize("command", [("check",), ("registry", "list"), ("registry", "show", "x")])
def test_a_missing_registry_given_with_registry_names_the_option_not_line_0(tmp_path, command):
    """It was ``missing.toml:0: registry file does not exist``: line 0 is no place in a file
    that is not there, and the line did not say which of three settings named it."""
    result = lite_guard(*command, "--no-project", "--registry", "missing.toml", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "lite_guard: missing.toml: registry file does not exist (given with --registry); fix the path"]


def test_a_dangling_registry_link_names_what_it_points_to(tmp_path):
    (tmp_path / "team.toml").symlink_to(tmp_path / "gone" / "team.toml")
    result = lite_guard("check", "--no-project", "--registry", "team.toml", ".", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"lite_guard: team.toml: registry file is a link to '{tmp_path}/gone/team.toml', which does"
        " not exist (given with --registry); fix the path"]


def test_a_missing_registry_in_pyproject_is_said_on_its_line(tmp_path):
    root = hostile_tree(tmp_path)
    (root / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.lite_guard]\n'
                                         'registries = ["team.toml"]\n')
    result = lite_guard("check", ".", cwd=root)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"lite_guard: {root}/pyproject.toml:5: [tool.lite_guard] registries: 'team.toml' does not"
        " exist; fix the path (relative to this pyproject.toml's folder) or remove the entry"]


def test_a_registry_that_is_a_fifo_is_one_line_without_line_0(tmp_path):
    """Every whole-file problem (not a regular file, a deleted working directory, a pyproject
    that is a folder) was ``path:0:``; now ``path: what``."""
    os.mkfifo(tmp_path / "team.toml")
    result = lite_guard("check", "--no-project", "--registry", "team.toml", ".", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "lite_guard: team.toml: cannot read registry file: not a regular file (a FIFO, socket,"
        " device or directory); point the registry path at a regular UTF-8 TOML file"]


def test_trace_says_a_missing_registry_was_given_with_registry(tmp_path):
    """trace hands its --registry files to the compiler through LITE_GUARD_REGISTRIES: a missing
    one must still be said as given, not as "named in LITE_GUARD_REGISTRIES"."""
    (tmp_path / "script.py").write_text("pass\n")
    result = lite_guard("trace", "--registry", "missing.toml", "script.py", cwd=tmp_path,
                        timeout=TRACE_BOUND)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "lite_guard: missing.toml: registry file does not exist (given with --registry); fix the path"]


# ---- 1b: check, registry and flake8 read LITE_GUARD_REGISTRIES, as the compiler does --------------

def test_check_reads_the_registries_named_in_the_environment(tmp_path):
    """The compiler loaded LITE_GUARD_REGISTRIES and ``check`` ignored it: a CI job exporting it
    linted against another registry than its compiles ran with (here: a pass its team
    registered was a finding). The cache must not serve the run without it either."""
    root = hostile_tree(tmp_path)
    (tmp_path / "team.toml").write_text(TEAM)
    without = check(root)
    assert without.returncode == 1
    assert_real_finding(without)
    with_env = check(root, env={"LITE_GUARD_REGISTRIES": str(tmp_path / "team.toml")})
    assert with_env.returncode == 0, with_env.stdout + with_env.stderr
    assert with_env.stdout == ""
    assert "from 6 file(s): " in with_env.stderr and f"{tmp_path}/team.toml" in with_env.stderr
    shown = lite_guard("registry", "show", "--no-project", "real_pass:MyPass", cwd=root,
                       env={"LITE_GUARD_REGISTRIES": str(tmp_path / "team.toml")})
    assert shown.returncode == 0 and "reviewed" in shown.stdout


@pytest.mark.parametrize("command", [("check", "."), ("registry", "list")])
def test_a_missing_registry_in_the_environment_is_one_line_for_check_and_registry(tmp_path, command):
    result = lite_guard(*command, cwd=tmp_path, env={"LITE_GUARD_REGISTRIES": "::missing.toml:"})
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "lite_guard: missing.toml: registry file does not exist (named in LITE_GUARD_REGISTRIES);"
        " fix the path there or unset the variable"]


def test_one_registry_named_by_pyproject_the_environment_and_the_option_loads_once(tmp_path):
    root = hostile_tree(tmp_path)
    (root / "team.toml").write_text(TEAM)
    (root / "pyproject.toml").write_text('[tool.lite_guard]\nregistries = ["team.toml"]\n')
    result = lite_guard("check", "--registry", "./team.toml", "--registry", str(VOCABULARY), ".",
                        cwd=root, env={"LITE_GUARD_REGISTRIES": f"team.toml:{root}/team.toml"})
    assert result.returncode == 0, result.stderr  # not "duplicate pass 'real_pass:MyPass'"
    assert "from 6 file(s)" in result.stderr


def test_a_fifo_in_the_environment_is_refused_not_waited_on(tmp_path):
    os.mkfifo(tmp_path / "fifo.toml")
    result = lite_guard("check", ".", cwd=tmp_path, env={"LITE_GUARD_REGISTRIES": "fifo.toml"})
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "lite_guard: fifo.toml: cannot read registry file: not a regular file (a FIFO, socket,"
        " device or directory); point the registry path at a regular UTF-8 TOML file"]


def test_the_flake8_plugin_reads_the_registries_named_in_the_environment(tmp_path, monkeypatch):
    from test_hostile_round12 import _flake8

    root = hostile_tree(tmp_path)
    (tmp_path / "team.toml").write_text(TEAM)
    before = _flake8(root, tmp_path / "a")
    assert b"./real_pass.py:4:7: LG001 graph pass 'real_pass:MyPass'" in before.stdout, before
    monkeypatch.setenv("LITE_GUARD_REGISTRIES", str(tmp_path / "team.toml"))
    after = _flake8(root, tmp_path / "b")
    assert after.returncode == 0 and after.stdout == b"", after


# ---- 1c: a torch range no torch version can be in ----------------------------------------------

@pytest.mark.parametrize(("spec", "why"), [
    (">=2.14,<2.12", ""),
    (">=2.14,<2.14", ""),
    ("==2.13,!=2.13", ""),
    ("==2.13.*,<2.13", ""),
    ("<0", ""),
    ("===banana", " ('===banana' compares text, and no torch version is 'banana')"),
    ("==2.13.0a1", " (torch versions are compared by their release part, 2.13.0a1 as 2.13.0: write"
                   " '==2.13.0')"),
])
def test_a_torch_range_that_matches_no_version_is_refused(registry_error, spec, why):
    """The entry applied to no torch at all, and the registry loaded silently."""
    result = registry_error(_entry(torch=spec))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"lite_guard: r.toml:6: torch version range '{spec}' matches no torch version{why}; write a"
        " range some release is in, e.g. \">=2.11,<2.14\""]


@pytest.mark.parametrize("spec", [">=2.11,,<2.13", ">=2.11,", " "])
def test_a_torch_range_with_an_empty_part_is_refused(registry_error, spec):
    """packaging drops empty parts: a lost bound (or " ": every version) loaded silently."""
    result = registry_error(_entry(torch=spec))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"lite_guard: r.toml:6: torch version range '{spec}' has an empty part (two commas, a"
        " trailing comma, or only spaces); write e.g. \">=2.11,<2.14\", or leave torch out for"
        " every version"]


def test_an_empty_range_in_a_config_entry_is_refused_too(registry_error):
    result = registry_error('[[config]]\nkey = "my_key"\nkind = "debug"\ntype = "bool"\n'
                                       'torch = ">2.13,<=2.13"\nwhy = "x"\n')
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "lite_guard: r.toml:5: torch version range '>2.13,<=2.13' matches no torch version; write a"
        " range some release is in, e.g. \">=2.11,<2.14\""]


@pytest.mark.parametrize("spec", [">2.13,<2.13.1", "==2.13.*", "!=2.13.*", "<2.0.0a0",
                                  ">=2.13.0.dev0", ">2.13.0.post1,<2.14", "===2.13.0",
                                  ">=" + ".".join(["1"] * 5000), "~=2.13.0"])
def test_ranges_some_release_is_in_still_load(tmp_path, spec):
    from lite_guard.registry import Registry

    (tmp_path / "r.toml").write_text(_entry(torch=spec))
    started = time.monotonic()
    (entry,) = Registry.from_files([tmp_path / "r.toml"]).passes
    assert entry.torch == spec and time.monotonic() - started < 5


# ---- pass identities no Python name has -----------------------------------------------------------

@pytest.mark.parametrize(("name", "problem"), [
    ("m:", "its qualname is empty"),
    (":MyPass", "its module is empty"),
    ("m::MyPass", "it has a second ':'"),
    ("m:MyPass.", "its qualname 'MyPass.' has an empty dotted part"),
    ("a..b:MyPass", "its module 'a..b' has an empty dotted part"),
    ("m:MyPass ", "its qualname 'MyPass ' has spaces around a name"),
    (" m:MyPass", "its module ' m' has spaces around a name"),
])
def test_a_pass_identity_no_python_class_has_is_refused(registry_error, name, problem):
    """``"m:MyPass "`` (pasted with a space) matched no pass ever: the lint kept reporting
    ``m:MyPass`` and the guard refused it, with nothing said about the entry."""
    result = registry_error(_entry(name=name))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"lite_guard: r.toml:2: pass '{name}' (class) is no 'module:qualname' identity: {problem};"
        " write the module and the class's __qualname__, e.g. \"my_project.passes:FusePass\""]


@pytest.mark.parametrize("name", ["my-pass:MyPass", "m:f.<locals>.MyPass", "m:*", "m:Evil[/]"])
def test_identities_python_or_the_lint_can_produce_still_load(tmp_path, name):
    """A file ``my-pass.py`` is module ``my-pass``; ``__qualname__`` may be set to any text."""
    from lite_guard.registry import Registry

    (tmp_path / "r.toml").write_text(_entry(name=name))
    assert [p.name for p in Registry.from_files([tmp_path / "r.toml"]).passes] == [name]


# ---- 1d: lintrunner options without their value ----------------------------------------------------

@pytest.mark.parametrize(("args", "line"), [
    (["--registry"], "lite_guard check: error: argument --registry: expected one argument"
                     " (see 'lite_guard check --help')"),
    (["--registry", "@paths.txt"], "lite_guard check: error: argument --registry: expected one"
                                   " argument (see 'lite_guard check --help')"),
    (["--jobs"], "lite_guard check: error: argument --jobs/-j: expected one argument (see"
                 " 'lite_guard check --help')"),
    (["--format"], "lite_guard check: error: argument --format: expected one argument (see"
                   " 'lite_guard check --help')"),
    (["--bogus"], "lite_guard: error: unrecognized arguments: --bogus (see 'lite_guard --help')"),
])
def test_lintrunner_options_without_a_value_are_a_usage_error_even_with_no_files(tmp_path, args,
                                                                                   line):
    """With nothing to lint (an empty paths file, no file for this linter), the adapter exited
    0 before reading its options: ``--registry`` with no value passed until the first commit
    that touched a Python file."""
    (tmp_path / "paths.txt").write_text("")
    result = subprocess.run([sys.executable, "-P", "-m", "lint_rules.lintrunner", *args], cwd=tmp_path,
                            capture_output=True, text=True, timeout=BOUND,
                            env={**os.environ, "PYTHONPATH": REPO})
    assert result.returncode == 2
    assert result.stderr.splitlines() == [line]
    assert result.stdout == ""


def test_lintrunner_with_no_files_and_good_options_still_exits_0(tmp_path):
    (tmp_path / "paths.txt").write_text("")
    result = subprocess.run([sys.executable, "-P", "-m", "lint_rules.lintrunner", "--jobs", "1",
                             "@paths.txt"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=BOUND, env={**os.environ, "PYTHONPATH": REPO})
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


# ---- configured paths that do not exist --------------------------------------------------------------

def test_a_configured_path_that_does_not_exist_is_said_on_its_line_and_the_rest_is_linted(tmp_path):
    """It was ``<project>/src: no such file or directory``: neither the setting nor what to do."""
    root = hostile_tree(tmp_path)
    (root / "pyproject.toml").write_text('[tool.lite_guard]\npaths = [\n  "src",\n  "real_pass.py",\n]\n')
    result = lite_guard("check", "--registry", str(VOCABULARY), cwd=root)
    assert result.returncode == 2
    assert f"{root}/real_pass.py:4:7 LG001 graph pass 'real_pass:MyPass'" in result.stdout
    assert result.stderr.splitlines()[0] == (
        f"lite_guard check: {root}/pyproject.toml:2: [tool.lite_guard] paths: 'src' does not exist;"
        " fix the path (relative to this pyproject.toml's folder) or remove the entry")


def test_five_thousand_missing_configured_paths_are_one_line_each_in_linear_time(tmp_path):
    root = hostile_tree(tmp_path)
    entries = "".join(f'  "gone{i}.py",\n' for i in range(5000))
    (root / "pyproject.toml").write_text(f'[tool.lite_guard]\npaths = [\n{entries}  "real_pass.py",\n]\n')
    result = lite_guard("check", "--registry", str(VOCABULARY), cwd=root)
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if "does not exist" in line]
    assert len(errors) == 5000 and errors[-1].startswith(
        f"lite_guard check: {root}/pyproject.toml:2: [tool.lite_guard] paths: 'gone4999.py'")
    assert "real_pass.py:4:7 LG001" in result.stdout
    assert result.seconds < 15


# ---- round 15's other inputs (most held: each test pins what they give) ------------------------------

def test_file_times_far_in_the_past_and_future_and_same_time_edits(tmp_path):
    """mtimes of 1653, 36812 and the epoch: no overflow in the cache's "too recent to trust"
    arithmetic, and an edit keeping size and mtime is still seen (the ctime changed)."""
    times = {"neg.py": -1e10, "far.py": 2.0 ** 40, "zero.py": 0.0}
    root = hostile_tree(tmp_path, {name: REAL_PASS for name in times})
    for name, when in times.items():
        os.utime(root / name, (when, when))
    names = lambda r: sorted(line.split()[0] for line in r.stdout.splitlines())  # noqa: E731
    first, again = check(root), check(root)
    assert first.returncode == again.returncode == 1
    assert names(first) == names(again) == ["far.py:4:7", "neg.py:4:7", "real_pass.py:4:7", "zero.py:4:7"]
    for name in times:
        info = (root / name).stat()
        (root / name).write_text(REAL_PASS.replace("MyPass", "MyPaZZ"))
        os.utime(root / name, ns=(info.st_atime_ns, info.st_mtime_ns))
    edited = check(root)
    assert sorted(re.findall(r"'(\w+:MyPa\w\w)'", edited.stdout)) == [
        "far:MyPaZZ", "neg:MyPaZZ", "real_pass:MyPass", "zero:MyPaZZ"]


def test_a_tree_1500_folders_deep_is_walked(tmp_path):
    root = hostile_tree(tmp_path)
    deep = root  # 3,000 bytes: under PATH_MAX, past any recursion limit (so: made one by one)
    for _ in range(1500):
        deep = deep / "d"
        deep.mkdir()
    (deep / "x.py").write_text(REAL_PASS)
    result = check(root)
    assert result.returncode == 1
    assert_real_finding(result)
    assert f"{'d/' * 1500}x.py:4:7 LG001 graph pass 'x:MyPass'" in result.stdout


def test_a_folder_named_like_a_python_file_is_walked_not_read(tmp_path):
    root = hostile_tree(tmp_path)
    (root / "pkg.py").mkdir()
    (root / "pkg.py" / "inner.py").write_text(REAL_PASS)
    result = check(root)
    assert result.returncode == 1
    assert_real_finding(result)
    assert "pkg.py/inner.py:4:7 LG001 graph pass 'inner:MyPass'" in result.stdout
    assert lg900(result, "pkg.py") == []


def test_a_registry_link_loop_is_one_line(tmp_path):
    (tmp_path / "a.toml").symlink_to("b.toml")
    (tmp_path / "b.toml").symlink_to("a.toml")
    result = lite_guard("check", "--no-project", "--registry", "a.toml", ".", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "lite_guard: a.toml: cannot read registry file: Too many levels of symbolic links; point"
        " the registry path at a regular UTF-8 TOML file"]


def test_a_link_out_of_the_tree_is_linted_without_echoing_what_it_reads(tmp_path):
    """A pull request adding ``leak.py -> ~/.ci-secrets`` gets the lint to read that file: its
    syntax error is reported by position only, never with the text of the line."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOKEN hunter2-s3cr3t CustomGraphPass\n")
    root = hostile_tree(tmp_path)
    (root / "leak.py").symlink_to(secret)
    result = check(root, "--check-syntax")
    assert result.returncode == 1
    assert_real_finding(result)
    assert lg900(result, "leak.py") == [
        "leak.py:1:7 LG900 cannot parse: invalid syntax" + __import__("test_hostile").SYNTAX_TAIL]
    assert "hunter2" not in result.stdout + result.stderr


def test_a_suppression_listing_300000_codes_is_read_in_time(tmp_path):
    source = REAL_PASS.replace("(CustomGraphPass):", "(CustomGraphPass):  # lite-guard: ignore["
                               + "LG002," * 300000 + "LG001]")
    root = hostile_tree(tmp_path, {"supp.py": source})
    result = check(root, "--max-file-size", "10000000")
    assert result.returncode == 1
    assert_real_finding(result)
    assert [line for line in result.stdout.splitlines() if line.startswith("supp.py")] == []
    assert result.seconds < 20


def test_three_thousand_files_named_on_the_command_line_are_each_linted(tmp_path):
    root = hostile_tree(tmp_path, {f"f{i}.py": "x = 1\n" for i in range(3000)})
    names = [f"f{i}.py" for i in range(3000)]
    result = lite_guard("check", "--no-project", "--registry", str(VOCABULARY), *names,
                        "real_pass.py", cwd=root)
    assert result.returncode == 1
    assert_real_finding(result)
    assert "linted 3001 file(s)" in result.stderr
    assert result.seconds < 30


def test_registry_show_of_a_110000_character_name_is_one_line(tmp_path):
    name = "fx_graph_cs" * 10000
    result = lite_guard("registry", "show", "--no-project", name, cwd=tmp_path)
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"lite_guard registry show: no pass or config named '{name}' in the registry")
    assert result.seconds < 10


def test_a_pyproject_naming_itself_as_a_registry_is_one_line(tmp_path):
    root = hostile_tree(tmp_path)
    (root / "pyproject.toml").write_text('[tool.lite_guard]\nregistries = ["pyproject.toml"]\n')
    result = lite_guard("check", ".", cwd=root)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"lite_guard: {root}/pyproject.toml:1: unknown table 'tool'; expected [[pass]], [[config]],"
        " [[pipeline]], [[base]] or [meta]"]


def test_a_version_range_given_as_torch_version_is_a_usage_error(tmp_path):
    result = lite_guard("check", "--torch-version", ">=2.13", ".", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "lite_guard check: error: argument --torch-version: not a version: '>=2.13' (write e.g."
        " 2.13.0) (see 'lite_guard check --help')"]


@pytest.mark.parametrize("spec", ["===2.13", "===2", ">=2.11,===2.13.0.1"])
def test_a_text_equality_that_is_no_three_part_release_is_refused(registry_error, spec):
    """torch's release is always three parts ("2.13.0" of "2.13.0+cpu"): "===2.13" never matched,
    and the range check took it, trying "2.13" itself."""
    version = spec.rsplit("===", 1)[1]
    result = registry_error(_entry(torch=spec))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"lite_guard: r.toml:6: torch version range '{spec}' uses '==={version}', which compares"
        " the version as text and matches no torch release (torch says e.g. 2.13.0); write"
        f" '=={version}' or '=={version}.*'"]


def test_a_file_named_with_a_trailing_slash_is_a_usage_error(tmp_path):
    """pathlib drops the '/': `check real_pass.py/` linted the file the name said was a folder."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "real_pass.py").write_text(REAL_PASS)
    result = lite_guard("check", "--no-project", "real_pass.py/", cwd=root)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [
        "lite_guard check: error: argument PATH: 'real_pass.py/' is not a folder (a file named with"
        " a trailing '/'); name the file without the '/' (see 'lite_guard check --help')"]
    assert_real_finding(lite_guard("check", "--no-project", "--registry", str(VOCABULARY),
                                   "real_pass.py", cwd=root))
