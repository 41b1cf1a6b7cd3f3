"""Hostile input and tampering (issue 15): one case per way a pull request, a planted file or a
shared machine could defeat a lint run. Every case runs the real CLI in a subprocess bounded by
a timeout and asserts: bounded time, no traceback or signal, the documented exit code, and every
genuine finding of the run still reported (each hostile tree holds a real unregistered pass in
a sibling file, ``real_pass.py``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from lint_rules.findings import FileResult, Finding
from lint_rules.isolation import Limits, run_isolated, usable_cores

BIN = Path(sys.executable).parent
DATA = Path(__file__).parent / "data"
VOCABULARY = DATA / "hostile_vocabulary.toml"  # the [[base]] rows LG001 recognises passes by
BOUND = 60  # seconds: no case may take longer

REAL_PASS = '''from torch._inductor.custom_graph_pass import CustomGraphPass


class MyPass(CustomGraphPass):
    def __call__(self, graph):
        return graph

    def uuid(self):
        return "my-pass"
'''
REAL_FINDING = re.compile(r"^real_pass\.py:4:\d+ LG001 graph pass 'real_pass:MyPass' ", re.M)
# How an LG900 for a syntax error ends: it names the grammar used (newer syntax needs a newer Python).
SYNTAX_TAIL = (f"; the file was not checked (parsed as Python {sys.version_info[0]}."
               f"{sys.version_info[1]}; if it is written for a newer Python, run lite_guard with that one)")
TRIGGER = "\nfrom torch._inductor.pattern_matcher import PatternMatcherPass\nx = PatternMatcherPass\n"


def hostile_tree(tmp_path: Path, files: dict[str, str | bytes] | None = None) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    (root / "real_pass.py").write_text(REAL_PASS)
    for name, content in (files or {}).items():
        (root / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    return root


def lite_guard(*args: str, cwd: Path, env: dict | None = None, timeout: float = BOUND,
               stdin=subprocess.DEVNULL) -> subprocess.CompletedProcess:
    """The CLI in a subprocess: bounded time, no traceback, no signal; output as text."""
    started = time.monotonic()
    result = subprocess.run([str(BIN / "lite_guard"), *args], cwd=cwd, capture_output=True,
                            timeout=timeout, stdin=stdin,
                            env={**os.environ, "LITE_GUARD_CACHE_DIR": str(cwd.parent / "cache"),
                                 **(env or {})})
    result.seconds = time.monotonic() - started
    result.stdout = result.stdout.decode("utf-8")  # strict: output must be valid UTF-8
    result.stderr = result.stderr.decode("utf-8")
    assert result.returncode >= 0, f"killed by signal {-result.returncode}: {result.stderr}"
    assert "Traceback" not in result.stderr, result.stderr
    assert result.seconds < BOUND
    return result


def check(root: Path, *extra: str, **kwargs) -> subprocess.CompletedProcess:
    return lite_guard("check", "--no-project", "--registry", str(VOCABULARY), *extra, ".", cwd=root,
                      **kwargs)


def assert_real_finding(result: subprocess.CompletedProcess) -> None:
    assert REAL_FINDING.search(result.stdout), result.stdout + result.stderr


def lg900(result: subprocess.CompletedProcess, path: str) -> list[str]:
    return [line for line in result.stdout.splitlines() if line.startswith(f"{path}:")
            and " LG900 " in line]


# ---- cache trust -----------------------------------------------------------------------------

LAYOUT = "lint-v3"
NOTE = "the lint cache's record of this run failed verification and was ignored"


def _run_record(cache: Path) -> Path:
    """The one record a run leaves: a MAC line, then its JSON (inputs, findings, pack hash)."""
    (record,) = sorted((cache / LAYOUT).glob("run-*.json"))
    return record


def _split(record: Path) -> tuple[str, dict]:
    mac, _, body = record.read_bytes().partition(b"\n")
    return mac.decode(), json.loads(body)


def _hidden(body: dict) -> bytes:
    """The record with the real pass's finding removed: trusted, it would hide the pass."""
    return json.dumps({**body, "findings": []}, separators=(",", ":")).encode()


