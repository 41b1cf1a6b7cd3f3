"""Hostile inputs of round 11, through the real CLI on real files (helpers of tests/test_hostile.py):
an undecodable byte of a file name in JSON, SARIF and lintrunner output read by strict readers,
a cache that grew by one run per set of paths forever, ``--fix`` on a file mixing CR LF and LF
line ends, a byte-order mark before a coding cookie that names another encoding, and a file
too big for Python's parser to hold that was called "nested too deeply"."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from test_hostile import BOUND, DATA, REAL_PASS, VOCABULARY, assert_real_finding, check, \
    hostile_tree, lite_guard

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _strict(raw: bytes):
    """JSON as a strict reader takes it (Rust's serde_json, .NET): valid UTF-8 whose escapes
    decode to valid Unicode. Python's own json.loads accepts "\\udcff"; encoding it back does not."""
    data = json.loads(raw.decode("utf-8"))
    json.dumps(data, ensure_ascii=False).encode("utf-8")  # raises on a lone surrogate
    return data


def _odd_named_tree(tmp_path):
    root = hostile_tree(tmp_path)
    with open(os.path.join(os.fsencode(root), b"bad\xff.py"), "w") as handle:
        handle.write(REAL_PASS.replace("MyPass", "OddPass"))
    return root


def test_json_and_sarif_of_an_undecodable_file_name_are_strict_unicode(tmp_path):
    """An undecodable byte of a file name is a lone surrogate in Python; json.dumps wrote it as
    "\\udcff", which strict readers refuse, losing every finding of the run. It is now the text
    ``\\udcff``, as the text output shows it, and the SARIF log still matches its schema."""
    import jsonschema

    root = _odd_named_tree(tmp_path)
    as_json = check(root, "--format", "json")
    assert as_json.returncode == 1, as_json.stderr
    report = _strict(as_json.stdout.encode("utf-8"))
    paths = {finding["path"] for finding in report["findings"]}
    assert paths == {"bad\\udcff.py", "real_pass.py"}, paths
    as_sarif = check(root, "--format", "sarif")
    assert as_sarif.returncode == 1, as_sarif.stderr
    log = _strict(as_sarif.stdout.encode("utf-8"))
    schema = json.loads((DATA / "sarif-schema-2.1.0.json").read_text())
    jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker()).validate(log)
    results = log["runs"][0]["results"]
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
    assert uris == {"bad%FF.py", "real_pass.py"}  # the URI keeps the name's own byte
    assert any(r["message"]["text"].startswith("graph pass 'bad\\udcff:OddPass'") for r in results)


def test_lintrunner_messages_of_an_undecodable_file_name_are_strict_unicode(tmp_path):
    """lintrunner reads its linters' JSON with serde_json, which refuses "\\udcff": one odd name
    in the paths file lost the messages of every file."""
    root = _odd_named_tree(tmp_path)
    paths = tmp_path / "paths"
    paths.write_bytes(b"bad\xff.py\nreal_pass.py\n")
    result = subprocess.run([sys.executable, "-P", "-m", "lint_rules.lintrunner", f"@{paths}"],
                            cwd=root, capture_output=True, timeout=BOUND,
                            env={**os.environ, "PYTHONPATH": REPO,
                                 "LITE_GUARD_CACHE_DIR": str(tmp_path / "cache")})
    assert result.returncode == 0, result.stderr
    messages = [_strict(line) for line in result.stdout.splitlines()]
    assert {m["path"] for m in messages} == {"bad\\udcff.py", "real_pass.py"}


def _cache_files(cache):
    names = os.listdir(cache / "lint-v3")
    return sorted(n for n in names if n.startswith("run-")), sorted(n for n in names
                                                                     if n.startswith("pack-"))


