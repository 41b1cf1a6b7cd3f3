"""Hostile inputs of round 13, through the real commands on real files (helpers of
tests/test_hostile.py, every subprocess bounded by a timeout): a coding cookie whose codec fails
as a whole, a read-only stdout, one file named twice, a registry whose file name holds ": " in
SARIF, unreadable LITE_GUARD_CACHE_MAX_RUNS values, a relative HOME, class bases written as a
walrus, a conditional or the class's own name, and one line of ten thousand statements."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from test_hostile import BIN, BOUND, DATA, REAL_PASS, VOCABULARY, assert_real_finding, check, \
    hostile_tree, lite_guard

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PASS_BODY = '''
    def __call__(self, graph):
        return graph

    def uuid(self):
        return "x"
'''
IMPORT = "from torch._inductor.custom_graph_pass import CustomGraphPass\n"


def _lines(result: subprocess.CompletedProcess, path: str) -> list[str]:
    return [line for line in result.stdout.splitlines() if line.startswith(f"{path}:")]


def _hint(name: str) -> str:
    return (f"is not in any registry; register it: [[pass]] name = \"{name}\", stage = \"post_grad\","
            " lite = \"never\", kind = \"class\"")


# ---- (a) a coding cookie whose codec fails as a whole ----------------------------------------

UNDEFINED = b"# coding: undefined\nx = 1\n"
UNDEFINED_LINE = ("undefined.py:1:1 LG900 cannot decode file: decoding with 'undefined' codec failed"
                  " (UnicodeError: undefined encoding); the file was not checked (save it as UTF-8,"
                  " or fix its coding cookie)")


def test_a_codec_that_fails_whole_is_lg900_cannot_decode_not_a_linter_failure(tmp_path):
    """``# coding: undefined`` (a codec that raises UnicodeError, not UnicodeDecodeError) was
    "the linter failed on this file ... please report it": a file Python refuses to decode is
    a file that cannot be decoded, said so, and the other files' findings stay."""
    result = check(hostile_tree(tmp_path, {"undefined.py": UNDEFINED}), "--no-cache")
    assert result.returncode == 1, result.stderr
    assert _lines(result, "undefined.py") == [UNDEFINED_LINE]
    assert_real_finding(result)


def test_flake8_on_a_file_whose_codec_fails_whole_reports_it_not_a_traceback(tmp_path):
    """The flake8 plugin runs the engine in flake8's process: the same file was a traceback
    that ended the whole flake8 run, every other file's findings lost."""
    root = hostile_tree(tmp_path, {"undefined.py": UNDEFINED})
    result = subprocess.run([str(BIN / "flake8"), "--select", "LG", "undefined.py", "real_pass.py"],
                            cwd=root, capture_output=True, text=True, timeout=BOUND,
                            stdin=subprocess.DEVNULL)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert UNDEFINED_LINE.replace("undefined.py:1:1 ", "undefined.py:1:1: ") in lines, lines
    assert any(line.startswith("real_pass.py:4:7: LG001 graph pass 'real_pass:MyPass'")
               for line in lines), lines


# ---- (b) the output cannot be written ------------------------------------------------------------

def test_a_read_only_stdout_is_one_line_that_says_so(tmp_path):
    """``lite_guard check 1</dev/null`` (descriptor 1 open for reading only) said "the system
    refused: Bad file descriptor; free resources and run again", which no rerun fixes."""
    root = hostile_tree(tmp_path)
    with open(os.devnull, "rb") as read_only:
        result = subprocess.run([str(BIN / "lite_guard"), "check", "--no-project", "--registry",
                                 str(VOCABULARY), "."], cwd=root, stdout=read_only,
                                stderr=subprocess.PIPE, text=True, timeout=BOUND,
                                stdin=subprocess.DEVNULL,
                                env={**os.environ, "LITE_GUARD_CACHE_DIR": str(tmp_path / "cache")})
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "lite_guard: cannot write the output: standard output is not open for writing; redirect it"
        " to a file or a pipe"]


# ---- (c) one file named twice ------------------------------------------------------------------

@pytest.mark.parametrize("spellings", [(".", "{root}"), ("real_pass.py", "../tree/real_pass.py"),
                                       ("real_pass.py", "{root}/./real_pass.py")])