def _tree_with_clean_file(tmp_path: Path) -> Path:
    root = hostile_tree(tmp_path, {"clean.py": "nothing_here = 1\n"})
    first = check(root)
    assert first.returncode == 1
    assert_real_finding(first)
    return root


def _relinted(root: Path) -> subprocess.CompletedProcess:
    again = check(root)
    assert again.returncode == 1
    assert_real_finding(again)
    return again


def test_cache_dir_and_key_are_private(tmp_path):
    root = hostile_tree(tmp_path)
    assert check(root).returncode == 1
    cache = tmp_path / "cache"
    for directory in (cache, cache / LAYOUT):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    key = cache / LAYOUT / "secret.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and key.stat().st_size == 32
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in (cache / LAYOUT).iterdir())
    assert re.fullmatch(r"[0-9a-f]{64}", _split(_run_record(cache))[0])


def test_hand_edited_run_record_is_ignored_with_one_note(tmp_path):
    root = _tree_with_clean_file(tmp_path)
    record = _run_record(tmp_path / "cache")
    mac, body = _split(record)
    record.write_bytes(mac.encode() + b"\n" + _hidden(body))  # hide the pass, keep the old MAC
    again = _relinted(root)
    assert [line for line in again.stderr.splitlines() if NOTE in line] == [
        f"lite_guard check: note: {NOTE}; the files were linted again"]


def test_planted_record_with_a_guessable_mac_key_is_ignored(tmp_path):
    """The record's name (its run key) is computable from public inputs; the MAC key is not.
    An attacker who plants a record at the right name, MAC'd with any key they can know, loses."""
    root = _tree_with_clean_file(tmp_path)
    record = _run_record(tmp_path / "cache")
    run_key = record.stem.removeprefix("run-")
    body = _hidden(_split(record)[1])
    for guess in (b"", run_key.encode(), hashlib.sha256(run_key.encode()).digest()):
        mac = hmac.new(guess, b"lite-guard lint run\0" + run_key.encode() + b"\0" + body,
                       "sha256").hexdigest()
        record.write_bytes(mac.encode() + b"\n" + body)
        assert NOTE in _relinted(root).stderr


def test_a_genuine_record_of_another_run_is_ignored(tmp_path):
    """A record with a right MAC, of a run over a clean tree, copied over this run's: the MAC
    covers the run key, so it does not verify there."""
    root = _tree_with_clean_file(tmp_path)
    cache = tmp_path / "cache"
    mine = _run_record(cache)
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "clean.py").write_text("nothing_here = 1\n")
    assert check(clean).returncode == 0
    (other,) = [p for p in (cache / LAYOUT).glob("run-*.json") if p != mine]
    mine.write_bytes(other.read_bytes())
    assert NOTE in _relinted(root).stderr


def test_an_altered_pack_is_not_used(tmp_path):
    """The pack of per-file results is vouched for by its hash in the record: altered, it is
    not read, and a run that needs it (a file changed) lints every file again."""
    root = _tree_with_clean_file(tmp_path)
    cache = tmp_path / "cache"
    (pack,) = sorted((cache / LAYOUT).glob("pack-*.json"))
    data = json.loads(pack.read_text())
    for record in data["files"].values():  # every file's result made clean
        record["result"]["findings"] = []
        if record["result"]["summary"]:
            record["result"]["summary"]["classes"] = {}
    pack.write_text(json.dumps(data))
    (root / "clean.py").write_text("nothing_here = 2\n")  # not answered from the record
    again = _relinted(root)
    assert re.search(r"linted 2 file\(s\) \(0 parsed, 0 cached\)", again.stderr), again.stderr


@pytest.mark.parametrize("wrong", [
    {"findings": "none"},
    {"findings": [{"path": "x", "line": "a", "col": None, "code": 1, "message": [], "name": "",
                   "hint": ""}]},
    {"inputs": [["x.py", "size"]]},
    [],
    "just a string",
])
def test_wrong_typed_record_with_a_valid_mac_is_ignored(tmp_path, wrong):
    """Even with a valid MAC (made with the real secret, as only a bug of ours could), a record
    of the wrong shape is ignored: no TypeError, no ``x:a:None`` line."""
    root = _tree_with_clean_file(tmp_path)
    cache = tmp_path / "cache" / LAYOUT
    secret = (cache / "secret.key").read_bytes()
    record = _run_record(tmp_path / "cache")
    run_key = record.stem.removeprefix("run-")
    body = json.dumps({**_split(record)[1], **wrong} if isinstance(wrong, dict) else wrong).encode()
    mac = hmac.new(secret, b"lite-guard lint run\0" + run_key.encode() + b"\0" + body,
                   "sha256").hexdigest()
    record.write_bytes(mac.encode() + b"\n" + body)
    again = _relinted(root)
    assert NOTE in again.stderr and "x:a:None" not in again.stdout


