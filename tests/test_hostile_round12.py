"""Hostile inputs of round 12, through the real CLI (helpers of tests/test_hostile.py) and the real
caches on real files: the registry and verdict caches that grew forever beside the bounded lint
cache; flake8 losing a run on a file name it could not encode, and printing a registry error
that forged a report line; a string reading "# noqa" that silenced a pass; a small file too deep
for the parser called out of memory; [tool.lite_guard] paths pointing outside the project or at
no Python file (a green run that linted nothing); concurrent runs pruning one cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from lite_guard import registry_cache
from test_hostile import BOUND, REAL_PASS, assert_real_finding, check, hostile_tree, lite_guard

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REGISTRY = """
[[pass]]
name = "mypkg.passes:{name}"
stage = "post_grad"
lite = "never"
why = "a project pass"
"""


# ---- (a) every cache is bounded as the lint cache is ---------------------------------------------

@pytest.fixture()
def cache_dir(tmp_path, monkeypatch):
    directory = tmp_path / "cache"
    monkeypatch.setenv("LITE_GUARD_CACHE_DIR", str(directory))
    monkeypatch.delenv(registry_cache.ENV_SWITCH, raising=False)
    monkeypatch.delenv("LITE_GUARD_VERDICT_CACHE", raising=False)
    return directory


def _aged(path, seconds_ago):
    when = time.time() - seconds_ago
    os.utime(path, (when, when))


def test_the_registry_cache_keeps_the_runs_the_lint_cache_setting_names(cache_dir, tmp_path,
                                                                         monkeypatch):
    """The registry cache kept 64 entries whatever LITE_GUARD_CACHE_MAX_RUNS said, had no bound
    in bytes, and a killed process's temp file stayed forever. It follows the lint cache's
    policy now: that many entries by last use, 1 GiB, temp files gone after an hour."""
    monkeypatch.setenv("LITE_GUARD_CACHE_MAX_RUNS", "2")
    layout = cache_dir / registry_cache.LAYOUT

    def load(name):
        path = tmp_path / f"{name}.toml"
        path.write_text(REGISTRY.format(name=name))
        assert [p.name for p in registry_cache.cached_registry([path]).passes] == [
            f"mypkg.passes:{name}"]

    def entries():
        return sorted(p.name for p in layout.glob("*.pickle"))

    load("first")
    (first,) = entries()
    _aged(layout / first, 60)
    load("second")
    load("first")  # a hit: now the most recently used
    killed = layout / ".deadbeef-1-0000.tmp"
    killed.write_bytes(b"half an entry")
    _aged(killed, 7200)
    load("third")
    left = entries()
    assert len(left) == 2 and first in left, left  # the second (least recently used) went
    assert not killed.exists()


def test_the_registry_cache_stays_under_its_byte_bound(cache_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(registry_cache, "MAX_BYTES", 1)  # any entry is over: only the new one stays
    for name in ("a", "b", "c"):
        path = tmp_path / f"{name}.toml"
        path.write_text(REGISTRY.format(name=name))
        registry_cache.cached_registry([path])
    assert len(list((cache_dir / registry_cache.LAYOUT).glob("*.pickle"))) == 1


def test_the_verdict_cache_is_bounded_by_the_same_setting(cache_dir, monkeypatch):
    """Every fused signature's verdict was a file kept forever. Now a batch of verdicts is
    pruned as the other caches are: PER_RUN verdicts per run of LITE_GUARD_CACHE_MAX_RUNS,
    by last use (a hit is a use)."""
    from lite_compiler.verdict_cache import LAYOUT, PER_RUN, VerdictStore

    monkeypatch.setenv("LITE_GUARD_CACHE_MAX_RUNS", "1")
    verdict = {"bitwise": True, "reason": "r", "coverage": "c", "proven": True}
    names = [f"{i:064x}" for i in range(PER_RUN + 5)]
    store = VerdictStore.open()
    for name in names[:PER_RUN]:
        store.put(name, verdict)
    store.close()
    for name in names[:PER_RUN]:
        _aged(cache_dir / LAYOUT / f"{name}.json", 600 - int(name, 16))  # older first
    store = VerdictStore.open()
    assert store.get(names[0]) == verdict  # the oldest, used again
    for name in names[PER_RUN:]:
        store.put(name, verdict)
    store.close()
    left = {p.stem for p in (cache_dir / LAYOUT).glob("*.json")}
    assert len(left) == PER_RUN and names[0] in left
    assert set(names[1:6]).isdisjoint(left)  # the five least recently used went


# ---- (b) flake8 printing a file name it cannot encode ---------------------------------------------

def _flake8(root, tmp_path, *args):
    # The report plugin as pip installs it: an entry point in a dist-info on the path.
    site = tmp_path / "site"
    meta = site / "lite_guard_formatter-0.dist-info"
    meta.mkdir(parents=True)
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: lite-guard-formatter\nVersion: 0\n")
    (meta / "entry_points.txt").write_text(
        "[flake8.report]\nlite-guard = lint_rules.flake8_format:EscapingFormatter\n")
    return subprocess.run([sys.executable, "-m", "flake8", "--select", "LG", *args, "."], cwd=root,
                          capture_output=True, timeout=BOUND,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([REPO, str(site)]),
                               "LITE_GUARD_CACHE_DIR": str(tmp_path / "cache")})


def test_flake8_with_our_formatter_prints_an_undecodable_file_name_escaped(tmp_path):
    """flake8's formatter raised UnicodeEncodeError on ``bad\\xff.py`` and the run was lost.
    ``--format=lite-guard`` prints it as ``lite_guard check`` does; flake8's own formatters are
    flake8's (documented in SECURITY.md)."""
    root = hostile_tree(tmp_path)
    with open(os.path.join(os.fsencode(root), b"bad\xff.py"), "w") as handle:
        handle.write(REAL_PASS)
    result = _flake8(root, tmp_path, "--format=lite-guard", "--show-source")
    out = result.stdout.decode("utf-8")
    assert result.returncode == 1 and b"Traceback" not in result.stderr, result.stderr
    assert "./bad\\udcff.py:4:7: LG001 graph pass 'bad\\udcff:MyPass' (class deriving from" \
           " CustomGraphPass) is not in any registry" in out, out
    assert "./real_pass.py:4:7: LG001 graph pass 'real_pass:MyPass'" in out
    assert "class MyPass(CustomGraphPass):" in out  # --show-source still shows the line


