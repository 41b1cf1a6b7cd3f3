"""Hostile inputs of round 9, through the real CLI on real files (helpers of tests/test_hostile.py):
characters Python counts as line ends and TOML does not (U+2028, U+0085), names no TOML file can
hold (lone surrogates), files saved with a BOM or CRLF (``check --fix``), TOML's nan and inf,
version numbers past CPython's 4300-digit limit, megabytes of registry text, paths named many
times, many exclude patterns, names too long for the file system or holding a NUL, a planted
oversized cache record, control characters in usage errors and lintrunner descriptions, an
``--html`` page that is the traced script, and malformed suppression comments."""

from __future__ import annotations

import tomllib

import pytest

from test_hostile import REAL_FINDING, VOCABULARY, hostile_tree, lite_guard

OBSERVER = "from torch.fx.passes.graph_transform_observer import GraphTransformObserver\n"
BOM = b"\xef\xbb\xbf"


def _observed(name: str) -> str:
    """A file that runs one observed pass named ``name`` (the literal as Python writes it)."""
    return OBSERVER + f"with GraphTransformObserver(gm, {name!r}):\n    pass\n"


def _entry(name: str, lite: str = "never", why: str = "checked by hand") -> str:
    return (f'[[pass]]\nname = "{name}"\nstage = "post_grad"\nlite = "{lite}"\nkind = "function"\n'
            f'why = "{why}"\n')


# ---- the one-line hint ------------------------------------------------------------------------

def test_a_pass_name_holding_line_separators_keeps_its_whole_name_in_the_hint(tmp_path):
    """tomlkit writes U+0085 and U+2028 raw inside a TOML string; the hint was folded onto the
    finding's line with str.splitlines(), which cuts there: the name to register was
    "obs:a", and a stray '", ' field followed."""
    root = hostile_tree(tmp_path, {"obs.py": _observed("a\x85b\u2028c")})
    result = lite_guard("check", "--no-project", "--no-cache", "--registry", str(VOCABULARY), ".",
                        cwd=root)
    assert result.returncode == 1, result.stderr
    assert REAL_FINDING.search(result.stdout), result.stdout
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("obs.py:")]
    assert line == ("obs.py:2:33 LG001 graph pass 'obs:a\\x85b\\u2028c' (GraphTransformObserver) is"
                    ' not in any registry; register it: [[pass]] name = "obs:a\\x85b\\u2028c",'
                    ' stage = "post_grad", lite = "never", kind = "observer"')


# ---- check --fix --------------------------------------------------------------------------------

def test_fix_leaves_out_a_name_with_a_lone_surrogate_and_writes_the_others(tmp_path):
    """A "\\ud800" in the code is a lone surrogate in the pass's name; UTF-8 (and TOML) cannot
    hold it, and --fix died writing the registry: UnicodeEncodeError, a traceback, nothing
    written. Now that name is left out with one line and stays a finding."""
    source = OBSERVER + 'with GraphTransformObserver(gm, "a\\ud800b"):\n    pass\n'
    root = hostile_tree(tmp_path, {"obs.py": source})
    (root / "pyproject.toml").write_text('[tool.lite_guard]\nregistries = ["passes.toml"]\n')
    (root / "passes.toml").write_text("# this project's passes\n")
    result = lite_guard("check", "--fix", ".", cwd=root)
    assert result.returncode == 1, result.stderr
    assert ("lite_guard check --fix: not written: 'obs:a\\ud800b' holds a lone surrogate (an"
            " undecodable byte of a file name, or a \\ud800-style escape), which no TOML registry"
            " can hold; rename it") in result.stderr.splitlines()
    written = tomllib.loads((root / "passes.toml").read_text())
    assert [entry["name"] for entry in written["pass"]] == ["real_pass:MyPass"]
    assert result.stdout.splitlines()[-1] == (
        "obs.py:2:33 LG001 graph pass 'obs:a\\ud800b' (GraphTransformObserver) is not in any"
        ' registry; register it: [[pass]] name = "obs:a\\ud800b", stage = "post_grad", lite ='
        ' "never", kind = "observer"')