def test_one_file_named_by_two_spellings_is_linted_and_reported_once(tmp_path, spellings):
    """``lite_guard check . $PWD`` reported every finding twice (and counted it twice): one
    file is linted once, under the first name given. (Two links are two modules, still two.)"""
    root = hostile_tree(tmp_path)
    paths = [s.format(root=root) for s in spellings]
    result = lite_guard("check", "--no-project", "--registry", str(VOCABULARY), *paths, cwd=root)
    assert result.returncode == 1, result.stderr
    assert len(result.stdout.splitlines()) == 1, result.stdout
    assert_real_finding(result)
    assert "linted 1 file(s)" in result.stderr and "\n1 finding(s)" in result.stderr, result.stderr


# ---- (d) SARIF of a registry problem in a file whose name holds ": " -----------------------------

def test_sarif_puts_a_registry_problem_on_a_registry_whose_name_holds_colon_space(tmp_path):
    """A registry problem is the line ``path:line: message``; SARIF split it at the first ": ",
    so a registry named ``my: reg.toml`` was reported on a file ``my`` with the message
    ``reg.toml:1: pass ...``. It is split where the lintrunner adapter splits, at ``:<line>: ``."""
    import jsonschema

    from lite_guard.hints import WHY_PLACEHOLDER

    root = hostile_tree(tmp_path)
    (root / "my: reg.toml").write_text(f'[[pass]]\nname = "mypkg.passes:Foo"\nstage = "post_grad"\n'
                                       f'lite = "never"\nwhy = "{WHY_PLACEHOLDER}"\n')
    result = check(root, "--registry", "my: reg.toml", "--format", "sarif")
    assert result.returncode == 1, result.stderr
    log = json.loads(result.stdout)
    schema = json.loads((DATA / "sarif-schema-2.1.0.json").read_text())
    jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker()).validate(log)
    (problem,) = [r for r in log["runs"][0]["results"] if r["ruleId"] == "LG-REGISTRY"]
    assert problem["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "my%3A%20reg.toml", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 1}}
    assert problem["message"]["text"].startswith(
        "pass 'mypkg.passes:Foo' still has the placeholder why written by --fix")


# ---- (e) environment variables with values int() cannot read -------------------------------------

@pytest.mark.parametrize("value, shown", [("9" * 5000, "'99999999999999999999...99999999'"),
                                          ("\u00b2", "'\u00b2'")])
def test_a_cache_run_limit_int_cannot_read_is_one_warning_not_a_traceback(tmp_path, value, shown):
    """LITE_GUARD_CACHE_MAX_RUNS of 5,000 digits (past CPython's int limit) or "²" (a digit to
    isdigit(), not to int()) was a ValueError traceback of every lint run and every compile
    (the registry cache reads the same setting). Now one warning, the default, and the lint."""
    from lite_guard import registry_cache

    result = check(hostile_tree(tmp_path), env={"LITE_GUARD_CACHE_MAX_RUNS": value})
    assert result.returncode == 1, result.stderr
    assert_real_finding(result)
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    assert warnings == [f"lite_guard: warning: LITE_GUARD_CACHE_MAX_RUNS={shown} is not a number of"
                        " runs from 1 to 1048576; keeping at most 64"]
    os.environ["LITE_GUARD_CACHE_MAX_RUNS"] = value
    try:
        assert registry_cache.max_runs() is None  # the compiler's caches: the default, no traceback
    finally:
        del os.environ["LITE_GUARD_CACHE_MAX_RUNS"]


def test_a_relative_home_is_no_cache_folder_of_the_working_directory(tmp_path):
    """HOME=h made the registry and verdict caches ``h/.cache/lite-guard`` of whatever directory
    the compiler ran in (the project: its cache, secret and all, inside the checkout), while the
    lint cache (platformdirs) used the password database's home. A relative HOME counts as
    unset for both, as XDG and platformdirs say."""
    import pwd

    env = {k: v for k, v in os.environ.items()
           if k not in ("LITE_GUARD_CACHE_DIR", "XDG_CACHE_HOME")}
    code = ("from lite_guard.registry_cache import default_dir\n"
            "from lint_rules.cache import default_cache_dir\n"
            "print(default_dir()); print(default_cache_dir())\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                            text=True, timeout=BOUND, env={**env, "HOME": "h", "PYTHONPATH": REPO})
    assert result.returncode == 0, result.stderr
    expected = os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".cache", "lite-guard")
    assert result.stdout.splitlines() == [expected, expected]


# ---- (f) class bases the index did not read ------------------------------------------------------

def test_a_base_written_as_a_walrus_is_read_and_the_name_it_binds_too(tmp_path):
    """``class P(Base := CustomGraphPass)`` had no base the index could read: the pass was not
    reported, nor ``class Q(Base)`` below it."""
    source = (IMPORT + "\n\nclass P(Base := CustomGraphPass):" + PASS_BODY
              + "\n\nclass Q(Base):" + PASS_BODY)
    result = check(hostile_tree(tmp_path, {"walrus.py": source}), "--no-cache")
    assert result.returncode == 1, result.stderr
    assert _lines(result, "walrus.py") == [
        f"walrus.py:4:7 LG001 graph pass 'walrus:P' (class deriving from CustomGraphPass) {_hint('walrus:P')}",
        f"walrus.py:12:7 LG001 graph pass 'walrus:Q' (class deriving from CustomGraphPass) {_hint('walrus:Q')}"]
    assert_real_finding(result)


def test_a_base_that_is_either_of_two_is_a_pass_when_either_is_a_pass_base(tmp_path):
    """``class P(CustomGraphPass if ok else object)``, ``class R(mine or CustomGraphPass)``:
    either may be the base when the class statement runs; the pass was not reported."""
    source = (IMPORT + "ok = mine = None\n\n\nclass P(CustomGraphPass if ok else object):" + PASS_BODY
              + "\n\nclass R(mine or CustomGraphPass):" + PASS_BODY)
    result = check(hostile_tree(tmp_path, {"either.py": source}), "--no-cache")
    assert result.returncode == 1, result.stderr
    assert _lines(result, "either.py") == [
        f"either.py:5:7 LG001 graph pass 'either:P' (class deriving from CustomGraphPass) {_hint('either:P')}",
        f"either.py:13:7 LG001 graph pass 'either:R' (class deriving from CustomGraphPass) {_hint('either:R')}"]
    assert_real_finding(result)


def test_a_class_named_as_its_base_derives_from_what_the_name_was_before(tmp_path):
    """``class CustomGraphPass(CustomGraphPass)`` (a project's subclass under the name it
    imports) and ``class Pass(Pass)`` (a class extending the one it replaces) read as classes
    deriving from themselves, a cycle: neither pass was reported. The base is the name's binding
    before the class statement; both classes of a redefinition are ``module:Pass`` at run time."""
    shadow = IMPORT + "\n\nclass CustomGraphPass(CustomGraphPass):" + PASS_BODY
    redefined = (IMPORT + "\n\nclass Pass(CustomGraphPass):" + PASS_BODY
                 + "\n\nclass Pass(Pass):\n    def __call__(self, graph):\n        return graph\n")
    root = hostile_tree(tmp_path, {"shadow.py": shadow, "redefined.py": redefined})
    for env in ({}, {"LITE_GUARD_NO_PREFILTER": "1"}):
        result = check(root, "--no-cache", env=env)
        assert result.returncode == 1, result.stderr
        assert _lines(result, "shadow.py") == [
            "shadow.py:4:7 LG001 graph pass 'shadow:CustomGraphPass' (class deriving from"
            f" CustomGraphPass) {_hint('shadow:CustomGraphPass')}"]
        assert _lines(result, "redefined.py") == [
            f"redefined.py:{line}:7 LG001 graph pass 'redefined:Pass' (class deriving from"
            f" CustomGraphPass) {_hint('redefined:Pass')}" for line in (4, 12)]
        assert_real_finding(result)


# ---- (g) one huge line ---------------------------------------------------------------------------

def test_one_line_of_ten_thousand_statements_lints_as_fast_as_ten_thousand_lines(tmp_path):
    """A node's column (in characters) re-encoded its whole line once per node: one line of
    10,000 statements with a non-ASCII character (450 KB) took 26 s, quadratic, where 10,000
    lines take 2 s; at the default budget that is an LG900 "took longer" and every pass in the
    file unreported. Each line's character widths are now read once."""
    count = 10_000
    line = "\u00e9 = 1; " + "; ".join(f"p{i} = PatternMatcherPass(pass_name='\u00e9{i}')"
                                      for i in range(count))
    source = "from torch._inductor.pattern_matcher import PatternMatcherPass\n" + line + "\n"
    result = check(hostile_tree(tmp_path, {"long.py": source}), "--no-cache", "--file-timeout", "10")
    assert result.returncode == 1, result.stderr
    found = _lines(result, "long.py")
    assert len(found) == count and not any(" LG900 " in f for f in found), found[:3]
    for i in (0, count - 1):  # the column in characters, as editors count
        column = line.index(f"'\u00e9{i}'") + 1
        assert (f"long.py:2:{column} LG001 graph pass 'long:\u00e9{i}' (PatternMatcherPass) is not in"
                " any registry") in result.stdout
    assert_real_finding(result)


# ---- (h) a registry name spelled as Python never spells it ---------------------------------------

def test_a_registry_class_name_python_folds_is_one_line_naming_the_spelling_python_uses(tmp_path):
    """``name = "real_pass:ＭyPass"`` (a fullwidth M, a confusable) loaded, and matched nothing
    ever: Python folds identifiers to NFKC, so ``class ＭyPass`` is ``MyPass``; the lint kept
    reporting ``real_pass:MyPass`` and the guard refused it, with no word on why. A pattern
    pass, named by a string, keeps its spelling."""
    root = hostile_tree(tmp_path)
    (root / "reg.toml").write_text('\n[[pass]]\nname = "real_pass:\uff2dyPass"\nstage = "post_grad"\n'
                                   'kind = "class"\nlite = "never"\n\n[[pass]]\n'
                                   'name = "real_pass:\uff2dy pattern"\nstage = "post_grad"\n'
                                   'kind = "pattern"\nlite = "never"\n', encoding="utf-8")
    result = check(root, "--registry", "reg.toml")
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        "lite_guard: reg.toml:3: pass 'real_pass:\uff2dyPass' (class): Python spells that qualified"
        " name 'real_pass:MyPass' (identifiers are NFKC-normalised), so this name matches no class;"
        " write name = \"real_pass:MyPass\""]
    (root / "reg.toml").write_text((root / "reg.toml").read_text().replace("\uff2dyPass", "MyPass"))
    result = check(root, "--registry", "reg.toml")
    assert result.returncode == 1, result.stderr
    # MyPass is registered now; the pattern's name, kept as written, is only not in this tree
    assert result.stdout.splitlines() == [
        "reg.toml:8:1 LG003 registry pass 'real_pass:\uff2dy pattern' is not found in the linted"
        f" tree (torch {_installed_torch()}); remove the entry, or limit it with torch ="
        f" \"<{_installed_torch().split('+')[0]}\" if it was removed upstream"]