def test_cache_dir_writable_by_others_is_refused_with_one_warning(tmp_path):
    root = hostile_tree(tmp_path)
    shared = tmp_path / "shared-cache"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)  # a shared LITE_GUARD_CACHE_DIR: anyone could plant entries there
    result = check(root, env={"LITE_GUARD_CACHE_DIR": str(shared)})
    assert result.returncode == 1
    assert_real_finding(result)
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "writable by others" in warnings[0] and str(shared) in warnings[0]
    assert not (shared / LAYOUT).exists()  # nothing read, nothing written


@pytest.mark.skipif(os.getuid() != 0, reason="chown to another user needs root")
def test_cache_dir_owned_by_another_user_is_refused(tmp_path):
    root = hostile_tree(tmp_path)
    other = tmp_path / "other-cache"
    other.mkdir(mode=0o700)
    os.chown(other, 65534, 65534)
    result = check(root, env={"LITE_GUARD_CACHE_DIR": str(other)})
    assert result.returncode == 1
    assert_real_finding(result)
    assert "is owned by uid 65534, not by you" in result.stderr


# ---- one hostile file must not kill the run -------------------------------------------------

@pytest.mark.parametrize("jobs", ["1", "2"])
def test_5000_nested_parentheses_with_a_trigger_is_one_lg900(tmp_path, jobs):
    root = hostile_tree(tmp_path, {"deep.py": "x = " + "(" * 5000 + "1" + ")" * 5000 + TRIGGER})
    result = check(root, "--no-cache", "-j", jobs)
    assert result.returncode == 1
    assert_real_finding(result)
    assert lg900(result, "deep.py") == [
        "deep.py:1:205 LG900 cannot parse: too many nested parentheses" + SYNTAX_TAIL]


def test_1000_nested_parentheses_are_lg900_not_clean(tmp_path):
    """libcst accepts what CPython rejects; CPython is the judge."""
    root = hostile_tree(tmp_path, {"deep.py": "x = " + "(" * 1000 + "1" + ")" * 1000 + TRIGGER})
    result = check(root, "--no-cache")
    assert result.returncode == 1
    assert_real_finding(result)
    assert len(lg900(result, "deep.py")) == 1


def _long_expression(tmp_path: Path, terms: int) -> subprocess.CompletedProcess:
    long = REAL_PASS.replace("MyPass", "LongPass") + "\ny = " + "+".join(["a"] * terms) + "\n"
    root = hostile_tree(tmp_path, {"long.py": long})
    result = check(root, "--no-cache")
    assert result.returncode == 1
    assert_real_finding(result)
    return result


def test_3000_term_expression_next_to_a_pass_is_checked(tmp_path):
    """Workers recurse deep enough for it (it was a RecursionError traceback): the pass in the
    same file is found."""
    result = _long_expression(tmp_path, 3000)
    assert re.search(r"^long\.py:4:\d+ LG001 graph pass 'long:LongPass' ", result.stdout, re.M)
    assert " LG900 " not in result.stdout


def test_30000_term_expression_is_one_lg900_in_bounded_time(tmp_path):
    """CPython parses it; the index's reader cannot follow 30,000 levels: one LG900 at its line
    that says so (it said Python's parser gave up, which it had not)."""
    result = _long_expression(tmp_path, 30000)
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("long.py:")]
    assert line == ("long.py:11:1 LG900 code nested 30003 levels deep is too deep for lite-guard's"
                    " reader; the file was not checked (split the expression)")