def test_fix_with_a_pyproject_saved_with_a_bom_lists_the_new_registry(tmp_path):
    """check reads a pyproject.toml that starts with a UTF-8 BOM; --fix handed it to tomlkit as
    is ("Empty key at line 1 col 0", a traceback) after creating the registry, which stayed
    behind, unlisted. Now the registry is listed and the BOM kept."""
    root = hostile_tree(tmp_path)
    (root / "pyproject.toml").write_bytes(BOM + b'[tool.lite_guard]\npaths = ["."]\n')
    result = lite_guard("check", "--fix", cwd=root)
    assert result.returncode == 1, result.stderr  # the placeholder why is reported until replaced
    assert "lite_guard check --fix: listed lite_guard_registry.toml in [tool.lite_guard] registries" \
        in result.stderr.splitlines(), result.stderr
    data = (root / "pyproject.toml").read_bytes()
    assert data.startswith(BOM)
    assert tomllib.loads(data[3:].decode())["tool"]["lite_guard"]["registries"] == [
        "lite_guard_registry.toml"]
    assert [e["name"] for e in tomllib.loads((root / "lite_guard_registry.toml").read_text())["pass"]] \
        == ["real_pass:MyPass"]


def test_fix_into_a_project_registry_saved_with_a_bom_appends_to_it(tmp_path):
    root = hostile_tree(tmp_path)
    (root / "pyproject.toml").write_text('[tool.lite_guard]\nregistries = ["passes.toml"]\n')
    (root / "passes.toml").write_bytes(BOM + _entry("proj.passes:kept").encode())
    result = lite_guard("check", "--fix", ".", cwd=root)
    assert result.returncode == 1, result.stderr
    assert f"lite_guard check --fix: added to {root}/passes.toml: 1 fail-closed entry (pass" \
        " real_pass:MyPass)" in result.stderr.splitlines(), result.stderr
    data = (root / "passes.toml").read_bytes()
    assert data.startswith(BOM)
    assert [e["name"] for e in tomllib.loads(data[3:].decode())["pass"]] == [
        "proj.passes:kept", "real_pass:MyPass"]


def test_fix_keeps_the_crlf_line_ends_of_the_files_it_edits(tmp_path):
    """The files were read as text (CRLF became LF) and written back with LF: --fix rewrote
    every line of a pyproject.toml or registry saved on Windows."""
    root = hostile_tree(tmp_path)
    (root / "pyproject.toml").write_bytes(b'[project]\r\nname = "x"\r\n\r\n[tool.lite_guard]\r\n'
                                          b'paths = ["."]\r\n')
    result = lite_guard("check", "--fix", cwd=root)
    assert result.returncode == 1, result.stderr
    data = (root / "pyproject.toml").read_bytes()
    assert data.count(b"\n") == data.count(b"\r\n") == 6, data
    assert b'registries = ["lite_guard_registry.toml"]\r\n' in data
    (root / "lite_guard_registry.toml").write_bytes(_entry("proj.p:kept").replace("\n", "\r\n").encode())
    (root / "other.py").write_text((root / "real_pass.py").read_text().replace("MyPass", "Other"))
    assert lite_guard("check", "--fix", cwd=root).returncode == 1
    data = (root / "lite_guard_registry.toml").read_bytes()
    assert b"Other" in data and data.count(b"\n") == data.count(b"\r\n"), data


# ---- the registry loader: lines as TOML counts them -------------------------------------------

def test_a_line_separator_in_a_registry_string_does_not_shift_later_error_lines(tmp_path):
    """Lines were counted with str.splitlines(): a U+2028 and a U+0085 inside a ``why`` made
    every later error point two lines too far."""
    root = hostile_tree(tmp_path)
    (root / "reg.toml").write_text(_entry("proj.p:a", why="one\u2028two\x85three") + "\n"
                                   + _entry("proj.p:b", lite="bogus"))
    result = lite_guard("registry", "list", "--no-project", "--registry", "reg.toml", cwd=root)
    assert result.returncode == 2
    assert result.stderr == ("lite_guard: reg.toml:11: unknown lite 'bogus'; expected one of: never,"
                             " always, region\n")