def _installed_torch() -> str:
    from importlib.metadata import version

    return version("torch")


# ---- (i) trace of a script that forks ------------------------------------------------------------

def test_trace_of_a_script_that_forks_reports_once_and_the_child_keeps_its_status(tmp_path):
    """A child the script forked returned through runpy into trace and printed the ledgers too:
    ``--json`` gave two JSON documents on stdout, which no reader parses. The child now exits
    with the status its ``sys.exit`` gave, and only the traced process reports."""
    script = tmp_path / "forks.py"
    script.write_text("import os, sys\npid = os.fork()\nif pid == 0:\n    sys.exit(3)\n"
                      "_, status = os.waitpid(pid, 0)\n"
                      "print('child status', os.waitstatus_to_exitcode(status), file=sys.stderr)\n")
    result = lite_guard("trace", "--json", str(script), cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"script": str(script), "lite": [], "default": [],
                                         "violation": None, "failure": None}
    assert "child status 3" in result.stderr.splitlines()
    said = [line for line in result.stderr.splitlines() if line.startswith("lite_guard trace:")]
    assert len(said) == 1 and re.fullmatch(
        rf"lite_guard trace: forked child \d+: {re.escape(str(script))} exited with 3 in lite mode",
        said[0]), said


# ---- (j) fuzz drawing a long program -------------------------------------------------------------