def test_10mb_line_is_refused_by_size(tmp_path):
    root = hostile_tree(tmp_path, {"big.py": "x = [" + "1," * (5 << 20) + "]" + TRIGGER})
    result = check(root, "--no-cache")
    assert result.returncode == 1
    assert_real_finding(result)
    (line,) = lg900(result, "big.py")
    assert "over the 2097152-byte limit" in line


def test_a_file_over_its_time_budget_is_one_lg900(tmp_path):
    slow = "a = 1\n" * 150_000 + REAL_PASS.replace("MyPass", "SlowPass")
    root = hostile_tree(tmp_path, {"slow.py": slow})
    result = check(root, "--no-cache", "--file-timeout", "0.5")
    assert result.returncode == 1
    assert_real_finding(result)
    (line,) = lg900(result, "slow.py")
    assert "analysis took longer than 0.5 s" in line


def _crash_on_b(path: str, data: bytes, version):
    if path == "b.py":
        os.kill(os.getpid(), signal.SIGSEGV)
    return FileResult([Finding(path, 1, 1, "LG001", f"found in {path}")])


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_worker_killed_by_a_signal_is_one_lg900_and_the_rest_survive(jobs):
    """What a libcst segfault does to a worker, done for real: the pool must not lose results."""
    tasks = [(name, b"x = 1\n", None) for name in ("a.py", "b.py", "c.py", "d.py")]
    results = run_isolated(tasks, _crash_on_b, jobs=jobs, limits=Limits(seconds=20))
    lines = [f.text() for result in results for f in result.findings]
    assert lines == ["a.py:1:1 LG001 found in a.py",
                     "b.py:1:1 LG900 the linter's worker was killed by SIGSEGV on this file;"
                     " the file was not checked",
                     "c.py:1:1 LG001 found in c.py", "d.py:1:1 LG001 found in d.py"]


def _allocate(path: str, data: bytes, version):
    buffer = bytearray(int(path))  # what a pathological parse of this "file" would allocate
    return FileResult([Finding(path, 1, 1, "LG001", f"{len(buffer)} bytes")])


def test_a_file_whose_analysis_exhausts_memory_is_one_lg900():
    tasks = [("1000", b"", None), ("8000000000", b"", None), ("2000", b"", None)]
    results = run_isolated(tasks, _allocate, jobs=1, limits=Limits(memory_bytes=1 << 30))
    assert [f.text() for result in results for f in result.findings] == [
        "1000:1:1 LG001 1000 bytes",
        "8000000000:1:1 LG900 analysis ran out of memory; the file was not checked",
        "2000:1:1 LG001 2000 bytes"]


def _pid(path: str, data: bytes, version):
    time.sleep(0.05)
    return FileResult([Finding(path, 1, 1, "LG001", str(os.getpid()))])


def test_jobs_are_capped_at_the_usable_cores(tmp_path):
    tasks = [(f"f{i}.py", b"", None) for i in range(40)]
    results = run_isolated(tasks, _pid, jobs=100_000)
    assert len({r.findings[0].message for r in results}) <= usable_cores()
    root = hostile_tree(tmp_path, {f"f{i}.py": f"x = {i}\n" for i in range(200)})
    result = check(root, "--no-cache", "--jobs", "100000")
    assert result.returncode == 1 and result.seconds < 30
    assert_real_finding(result)


# ---- files that are not regular --------------------------------------------------------------

def test_fifo_in_the_tree_is_lg900_not_a_hang(tmp_path):
    root = hostile_tree(tmp_path)
    os.mkfifo(root / "pipe.py")
    result = check(root, "--no-cache")
    assert result.returncode == 1
    assert_real_finding(result)
    assert lg900(result, "pipe.py") == ["pipe.py:1:1 LG900 not a regular file (a FIFO); it was not read"]


def test_dev_zero_symlink_is_lg900_not_out_of_memory(tmp_path):
    root = hostile_tree(tmp_path)
    os.symlink("/dev/zero", root / "zero.py")
    result = check(root, "--no-cache")
    assert result.returncode == 1
    assert_real_finding(result)
    assert lg900(result, "zero.py") == [
        "zero.py:1:1 LG900 not a regular file (a character device); it was not read"]


def test_fifo_as_registry_is_a_config_error_not_a_hang(tmp_path):
    root = hostile_tree(tmp_path)
    os.mkfifo(root / "registry.toml")
    result = check(root, "--registry", "registry.toml")
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert "registry.toml" in line and "not a regular file" in line