def test_a_header_line_inside_a_multiline_string_is_text_not_an_entry(tmp_path):
    """A ``why = \"\"\"...\"\"\"`` whose text has a ``[[pass]]`` line is valid TOML with one entry;
    the loader counted header lines and refused it: "'pass' must be an array of tables"."""
    root = hostile_tree(tmp_path)
    (root / "reg.toml").write_text(_entry("proj.p:a", why="x").replace(
        'why = "x"', 'why = """\n[[pass]]\nsee above\n"""') + "\n" + _entry("proj.p:b", lite="nope"))
    result = lite_guard("registry", "list", "--no-project", "--registry", "reg.toml", cwd=root)
    assert result.returncode == 2
    assert result.stderr == ("lite_guard: reg.toml:14: unknown lite 'nope'; expected one of: never,"
                             " always, region\n")
    (root / "reg.toml").write_text(_entry("proj.p:a", why="x").replace(
        'why = "x"', "why = '''\n[[pass]]'''"))
    listed = lite_guard("registry", "show", "--no-project", "--registry", "reg.toml", "proj.p:a",
                        cwd=root)
    assert listed.returncode == 0, listed.stderr
    assert "proj.p:a" in listed.stdout


def test_a_line_separator_in_pyproject_does_not_shift_its_error_line(tmp_path):
    root = hostile_tree(tmp_path)
    (root / "pyproject.toml").write_text('[project]\ndescription = "a\u2028b\x85c"\n'
                                         "[tool.lite_guard]\npaths = 3\n")
    result = lite_guard("check", cwd=root)
    assert result.returncode == 2
    assert result.stderr == (f"lite_guard: {root}/pyproject.toml:4: [tool.lite_guard] paths must be"
                             " a list of paths (strings)\n")


# ---- long lists of paths and patterns, and what argparse echoes ---------------------------------

def _empty_files(root, count: int) -> None:
    (root / "many").mkdir()
    for i in range(count):
        (root / "many" / f"m{i}.py").write_bytes(b"")


def test_a_folder_named_a_thousand_times_is_walked_once(tmp_path):
    """Each time a folder was named it was walked again and its files listed again before
    duplicates were dropped: "." 1,000 times over 20,000 files took 8 minutes."""
    root = hostile_tree(tmp_path)
    _empty_files(root, 1000)
    result = lite_guard("check", "--no-project", "--no-cache", *["."] * 1000, cwd=root)
    assert result.returncode == 1, result.stderr
    assert REAL_FINDING.search(result.stdout) and len(result.stdout.splitlines()) == 1, result.stdout
    assert "linted 1001 file(s)" in result.stderr
    assert result.seconds < 10, result.seconds


def test_many_exclude_patterns_over_many_files_stay_fast(tmp_path):
    """Every file was matched against every pattern with Path.match, which parses the pattern
    again at each call: 5,000 files against 1,000 patterns took about 40 s."""
    root = hostile_tree(tmp_path)
    _empty_files(root, 5000)
    patterns = [f'"gen_{i}/*.py", "m{i}_*.py", "/nowhere{i}/**/*.py"' for i in range(333)]
    (root / "pyproject.toml").write_text('[tool.lite_guard]\npaths = ["."]\nexclude = ['
                                         + ", ".join(patterns) + ', "many/m1*.py"]\n')
    result = lite_guard("check", "--no-cache", cwd=root)
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith(f"{root}/real_pass.py:4:7 LG001 "), result.stdout
    assert "linted 3890 file(s)" in result.stderr  # m1, m10-m19, m100-m199, m1000-m1999 excluded
    assert result.seconds < 10, result.seconds


def test_an_exclude_list_over_its_limit_is_one_line_exit_2(tmp_path):
    root = hostile_tree(tmp_path)
    patterns = ", ".join(f'"gen_{i}/"' for i in range(1001))
    (root / "pyproject.toml").write_text(f'[tool.lite_guard]\npaths = ["."]\nexclude = [{patterns}]\n')
    result = lite_guard("check", "--no-cache", cwd=root)
    assert result.returncode == 2
    assert result.stderr == (f"lite_guard: {root}/pyproject.toml:3: [tool.lite_guard] exclude has 1001"
                             " patterns, over the limit of 1000; exclude folders (\"build/\") or"
                             " patterns (\"tests/*.py\") rather than files one by one\n")


def test_a_usage_error_echoes_the_argument_escaped(tmp_path):
    """argparse quotes the bad argument as typed: an ESC sequence cleared the screen, a newline
    split the error line."""
    root = hostile_tree(tmp_path)
    result = lite_guard("check", "--no-project", "--torch-version", "\x1b[2J\nforged", ".", cwd=root)
    assert result.returncode == 2
    assert result.stderr == ("lite_guard check: error: argument --torch-version: not a version:"
                             " '\\x1b[2J\\nforged' (write e.g. 2.13.0) (see 'lite_guard check --help')\n")