def test_fuzz_with_a_huge_max_steps_under_warnings_as_errors_runs_not_a_traceback(tmp_path):
    """``--max-steps 100000000`` (any seed that draws a long program) made hypothesis warn that
    the program's repr (41 KB) is expensive: two raw lines on stderr, and under
    PYTHONWARNINGS=error, a CI setting, a HypothesisWarning traceback that ended the run."""
    result = lite_guard("fuzz", "--count", "1", "--max-steps", "100000000", "--seed",
                        "123456789012345678901234567890", "--out", str(tmp_path / "repros"),
                        cwd=tmp_path, env={"PYTHONWARNINGS": "error"}, timeout=150)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["1 passed, 0 failed, 0 skipped"]
    assert "Warning" not in result.stderr, result.stderr


def test_a_cache_dir_written_with_a_tilde_is_the_home_folder_not_a_folder_named_tilde(tmp_path):
    """``LITE_GUARD_CACHE_DIR: ~/.cache/lg`` in a CI file's env (YAML and docker expand no
    tilde) was a relative path: the lint refused it as a cache inside the linted tree (a
    warning each run, never a warm run) and the compiler made a folder named "~" in the
    project. A leading "~" is the home folder, as a shell would have read it."""
    root = hostile_tree(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "LITE_GUARD_CACHE_DIR": "~/lg"}
    first = check(root, env=env)
    second = check(root, env=env)
    for result in (first, second):
        assert result.returncode == 1, result.stderr
        assert_real_finding(result)
        assert "warning" not in result.stderr, result.stderr
    assert "linted 1 file(s) (0 parsed, 1 cached)" in second.stderr, second.stderr
    assert sorted(p.name for p in root.iterdir()) == ["real_pass.py"]  # no "~" folder
    assert (home / "lg" / "lint-v3").is_dir()
    code = "from lite_guard.registry_cache import default_dir; print(default_dir())"
    shown = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                           timeout=BOUND, env={**os.environ, **env, "PYTHONPATH": REPO})
    assert shown.stdout.strip() == str(home / "lg")  # the compiler's caches too