# ---- paths and names are data ----------------------------------------------------------------

def test_a_non_utf8_byte_in_a_file_name_lints(tmp_path):
    root = hostile_tree(tmp_path)
    with open(os.path.join(os.fsencode(root), b"bad\xff name.py"), "w") as handle:
        handle.write(REAL_PASS.replace("MyPass", "OddPass"))
    result = check(root, "--no-cache")
    assert result.returncode == 1
    assert_real_finding(result)
    assert re.search(r"^bad\\udcff name\.py:4:\d+ LG001 ", result.stdout, re.M), result.stdout


def test_sarif_uris_are_rfc3986_and_the_log_matches_the_schema(tmp_path):
    import jsonschema

    root = hostile_tree(tmp_path)
    names = [b"with space.py", "caf\u00e9.py".encode(), b"bad\xff.py", b"a:b%c#d?.py"]
    for i, name in enumerate(names):
        with open(os.path.join(os.fsencode(root), name), "w") as handle:
            handle.write(REAL_PASS.replace("MyPass", f"Pass{i}"))
    result = check(root, "--no-cache", "--format", "sarif")
    assert result.returncode == 1
    log = json.loads(result.stdout)
    schema = json.loads((DATA / "sarif-schema-2.1.0.json").read_text())
    jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker()).validate(log)
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in log["runs"][0]["results"]}
    assert {"real_pass.py", "with%20space.py", "caf%C3%A9.py", "bad%FF.py", "a%3Ab%25c%23d%3F.py"} <= uris
    for result in log["runs"][0]["results"]:
        location = result["locations"][0]["physicalLocation"]["artifactLocation"]
        # relative to the run's %SRCROOT%, or (a registry file given by absolute path) a file: URI
        assert location.get("uriBaseId") == "%SRCROOT%" or location["uri"].startswith("file:///")
    assert log["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"].startswith("file:///")


def test_a_pass_name_with_a_newline_cannot_forge_a_finding_line(tmp_path):
    forged = ('from torch.fx.passes.graph_transform_observer import GraphTransformObserver\n'
              'with GraphTransformObserver(gm, "x\\nforged.py:9:9 LG001 forged\\x1b[2J"):\n    pass\n')
    root = hostile_tree(tmp_path, {"forge.py": forged})
    result = check(root, "--no-cache")
    assert result.returncode == 1
    assert_real_finding(result)
    lines = result.stdout.splitlines()
    assert not any(line.startswith("forged.py") for line in lines)
    assert all(re.match(r"^[^\s:]+\.(py|toml):\d+:\d+ LG\d{3} ", line) for line in lines), lines
    (line,) = [line for line in lines if line.startswith("forge.py:")]
    assert "\\nforged.py:9:9 LG001 forged\\x1b[2J" in line and "\x1b" not in line


def test_the_toml_hint_of_an_odd_name_is_valid_toml(tmp_path):
    odd = 'x"\n[[pass]]\nname = "evil'
    source = ('from torch.fx.passes.graph_transform_observer import GraphTransformObserver\n'
              f'with GraphTransformObserver(gm, {odd!r}):\n    pass\n')
    root = hostile_tree(tmp_path, {"odd.py": source})
    result = check(root, "--no-cache", "--format", "json")
    assert result.returncode == 1
    (finding,) = [f for f in json.loads(result.stdout)["findings"] if f["path"] == "odd.py"]
    assert finding["hint"], finding
    (entry,) = tomllib.loads(finding["hint"])["pass"]
    assert entry["name"].endswith(odd)  # the identity the guard checks, unharmed


def _registry_with_markup(root: Path) -> Path:
    path = root / "markup.toml"
    path.write_text('[[pass]]\nname = "myproj.passes:fuse_all"\nstage = "post_grad"\n'
                    'lite = "never"\nkind = "function"\nwhy = "[red]not red[/] and a stray [/]"\n')
    return path


def test_registry_list_prints_markup_as_text(tmp_path):
    root = hostile_tree(tmp_path)
    _registry_with_markup(root)
    result = lite_guard("registry", "list", "--registry", "markup.toml", cwd=root,
                        env={"COLUMNS": "400"})
    assert result.returncode == 0, result.stderr
    assert "[red]not red[/] and a stray [/]" in result.stdout


