"""Hostile inputs the round-7 red team found breaking the contract (one clear line, the
documented exit code, nothing skipped, no traceback): a TOML number past CPython's int limit, a
cache secret that is a directory (the lint's and the compiler's registry cache), an exclude that
excludes everything, a pass base reached through a long alias or re-export chain, a bidi override
in a file name. Real files, the real CLI (helpers of tests/test_hostile.py)."""

from __future__ import annotations

import os
import subprocess
import sys

from test_hostile import BOUND, REAL_FINDING, VOCABULARY, hostile_tree, lite_guard

HUGE = "1" + "0" * 4400  # past CPython's 4300-digit int/str conversion limit
HUGE_LINE = ("unreadable TOML value: Exceeds the limit (4300 digits) for integer string conversion:"
             " value has 4401 digits; write it as a string or a smaller number")
PASS_BODY = ':\n    def __call__(self, graph):\n        return graph\n\n    def uuid(self):\n        return "h"\n'
BASE = "from torch._inductor.custom_graph_pass import CustomGraphPass"


def test_a_huge_toml_number_in_a_registry_is_one_line_and_exit_2(tmp_path):
    root = hostile_tree(tmp_path, {"reg.toml": '[[pass]]\nname = "m:P"\nstage = "post_grad"\n'
                                               f'lite = "never"\nwhy = "x"\nunused = {HUGE}\n'})
    for args in (("check", "--no-project", "--registry", "reg.toml", "real_pass.py"),
                 ("registry", "list", "--no-project", "--registry", "reg.toml")):
        result = lite_guard(*args, cwd=root)
        assert (result.returncode, result.stdout) == (2, ""), result.stderr
        assert result.stderr == f"lite_guard: reg.toml:6: {HUGE_LINE}\n"


def test_a_huge_toml_number_in_any_pyproject_table_is_one_line_and_exit_2(tmp_path):
    root = hostile_tree(tmp_path, {"pyproject.toml": f"[tool.other]\nx = {HUGE}\n"})
    result = lite_guard("check", "real_pass.py", cwd=root)
    assert (result.returncode, result.stdout) == (2, ""), result.stderr
    assert result.stderr == f"lite_guard: {root / 'pyproject.toml'}:2: {HUGE_LINE}\n"


def test_a_lint_cache_secret_that_is_a_directory_is_a_warning_and_the_files_are_linted(tmp_path):
    root = hostile_tree(tmp_path)
    lite_guard("check", "--no-project", "--registry", str(VOCABULARY), ".", cwd=root)  # the cache
    secret = next((tmp_path / "cache").glob("lint-v*/secret.key"))
    secret.unlink()
    secret.mkdir(mode=0o700)
    result = lite_guard("check", "--no-project", "--registry", str(VOCABULARY), ".", cwd=root)
    assert result.returncode == 1 and REAL_FINDING.search(result.stdout), result.stdout + result.stderr
    assert result.stderr.splitlines()[0] == (
        f"lite_guard: warning: lint cache not used: {secret} is not a private file of yours"
        " (a directory); delete it to make a new one")


def test_a_registry_cache_secret_that_is_a_directory_does_not_break_the_compiler(tmp_path):
    """The compiler's registry cache (lite_guard/registry_cache.py): `import lite_compiler`
    raised IsADirectoryError; now the cache is passed over and the registry parsed."""
    env = {**os.environ, "LITE_GUARD_CACHE_DIR": str(tmp_path / "cache")}
    probe = [sys.executable, "-c", "import lite_compiler, torch;"
             "f = torch.compile(lambda x: x.sin() * 2, backend='lite');"
             "x = torch.randn(8); print(torch.equal(f(x), x.sin() * 2))"]
    first = subprocess.run(probe, env=env, capture_output=True, text=True, timeout=BOUND * 3)
    assert first.stdout == "True\n", first.stderr
    secret = next((tmp_path / "cache").glob("registry-v*/secret.key"))
    secret.unlink()
    secret.mkdir(mode=0o700)
    second = subprocess.run(probe, env=env, capture_output=True, text=True, timeout=BOUND * 3)
    assert "Traceback" not in second.stderr and second.stdout == "True\n", second.stderr


def test_an_exclude_that_excludes_every_file_is_an_error_not_a_green_run(tmp_path):
    root = hostile_tree(tmp_path)
    for pattern in ("*", "**"):
        (root / "pyproject.toml").write_text(
            f'[tool.lite_guard]\npaths = ["."]\nregistries = ["{VOCABULARY}"]\nexclude = ["{pattern}"]\n')
        result = lite_guard("check", cwd=root)
        assert (result.returncode, result.stdout) == (2, ""), result.stderr
        assert result.stderr.splitlines()[0] == (
            f"lite_guard check: exclude ['{pattern}'] excludes every one of the 1 Python file(s)"
            " under the directories to lint, so nothing would be checked; narrow [tool.lite_guard]"
            " exclude")
    # files named on the command line (a pre-commit run) are linted as named: no such error
    result = lite_guard("check", "real_pass.py", cwd=root)
    assert result.returncode == 1 and REAL_FINDING.search(result.stdout), result.stderr


def test_a_pass_base_behind_a_long_alias_chain_is_found_or_reported(tmp_path):
    chain = lambda n: "\n".join([BASE, "a0 = CustomGraphPass", *(f"a{i} = a{i - 1}" for i in range(1, n + 1)),
                                 f"class Hidden(a{n}){PASS_BODY}"])
    root = hostile_tree(tmp_path, {"short.py": chain(20), "long.py": chain(60)})
    result = lite_guard("check", "--no-project", "--no-cache", "--registry", str(VOCABULARY), ".",
                        cwd=root, env={"LITE_GUARD_NO_PREFILTER": "1"})
    lines = result.stdout.splitlines()
    assert result.returncode == 1, result.stderr
    assert lines[0] == ("long.py:1:1 LG900 name 'a11' is an alias or re-export more than 48 deep;"
                        " it was not followed further, so a class or pass named through it was not"
                        " checked (shorten the chain)")
    assert lines[2].startswith("short.py:23:7 LG001 graph pass 'short:Hidden' (class deriving from"
                               " CustomGraphPass)"), lines


def test_a_base_re_exported_through_many_modules_is_found(tmp_path):
    files = {"m0.py": f"{BASE} as B\n", **{f"m{i}.py": f"from m{i - 1} import B\n" for i in range(1, 20)},
             "use.py": f"from m19 import B\nclass Hidden(B){PASS_BODY}"}
    root = hostile_tree(tmp_path, files)
    result = lite_guard("check", "--no-project", "--no-cache", "--registry", str(VOCABULARY), ".",
                        cwd=root)
    assert result.returncode == 1 and "use.py:2:7 LG001 graph pass 'use:Hidden'" in result.stdout, \
        result.stdout + result.stderr


def test_a_bidi_override_in_a_file_name_is_escaped(tmp_path):
    root = hostile_tree(tmp_path, {"evil\u202eyp.txt.py": BASE + f"\n\n\nclass MyPass(CustomGraphPass){PASS_BODY}"})
    result = lite_guard("check", "--no-project", "--registry", str(VOCABULARY), ".", cwd=root)
    assert result.returncode == 1 and "\u202e" not in result.stdout + result.stderr
    assert result.stdout.splitlines()[0].startswith("evil\\u202eyp.txt.py:4:7 LG001"), result.stdout