def test_the_lint_cache_keeps_the_most_recently_used_runs_only(tmp_path):
    """Every distinct set of paths is a run of its own (the lite-guard-files pre-commit hook makes
    one per commit), and each left a record and a pack in the cache forever. Now at most
    LITE_GUARD_CACHE_MAX_RUNS runs are kept (64 by default), the least recently used pruned
    with their packs; a run used again is kept; temp files of killed runs go after an hour."""
    root = hostile_tree(tmp_path)
    cache = tmp_path / "cache"
    env = {"LITE_GUARD_CACHE_MAX_RUNS": "2"}

    def run(*paths):
        result = lite_guard("check", "--no-project", "--registry", str(VOCABULARY), "--", *paths,
                            cwd=root, env=env)
        assert result.returncode == 1, result.stderr
        assert_real_finding(result)
        return result

    for i in range(3):
        (root / f"f{i}.py").write_text(f"x = {i}\n")
    run("real_pass.py", "f0.py")
    run("real_pass.py", "f1.py")
    first_two, _ = _cache_files(cache)
    run("real_pass.py", "f0.py")  # used again: now the most recent
    stale = cache / "lint-v3" / ".tmp-1-killed"
    stale.write_bytes(b"half")
    os.utime(stale, (0, 0))
    run("real_pass.py", "f2.py")
    runs, packs = _cache_files(cache)
    assert len(runs) == 2 and len(packs) == 2, (runs, packs)
    assert len(set(runs) & set(first_two)) == 1  # f1's run went, f0's stayed
    assert not stale.exists()
    warm = run("real_pass.py", "f0.py")
    assert "(0 parsed, 2 cached)" in warm.stderr, warm.stderr  # still answered from the cache


def test_a_cache_run_limit_that_is_no_number_is_one_warning_line(tmp_path):
    root = hostile_tree(tmp_path)
    result = check(root, env={"LITE_GUARD_CACHE_MAX_RUNS": "lots\x1b[2J"})
    assert result.returncode == 1
    assert_real_finding(result)
    assert result.stderr.splitlines()[0] == (
        "lite_guard: warning: LITE_GUARD_CACHE_MAX_RUNS='lots\\x1b[2J' is not a number of runs"
        " from 1 to 1048576; keeping at most 64")


def test_fix_keeps_the_line_ends_of_a_file_mixing_crlf_and_lf(tmp_path):
    """tomlkit read the file with CR LF made LF, and --fix wrote every line back with CR LF when
    any line had one: the lines it did not change were rewritten (a diff of the whole file). Now
    the old lines stay byte for byte and the new ones end as most lines of the file do."""
    root = hostile_tree(tmp_path)
    pyproject = b'[tool.lite_guard]\r\npaths = ["."]\n\n[tool.other]\r\nx = 1\r\n'
    (root / "pyproject.toml").write_bytes(pyproject)
    registry = b'# our passes\r\n[meta]\nowner = "us"   \r\n\n# caf\xc3\xa9\r\n'
    (root / "passes.toml").write_bytes(registry)
    result = lite_guard("check", "--fix", "--registry", "passes.toml", cwd=root)
    assert result.returncode == 1, result.stderr  # the placeholder why is reported until replaced
    written = (root / "passes.toml").read_bytes()
    assert written.startswith(registry), written
    assert written[len(registry):] == (
        b'\r\n[[pass]]\r\nname = "real_pass:MyPass"\r\nstage = "post_grad"\r\nlite = "never"\r\n'
        b'kind = "class"\r\nwhy = "TODO: say why this pass is (or is not) safe in lite mode"\r\n')
    (root / "passes.toml").unlink()
    result = lite_guard("check", "--fix", cwd=root)  # a new registry, listed in pyproject.toml
    assert result.returncode == 1, result.stderr
    assert (root / "pyproject.toml").read_bytes() == (
        b'[tool.lite_guard]\r\npaths = ["."]\nregistries = ["lite_guard_registry.toml"]\r\n\n'
        b'[tool.other]\r\nx = 1\r\n')