# ---- suppression comments that are no comments -----------------------------------------------------

HOOKED = '''from torch._inductor import config


def my_pass(graph):
    return graph


config.post_grad_custom_post_pass = my_pass; why = "{text}"
'''
STORE = '''from torch._inductor import config as inductor_config


def apply(overrides):
    for key, value in overrides.items():
        setattr(inductor_config, key, value); why = "{text}"
'''


def test_a_suppression_inside_a_string_silences_nothing(tmp_path):
    """The line's text was searched for "# lite-guard: ignore" / "# noqa": a string holding it,
    on the line of a hook store, hid the unregistered pass installed there (a green run). Only
    comments, as Python's tokenizer finds them, suppress now; a real comment still does."""
    root = hostile_tree(tmp_path, {
        "hook.py": HOOKED.format(text="# lite-guard: ignore"),
        "store.py": STORE.format(text="# noqa"),
        "quiet.py": HOOKED.replace("my_pass; why", "my_pass  # noqa: LG001\nwhy").format(text=""),
    })
    result = check(root, "--no-cache")
    assert result.returncode == 1, result.stderr
    assert_real_finding(result)
    found = [line.split(" is not in")[0].split(" under a key")[0] for line in result.stdout.splitlines()
             if line.startswith(("hook.py", "store.py", "quiet.py"))]
    assert found == [
        "hook.py:8:37 LG001 graph pass 'hook:my_pass' (installed in post_grad_custom_post_pass)",
        "store.py:6:34 LG006 store into torch._inductor.config"], result.stdout


def test_the_end_of_a_multiline_string_that_reads_like_a_suppression_silences_nothing(tmp_path):
    text = HOOKED.replace('config.post_grad_custom_post_pass = my_pass; why = "{text}"',
                          'doc = """\n# lite-guard: ignore[LG001] """; config.post_grad_custom_post_pass'
                          ' = my_pass')
    root = hostile_tree(tmp_path, {"hook.py": text})
    result = check(root, "--no-cache")
    assert result.returncode == 1, result.stderr
    assert "hook.py:9:70 LG001 graph pass 'hook:my_pass'" in result.stdout, result.stdout


# ---- a MemoryError that is nesting ----------------------------------------------------------------

def test_a_small_file_too_deep_for_the_parser_says_nested_not_out_of_memory(tmp_path):
    """CPython's parser raises MemoryError when its own stack overflows (200,000 nested unary
    minus signs: a 200 KB file). Round 11 called every MemoryError "ran out of memory (a worker
    may add 4 GiB)", sending the reader after memory; this one is nesting."""
    root = hostile_tree(tmp_path, {"deep.py": "import torch\nx = " + "-" * 200_000 + "1\n"})
    result = check(root, "--no-cache", "--check-syntax")
    assert result.returncode == 1, result.stderr
    assert_real_finding(result)
    assert "deep.py:1:1 LG900 cannot parse: nested too deeply for Python's parser; the file was" \
           " not checked" in result.stdout.splitlines(), result.stdout