# ---- (k) an empty path on the command line -------------------------------------------------------

def test_an_empty_path_to_lint_is_a_usage_error_not_the_working_directory(tmp_path):
    """``lite_guard check "$CHANGED_FILES"`` with nothing changed passed "", which is
    Path("."): the whole working directory was linted as if it had been named."""
    root = hostile_tree(tmp_path)
    for paths in ([""], ["real_pass.py", ""]):
        result = lite_guard("check", "--no-project", "--registry", str(VOCABULARY), "--", *paths,
                            cwd=root)
        assert result.returncode == 2
        assert result.stdout == ""
        assert result.stderr.splitlines() == [
            "lite_guard check: error: argument PATH: an empty path; name a file or folder to lint"
            " ('.' for this folder) (see 'lite_guard check --help')"]


# ---- (l) coding cookies as Python's tokenizer reads them -----------------------------------------

def test_coding_cookies_are_read_as_pythons_tokenizer_reads_them(tmp_path):
    """Python's tokenizer reads "utf-8-<anything>" as UTF-8 (``get_normal_name``): under a
    byte-order mark ``# coding: utf-8-sig``, which Python runs, was LG900 "Python refuses" and
    the file's pass unreported; ``# coding: utf-8-unix`` (Emacs writes it) was "unknown
    encoding". ``UTF8`` under a byte-order mark, which Python does refuse, is refused."""
    bom = b"\xef\xbb\xbf"
    body = REAL_PASS.replace("MyPass", "CookiePass").encode()
    root = hostile_tree(tmp_path, {"sig.py": bom + b"# -*- coding: utf-8-sig -*-\n" + body,
                                   "unix.py": b"# -*- coding: utf-8-unix -*-\n" + body,
                                   "latin.py": b"# coding: latin-1-x\n" + body,
                                   "upper.py": bom + b"# coding: UTF8\nx = 1\n"})
    for name in ("sig", "unix", "latin"):
        compile((root / f"{name}.py").read_bytes(), f"{name}.py", "exec")  # Python runs each
    with pytest.raises(SyntaxError, match="encoding problem: UTF8 with BOM"):
        compile((root / "upper.py").read_bytes(), "upper.py", "exec")
    result = check(root, "--no-cache")
    assert result.returncode == 1, result.stderr
    for name in ("sig", "unix", "latin"):
        assert _lines(result, f"{name}.py") == [
            f"{name}.py:5:7 LG001 graph pass '{name}:CookiePass' (class deriving from"
            f" CustomGraphPass) {_hint(f'{name}:CookiePass')}"]
    assert _lines(result, "upper.py") == [
        "upper.py:1:1 LG900 cannot decode file: it starts with a UTF-8 byte-order mark but its"
        " coding cookie says UTF8, which Python refuses; the file was not checked (save it as"
        " UTF-8, or fix its coding cookie)"]
    assert_real_finding(result)