def test_registry_show_of_an_empty_name_is_a_usage_error(tmp_path):
    root = hostile_tree(tmp_path)
    for name in ("", "no_such_pass_anywhere"):
        result = lite_guard("registry", "show", name, cwd=root)
        assert result.returncode == 2 and result.stdout == ""
        assert len(result.stderr.splitlines()) == 1


# ---- the compiler's commands (torch) ---------------------------------------------------------

SCRIPT = '''import torch
print("the script prints this")
f = torch.compile(lambda x: x.sin() + 1)
print(f(torch.ones(3)).sum().item())
'''


def test_trace_json_prints_only_json_on_stdout(tmp_path):
    root = hostile_tree(tmp_path, {"script.py": SCRIPT})
    result = lite_guard("trace", "--json", "script.py", cwd=root, timeout=BOUND)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)  # nothing but JSON
    assert report["lite"] and "the script prints this" in result.stderr


def test_trace_ledger_survives_os_exit(tmp_path):
    script = SCRIPT + "import os\nos._exit(0)\n"
    root = hostile_tree(tmp_path, {"script.py": script})
    result = lite_guard("trace", "--json", "script.py", cwd=root, timeout=BOUND)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["lite"] and report["lite"][0]["passes"] is not None


def test_trace_with_a_registry_key_torch_lacks_is_one_line_exit_2(tmp_path):
    root = hostile_tree(tmp_path, {"script.py": SCRIPT})
    (root / "bad.toml").write_text('[[config]]\nkey = "no_such_key_in_torch"\nmodule = "inductor"\n'
                                   'kind = "pass_gate"\ntype = "bool"\nlite_value = false\nwhy = "x"\n')
    result = lite_guard("trace", "--registry", "bad.toml", "script.py", cwd=root, timeout=BOUND)
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert "no_such_key_in_torch" in line and result.stdout == ""


def test_trace_prints_markup_in_pass_names_as_text(tmp_path):
    script = '''import torch
from torch._inductor import config
from torch._inductor.custom_graph_pass import CustomGraphPass


class Evil(CustomGraphPass):
    def __call__(self, graph):
        return None

    def uuid(self):
        return "evil"


Evil.__qualname__ = "Evil[/]"
config.post_grad_custom_post_pass = Evil()
f = torch.compile(lambda x: x.sin() + 1)
f(torch.ones(3))
'''
    root = hostile_tree(tmp_path, {"script.py": script})
    result = lite_guard("trace", "script.py", cwd=root, timeout=BOUND, env={"COLUMNS": "300"})
    assert result.returncode == 1, result.stderr  # the guard refused the unregistered pass
    assert re.search(r"│ __main__:Evil\[/\] +│ post_grad +│", result.stdout), result.stdout
    assert "LitePassViolation: lite mode refused pass '__main__:Evil[/]'" in result.stdout
    assert "[bold red]" not in result.stdout


def test_fuzz_force_of_an_unknown_key_is_a_usage_error(tmp_path):
    root = hostile_tree(tmp_path)
    result = lite_guard("fuzz", "--force", "no_such_key=1", "--count", "2", "--out", "repros",
                        cwd=root, timeout=BOUND)
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert "no_such_key" in line and "no Inductor config" in line
    assert not (root / "repros").exists()


def test_flake8_reports_an_odd_name_on_one_line(tmp_path):
    forged = ('from torch.fx.passes.graph_transform_observer import GraphTransformObserver\n'
              'with GraphTransformObserver(gm, "x\\nforged.py:9:9 LG001 forged"):\n    pass\n')
    root = hostile_tree(tmp_path, {"forge.py": forged})
    (root / "pyproject.toml").write_text(f'[tool.lite_guard]\nregistries = ["{VOCABULARY}"]\n')
    result = subprocess.run([str(BIN / "flake8"), "--select", "LG", "--isolated", "forge.py"],
                            cwd=root, capture_output=True, text=True, timeout=BOUND)
    assert result.returncode == 1, result.stderr
    (line,) = result.stdout.splitlines()
    assert line.startswith("forge.py:2:") and "x\\nforged.py:9:9 LG001 forged'" in line