def test_a_registry_error_in_flake8_is_one_escaped_line(tmp_path):
    """The flake8 plugin printed the registry's error as it was: a duplicate pass named with an
    ESC sequence and a newline cleared the terminal and forged a report line of its own."""
    root = hostile_tree(tmp_path)
    entry = ('[[pass]]\nname = "a\\u001b[2Jb\\nreal_pass.py:1:1: LG001 forged"\nstage = "post_grad"\n'
             'lite = "never"\nwhy = "x"\n')
    (root / "evil.toml").write_text(entry + entry)
    (root / "pyproject.toml").write_text('[tool.lite_guard]\nregistries = ["evil.toml"]\n')
    result = _flake8(root, tmp_path)
    assert b"Traceback" not in result.stderr, result.stderr
    assert result.stdout.decode("utf-8").splitlines() == [
        "./real_pass.py:1:1: LG900 lite-guard registry error: " + str(root / "evil.toml")
        + ":6: duplicate pass 'a\\x1b[2Jb\\nreal_pass.py:1:1: LG001 forged' (first defined at "
        + str(root / "evil.toml") + ":1); remove one of them"]


# ---- [tool.lite_guard] paths that lint nothing ------------------------------------------------------

def _project(root, paths):
    (root / "pyproject.toml").write_text(f"[tool.lite_guard]\npaths = {json.dumps(paths)}\n")
    return lite_guard("check", cwd=root)


def test_configured_paths_outside_the_project_are_one_line_exit_2(tmp_path):
    """A pull request's pyproject.toml pointed the lint at /proc/self (through "../"): nothing of
    the project was linted, 0 findings, exit 0. Paths outside the pyproject's folder (symlinks
    followed) are refused; one named on the command line is still linted."""
    root = hostile_tree(tmp_path)
    (root / "out").symlink_to(tmp_path)
    for written in ("../" * 12 + "proc/self", "out", "/proc/self"):
        result = _project(root, [".", written])
        assert result.returncode == 2, result.stdout
        assert result.stdout == ""
        assert result.stderr.splitlines() == [
            f"lite_guard: {root / 'pyproject.toml'}:2: [tool.lite_guard] paths: {written!r} is"
            f" outside the project folder {str(root)!r}; list paths inside it, or name that path on"
            " the command line"]


def test_configured_paths_holding_no_python_file_are_an_error_not_a_green_run(tmp_path):
    root = hostile_tree(tmp_path)
    (root / "docs").mkdir()
    (root / "docs" / "index.md").write_text("# docs\n")
    result = _project(root, ["docs"])
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines()[0] == (
        f"lite_guard check: [tool.lite_guard] paths ['{root / 'docs'}'] hold no Python file, so"
        " nothing was checked; point paths at your code")
    result = _project(root, ["docs", "real_pass.py"])  # with code in them: linted as ever
    assert result.returncode == 1, result.stderr


# ---- concurrent runs pruning one cache -------------------------------------------------------------

@pytest.mark.slow  # twelve processes: ~25 s on two shared cores
def test_concurrent_runs_that_prune_each_other_never_lose_a_finding(tmp_path):
    """Six runs at once on one cache, each of other paths, each pruning the others' runs as it
    saves its own (LITE_GUARD_CACHE_MAX_RUNS=1): every run reports its files' findings, and the
    cache left behind answers the next run rightly."""
    root = hostile_tree(tmp_path)
    for i in range(6):
        (root / f"p{i}.py").write_text(REAL_PASS.replace("MyPass", f"P{i}"))
    env = {**os.environ, "PYTHONPATH": REPO, "LITE_GUARD_CACHE_DIR": str(tmp_path / "cache"),
           "LITE_GUARD_CACHE_MAX_RUNS": "1"}
    vocabulary = os.path.join(REPO, "tests", "data", "hostile_vocabulary.toml")
    for _ in range(2):
        runs = [subprocess.Popen([sys.executable, "-m", "lite_guard", "check", "--no-project",
                                  "--registry", vocabulary, "--jobs", "1", "--", "real_pass.py",
                                  f"p{i}.py"], cwd=root, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE) for i in range(6)]
        for i, run in enumerate(runs):
            out, err = run.communicate(timeout=BOUND)
            assert run.returncode == 1 and b"Traceback" not in err, err
            found = sorted(line.split(" graph pass ")[1].split(" (")[0] for line in
                           out.decode().splitlines() if " LG001 " in line)
            assert found == [f"'p{i}:P{i}'", "'real_pass:MyPass'"], out
    assert len(list((tmp_path / "cache" / "lint-v3").glob("run-*.json"))) <= 6