def test_a_registry_whose_file_name_is_not_utf8_is_used_not_a_traceback(tmp_path):
    """The registry's content hash (the lint cache's key) encoded each file name as UTF-8: a
    registry named with an undecodable byte was a UnicodeEncodeError traceback, nothing linted."""
    import os

    root = hostile_tree(tmp_path)
    name = b"reg\xff\x1b[2J.toml"
    with open(os.path.join(os.fsencode(root), name), "w") as handle:
        handle.write(_entry("proj.p:a", why="TODO: say why this pass is (or is not) safe in lite mode"))
    result = lite_guard("check", "--no-project", "--registry", os.fsdecode(name), "real_pass.py",
                        cwd=root)
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines()[0] == (
        "reg\\udcff\\x1b[2J.toml:1: pass 'proj.p:a' still has the placeholder why written by --fix;"
        " decide its lite flag and replace the why with the reason")
    assert REAL_FINDING.search(result.stdout), result.stdout


# ---- the lint cache ----------------------------------------------------------------------------

def test_a_huge_planted_run_record_is_refused_in_bounded_memory(tmp_path):
    """A run record is checked by its MAC; it was read whole first, and split (a copy), so a
    record grown to 300 MB (under the 512 MiB limit) cost about 900 MB of memory to refuse. Now
    the MAC is computed over chunks before anything is kept."""
    import os
    import subprocess
    import sys

    root = hostile_tree(tmp_path)
    assert lite_guard("check", "--no-project", ".", cwd=root).returncode == 1
    (record,) = (tmp_path / "cache" / "lint-v3").glob("run-*.json")
    os.truncate(record, 300 << 20)  # sparse: no disk used
    measure = ("import resource, subprocess, sys\n"
               "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
               "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
               "print(done.stdout + done.stderr, end='')\n")
    result = subprocess.run([sys.executable, "-c", measure, os.path.join(os.path.dirname(sys.executable),
                             "lite_guard"), "check", "--no-project", "."], cwd=root, capture_output=True,
                            text=True, timeout=60, env={**os.environ, "LITE_GUARD_CACHE_DIR": str(tmp_path / "cache")})
    status, peak_kb = map(int, result.stdout.splitlines()[0].split())
    assert status == 1, result.stdout
    assert REAL_FINDING.search(result.stdout), result.stdout
    assert ("lite_guard check: note: the lint cache's record of this run failed verification and was"
            " ignored; the files were linted again") in result.stdout.splitlines()
    assert peak_kb < 250 << 10, f"{peak_kb} KB"


# ---- registry values TOML has and JSON does not -----------------------------------------------

def _config(lite_value: str, region: str = "", type: str = "float") -> str:
    return (f'[[config]]\nkey = "proj_budget"\nmodule = "functorch"\nkind = "optimization"\n'
            f'type = "{type}"\nlite_value = {lite_value}\n' + (f"region = {region}\n" if region else "")
            + 'why = "checked by hand"\n')


def test_a_nan_or_inf_config_value_is_one_line_exit_2(tmp_path):
    """TOML has nan and inf; JSON has neither: ``registry lite-config`` printed ``NaN``, which no
    JSON reader must accept, and a nan lite mode forces never equals the value it checks."""
    root = hostile_tree(tmp_path)
    (root / "nan.toml").write_text(_config("nan"))
    result = lite_guard("registry", "lite-config", "--module", "functorch", "--no-project",
                        "--registry", "nan.toml", cwd=root)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == ("lite_guard: nan.toml:6: config 'proj_budget': lite_value holds nan: nan and"
                             " inf are no value lite mode can force or compare (nan equals nothing, and"
                             " JSON, which lite-config prints, has neither); write a finite number\n")
    (root / "inf.toml").write_text(_config("1.0", region="[0.5, -inf]"))
    result = lite_guard("registry", "lite-config", "--no-project", "--registry", "inf.toml", cwd=root)
    assert result.returncode == 2
    assert result.stderr.startswith("lite_guard: inf.toml:7: config 'proj_budget': region holds -inf:")