def test_a_byte_order_mark_before_a_latin1_cookie_is_what_python_refuses(tmp_path):
    """Python reads a coding cookie after a UTF-8 BOM and refuses the pair when the cookie names
    another encoding ("encoding problem: iso-8859-1 with BOM"). The cookie was looked for before
    the BOM, so never found: the file was read as UTF-8 and called clean, even with
    --check-syntax. Now it is an LG900 that says why; a BOM with a UTF-8 cookie is fine."""
    root = hostile_tree(tmp_path, {
        "bom_latin1.py": b"\xef\xbb\xbf# -*- coding: latin-1 -*-\n" + REAL_PASS.encode(),
        "bom_utf8.py": b"\xef\xbb\xbf# coding: utf-8\nx = 1\n"})
    result = check(root, "--no-cache", "--check-syntax")
    assert result.returncode == 1, result.stderr
    assert_real_finding(result)
    assert [line for line in result.stdout.splitlines() if line.startswith("bom_")] == [
        "bom_latin1.py:1:1 LG900 cannot decode file: it starts with a UTF-8 byte-order mark but its"
        " coding cookie says latin-1, which Python refuses; the file was not checked (save it as"
        " UTF-8, or fix its coding cookie)"]


@pytest.mark.slow
def test_a_flat_literal_too_big_for_the_parser_says_out_of_memory_not_nested(tmp_path):
    """A 10 MB line of 5 million list items is flat; CPython's tree of it needs more than the
    4 GiB a worker may add, and the LG900 said "nested too deeply for Python's parser", which
    sends the reader looking for nesting that is not there."""
    source = "CustomGraphPass = [" + "1," * 5_000_000 + "1]\n"
    root = hostile_tree(tmp_path, {"huge.py": source})
    result = subprocess.run([sys.executable, "-m", "lite_guard", "check", "--no-project", "--no-cache",
                             "--registry", str(VOCABULARY), "--max-file-size", "20000000",
                             "--file-timeout", "300", "."], cwd=root, capture_output=True,
                            text=True, timeout=400, env={**os.environ, "PYTHONPATH": REPO})
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert_real_finding(result)
    assert "huge.py:1:1 LG900 cannot parse: Python's parser ran out of memory on this file (a worker"\
           " may add 4 GiB); the file was not checked (split the file or the huge expression in it)"\
           in result.stdout.splitlines(), result.stdout


@pytest.mark.parametrize("evil_in", ["first", "second"])
@pytest.mark.parametrize("imported", ["from x import Base\n\n\nclass P(Base):",
                                      "import x\n\n\nclass P(x.Base):"])
def test_a_base_imported_from_a_module_name_two_files_share_is_read_from_both(tmp_path, evil_in,
                                                                               imported):
    """Folders that are not packages make two files one module name (``my-dir/x.py`` and
    ``zz-dir/x.py`` are both ``x``; which one Python imports depends on sys.path). A base
    imported from ``x`` was read from the first file only: a benign (or empty) ``x.py`` sorted
    first hid the pass deriving from the other one's CustomGraphPass. Both are read now."""
    evil = "from torch._inductor.custom_graph_pass import CustomGraphPass as Base\n"
    benign = "class Base:\n    pass\n"
    first, second = (evil, benign) if evil_in == "first" else (benign, evil)
    root = hostile_tree(tmp_path)
    for folder, text in (("my-dir", first), ("zz-dir", second)):
        (root / folder).mkdir()
        (root / folder / "x.py").write_text(text)
    (root / "use").mkdir()
    (root / "use" / "y.py").write_text(imported + "\n    def __call__(self, graph):\n        return"
                                       " graph\n\n    def uuid(self):\n        return 'p'\n")
    result = check(root, "--no-cache")
    assert result.returncode == 1, result.stderr
    assert_real_finding(result)
    assert "use/y.py:4:7 LG001 graph pass 'y:P' (class deriving from CustomGraphPass)" in result.stdout
    (root / "my-dir" / "x.py").write_text(benign)
    (root / "zz-dir" / "x.py").write_text(benign)
    clean = check(root, "--no-cache")  # two benign bases: no pass, no finding
    assert clean.returncode == 1 and "use/y.py" not in clean.stdout, clean.stdout