def test_the_entry_schema_checks_the_type_of_every_field():
    from lint_rules.cache import valid_entry
    from lint_rules.findings import FileFacts

    facts = {name: [] for name in FileFacts().to_dict()}
    good = FileResult([Finding("a.py", 1, 1, "LG001", "m")], FileFacts(**facts)).to_dict()
    assert valid_entry(good)
    wrong = {str: 7, int: "7", list: {}}
    paths = [("findings", 0, key) for key in good["findings"][0]] + [("facts", key) for key in good["facts"]]
    for path in paths:
        bad = json.loads(json.dumps(good))
        holder = bad
        for step in path[:-1]:
            holder = holder[step]
        holder[path[-1]] = wrong[type(holder[path[-1]])]
        assert not valid_entry(bad), path
    for key in good:
        bad = dict(good)
        del bad[key]
        assert not valid_entry(bad), key
    assert not valid_entry({**good, "extra": 1})


def test_a_cache_dir_whose_parents_do_not_exist_yet_is_created_private(tmp_path):
    root = hostile_tree(tmp_path)
    fresh = tmp_path / "home" / ".cache" / "lite-guard"
    result = check(root, env={"LITE_GUARD_CACHE_DIR": str(fresh)})
    assert result.returncode == 1 and "warning" not in result.stderr
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o700
    again = check(root, env={"LITE_GUARD_CACHE_DIR": str(fresh)})
    assert re.search(r"linted 1 file\(s\) \(0 parsed, 1 cached\)", again.stderr), again.stderr


def test_a_fifo_named_on_the_command_line_is_lg900(tmp_path):
    root = hostile_tree(tmp_path)
    os.mkfifo(root / "pipe.py")
    result = lite_guard("check", "--no-project", "--no-cache", "--registry", str(VOCABULARY),
                        "pipe.py", "real_pass.py", cwd=root)
    assert result.returncode == 1
    assert_real_finding(result)
    assert lg900(result, "pipe.py") == ["pipe.py:1:1 LG900 not a regular file (a FIFO); it was not read"]


def test_runs_starting_together_share_one_secret_and_no_warning(tmp_path):
    root = hostile_tree(tmp_path)
    env = {**os.environ, "LITE_GUARD_CACHE_DIR": str(tmp_path / "together")}
    runs = [subprocess.Popen([str(BIN / "lite_guard"), "check", "--no-project", "--registry",
                              str(VOCABULARY), "."], cwd=root, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outputs = [run.communicate(timeout=BOUND) for run in runs]
    assert [run.returncode for run in runs] == [1] * 4
    assert all(REAL_FINDING.search(out) and "warning" not in err for out, err in outputs), outputs
    assert sorted(p.name for p in (tmp_path / "together" / LAYOUT).iterdir()
                  if not p.name.endswith(".json")) == ["secret.key"]


def test_a_file_name_with_a_newline_is_one_escaped_line(tmp_path):
    root = hostile_tree(tmp_path)
    (root / "evil\nforged.py:9:9 LG001 x.py").write_text(REAL_PASS.replace("MyPass", "NamePass"))
    result = check(root, "--no-cache")
    assert result.returncode == 1
    assert_real_finding(result)
    assert not any(line.startswith("forged.py") for line in result.stdout.splitlines())
    assert re.search(r"^evil\\nforged\.py:9:9 LG001 x\.py:4:\d+ LG001 ", result.stdout, re.M), result.stdout


def test_a_socket_and_a_symlink_to_a_fifo_are_lg900(tmp_path):
    import socket

    root = hostile_tree(tmp_path)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(root / "sock.py"))
        os.mkfifo(tmp_path / "fifo")
        os.symlink(tmp_path / "fifo", root / "link.py")
        result = check(root, "--no-cache")
    finally:
        server.close()
    assert result.returncode == 1
    assert_real_finding(result)
    assert lg900(result, "sock.py") == ["sock.py:1:1 LG900 not a regular file (a socket); it was not read"]
    assert lg900(result, "link.py") == ["link.py:1:1 LG900 not a regular file (a FIFO); it was not read"]