def test_registry_show_of_a_region_list_of_numbers_prints_them(tmp_path):
    """A region policy that lists the allowed values of a number key (``region = [1, 2]``) made
    ``registry show`` join numbers as strings: TypeError, a traceback."""
    root = hostile_tree(tmp_path)
    (root / "reg.toml").write_text(_config("1", region='[2, 4, "auto", true]', type="int|str|bool"))
    result = lite_guard("registry", "show", "--no-project", "--registry", "reg.toml", "proj_budget",
                        cwd=root)
    assert result.returncode == 0, result.stderr
    assert "    region: 2, 4, auto, true" in result.stdout.splitlines(), result.stdout


def test_a_registry_with_megabytes_of_text_lists_as_plain_lines(tmp_path):
    """rich lays out about 100,000 characters a second: one pass whose ``why`` is 5 MB kept
    ``registry list`` busy for minutes. Past 250,000 characters the list is plain lines."""
    root = hostile_tree(tmp_path)
    (root / "long.toml").write_text(_entry("proj.p:long", why="word " * 400_000))
    result = lite_guard("registry", "list", "--no-project", "--registry", "long.toml", "--stage",
                        "post_grad", cwd=root)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].endswith(" passes (tab-separated: more than 250000 characters)"), lines[0]
    assert lines[1] == "name\tstage\tlite\tkind\tgated by\twhy"
    assert f"proj.p:long\tpost_grad\tnever\tfunction\t\t{'word ' * 400_000}" in lines
    assert result.seconds < 10, result.seconds


# ---- version numbers past CPython's 4300-digit limit -------------------------------------------

HUGE = "9" * 5000  # int() refuses it: ValueError, which packaging passes on (not InvalidVersion)


def test_a_torch_version_file_with_a_5000_digit_number_is_no_version_not_a_traceback(tmp_path):
    """A linted tree's own torch/version.py (or version.txt) is read for the tree's torch
    version; one stating 2.<5,000 nines> made every run over that tree a traceback."""
    root = hostile_tree(tmp_path)
    (root / "torch").mkdir()
    (root / "torch" / "__init__.py").write_text("")
    (root / "torch" / "version.py").write_text(f'__version__ = "2.{HUGE}"\n')
    (root / "torch" / "mine.py").write_text((root / "real_pass.py").read_text())
    result = lite_guard("check", "--no-project", "--no-cache", ".", cwd=root)
    assert result.returncode == 1, result.stderr
    assert REAL_FINDING.search(result.stdout), result.stdout
    assert any(line.startswith("torch/mine.py:4:7 LG001 graph pass 'MyPass' (class deriving from")
               for line in result.stdout.splitlines()), result.stdout


def test_a_registry_torch_range_with_a_5000_digit_number_is_one_line_exit_2(tmp_path):
    root = hostile_tree(tmp_path)
    (root / "reg.toml").write_text(_entry("proj.p:a") + f'torch = ">=2.11,<2.{HUGE}"\n')
    result = lite_guard("check", "--no-project", "--no-cache", "--registry", "reg.toml", ".", cwd=root)
    assert result.returncode == 2
    assert result.stderr == (f"lite_guard: reg.toml:7: invalid torch version range '>=2.11,<2.{HUGE}';"
                             " write e.g. \">=2.11,<2.14\"\n")


def test_a_torch_version_argument_with_a_5000_digit_number_is_a_usage_error(tmp_path):
    root = hostile_tree(tmp_path)
    result = lite_guard("check", "--no-project", "--torch-version", f"2.{HUGE}", ".", cwd=root)
    assert result.returncode == 2
    assert result.stderr == (f"lite_guard check: error: argument --torch-version: not a version:"
                             f" '2.{HUGE}' (write e.g. 2.13.0) (see 'lite_guard check --help')\n")


def test_names_no_entry_spells_are_looked_up_without_walking_every_pass(tmp_path):
    """Looking up a name no entry spells (every unregistered pass the lint or the guard meets)
    rebuilt the list of wildcard entries from every pass: 1,000 unregistered passes against a
    registry of 100,000 spent 19 s there. The wildcards are found once."""
    import time

    from lite_guard.registry import Registry

    rows = [_entry(f"proj.p:f{i}") for i in range(50_000)] + [_entry("proj.gen:fused_*")]
    (tmp_path / "big.toml").write_text("\n".join(rows))
    registry = Registry.load(extra_paths=[tmp_path / "big.toml"], include_shipped=False,
                             include_project=False)
    started = time.monotonic()
    misses = [registry.match_pass(f"unregistered_{i}") for i in range(2000)]
    assert time.monotonic() - started < 2
    assert misses == [None] * 2000
    assert registry.match_pass("proj.gen:fused_relu").name == "proj.gen:fused_*"


def test_a_nul_in_a_name_of_the_lintrunner_paths_file_is_one_error_and_the_rest_is_linted(tmp_path):
    """lintrunner's paths file is read exactly as written; a name holding a NUL reached the
    cache's check of where the linted paths are (os.path.realpath): ValueError, a traceback,
    nothing reported."""
    import json

    from test_hostile_cli import _lintrunner

    root = hostile_tree(tmp_path)
    (tmp_path / "paths").write_bytes(b"a\0b.py\nreal_pass.py\n")
    result = _lintrunner(root, f"@{tmp_path / 'paths'}")
    assert result.returncode == 2  # lintrunner: the linter failed (a name no file can have)
    messages = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(m["path"], m["line"], m["name"]) for m in messages] == [
        ("real_pass.py", 4, "LG001"), (None, None, "LG-ERROR")]
    assert messages[1]["description"] == "a\\x00b.py: no such file or directory"  # escaped: a terminal shows it
    assert "lite_guard check: a\\x00b.py: no such file or directory" in result.stderr.splitlines()


def test_a_name_too_long_for_the_file_system_is_one_error_and_the_rest_is_linted(tmp_path):
    """Path.is_dir raises for ENAMETOOLONG (it swallows only "no such file"): a 5,000-byte name
    among the paths ended the run with one line and no findings at all."""
    root = hostile_tree(tmp_path)
    long_name = "a" * 5000 + ".py"
    result = lite_guard("check", "--no-project", long_name, "real_pass.py", cwd=root)
    assert result.returncode == 2
    assert REAL_FINDING.search(result.stdout), result.stdout + result.stderr
    assert f"lite_guard check: {long_name}: File name too long; that path is longer than the system" \
           " allows and was not linted (shorten its folder or file names, or run from a folder" \
           " nearer to it)" in result.stderr.splitlines()


def test_an_undecodable_byte_in_a_registry_or_pyproject_is_reported_on_its_line(tmp_path):
    """Both were reported on line 0 (and utf-8-sig counts positions after a BOM)."""
    root = hostile_tree(tmp_path)
    (root / "bad.toml").write_bytes(BOM + b'[[pass]]\nname = "p.q:a"\n# \xff\n')
    result = lite_guard("registry", "list", "--no-project", "--registry", "bad.toml", cwd=root)
    assert result.returncode == 2
    assert result.stderr == ("lite_guard: bad.toml:3: cannot read registry file: 'utf-8' codec can't"
                             " decode byte 0xff in position 26: invalid start byte; point the registry"
                             " path at a regular UTF-8 TOML file\n")
    (root / "pyproject.toml").write_bytes(b'[tool.lite_guard]\npaths = ["."]\n# caf\xe9\n')
    result = lite_guard("check", cwd=root)
    assert result.returncode == 2
    assert result.stderr == (f"lite_guard: {root}/pyproject.toml:3: cannot read pyproject.toml: 'utf-8'"
                             " codec can't decode byte 0xe9 in position 37: invalid continuation byte\n")


def test_a_quoted_or_dotted_key_in_pyproject_is_reported_on_its_line(tmp_path):
    """``"paths" = 3`` and ``paths.x = 3`` are the key ``paths``; the error named the section's
    header line instead."""
    root = hostile_tree(tmp_path)
    for written in ('"paths" = 3', "paths.x = 3"):
        (root / "pyproject.toml").write_text(f"[tool.lite_guard]\n# where\n{written}\n")
        result = lite_guard("check", cwd=root)
        assert result.returncode == 2
        assert result.stderr == (f"lite_guard: {root}/pyproject.toml:3: [tool.lite_guard] paths must be"
                                 " a list of paths (strings)\n"), written


def test_trace_refuses_an_html_page_that_is_the_script_itself(tmp_path):
    """``trace --html s.py s.py`` (or a link to it) ran the script and then wrote the page over
    it: the script was gone."""
    root = hostile_tree(tmp_path)
    script = root / "s.py"
    script.write_text("print('ran')\n")
    (root / "link.py").symlink_to("s.py")
    for page in ("s.py", "link.py"):
        result = lite_guard("trace", "--html", page, "s.py", cwd=root)
        assert result.returncode == 2 and "ran" not in result.stdout
        assert result.stderr == (f"lite_guard trace: --html: {page} is the script itself, which the page"
                                 " would replace; pass another path\n")
    assert script.read_text() == "print('ran')\n"


def test_lintrunner_descriptions_cannot_steer_the_terminal_and_keep_a_pasteable_hint(tmp_path):
    """lintrunner prints each description in a terminal: a pass name's ESC sequence (an OSC that
    retitles the window) or bidi override reached it raw. Now the message is escaped as in the
    text output, and the hint's odd characters are TOML's own \\uXXXX escapes: still the name."""
    import json
    import re

    from test_hostile_cli import _lintrunner

    name = "a\x85b\u2028c\x1b]0;owned\x07\u202e"
    root = hostile_tree(tmp_path, {"obs.py": _observed(name)})
    result = _lintrunner(root, "obs.py")
    assert result.returncode == 0, result.stderr
    (message,) = [json.loads(line) for line in result.stdout.splitlines()]
    description = message["description"]
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e]", description)
    assert description.startswith("graph pass 'obs:a\\x85b\\u2028c\\x1b]0;owned\\x07\\u202e'"
                                  " (GraphTransformObserver)"), description
    hint = description.split("\n\n", 1)[1]
    assert tomllib.loads(hint)["pass"][0]["name"] == "obs:" + name


def test_a_negative_name_position_of_a_base_is_one_line_exit_2(tmp_path):
    """A negative name_position was taken silently as "no position": an observer's name given
    by position was never read, and the lint said the pass had no name."""
    root = hostile_tree(tmp_path)
    (root / "base.toml").write_text('[[base]]\nname = "proj.m:Obs"\nrole = "observer"\nname_arg = "n"\n'
                                    'name_position = -1\nwhy = "observes one named pass"\n')
    result = lite_guard("check", "--no-project", "--registry", "base.toml", ".", cwd=root)
    assert result.returncode == 2
    assert result.stderr == ("lite_guard: base.toml:5: 'name_position' must be an integer, 0 or more"
                             " (the argument's index, self excluded)\n")


@pytest.mark.parametrize("comment", ["# lite-guard: ignore[LG-001]", "# lite-guard: ignore[LG001",
                                     "# lite-guard: ignore[[LG001]]"])
def test_a_malformed_ignore_list_suppresses_nothing_not_everything(tmp_path, comment):
    """The code list was optional in the pattern: when it did not parse, what was left matched
    the bare ``# lite-guard: ignore`` (every code), so a typo hid every finding of the line."""
    root = hostile_tree(tmp_path)
    source = (root / "real_pass.py").read_text().replace(
        "class MyPass(CustomGraphPass):", f"class MyPass(CustomGraphPass):  {comment}")
    (root / "real_pass.py").write_text(source)
    result = lite_guard("check", "--no-project", "--no-cache", ".", cwd=root)
    assert result.returncode == 1, result.stderr
    assert REAL_FINDING.search(result.stdout), result.stdout


def test_a_toml_date_in_a_config_value_is_one_line_exit_2(tmp_path):
    """A config of type "any" (or a list or table of one) took TOML's dates and times, which
    ``registry lite-config`` could not print: TypeError, a traceback."""
    root = hostile_tree(tmp_path)
    (root / "dt.toml").write_text(_config("{a = 1979-05-27}", type="any"))
    result = lite_guard("registry", "lite-config", "--module", "functorch", "--no-project",
                        "--registry", "dt.toml", cwd=root)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == ("lite_guard: dt.toml:6: config 'proj_budget': lite_value holds {'a':"
                             " datetime.date(1979, 5, 27)}: a TOML date or time is no torch config value"
                             " (and JSON, which lite-config prints, has none); write it as a string\n")


def test_trace_says_where_it_wrote_the_page_on_one_escaped_line(tmp_path):
    root = hostile_tree(tmp_path)
    (root / "s.py").write_text("x = 1\n")
    result = lite_guard("trace", "--html", "p\x1b[2J\nq.html", "s.py", cwd=root)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "wrote p\\x1b[2J\\nq.html"
    assert (root / "p\x1b[2J\nq.html").read_text().startswith("<!doctype html>")
