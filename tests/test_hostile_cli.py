"""Hostile surroundings of a run (round 4 red team): closed and broken output streams, a full
disk, a deleted working directory, odd bytes in project settings and lintrunner's paths file,
and what ``--fix`` may do to the files it writes. Every case runs the real CLI in a subprocess
(helpers of tests/test_hostile.py: bounded time, no traceback, no signal) and asserts the exact
stderr line and the documented exit code; a real pass in a sibling file must still be reported.
"""

from __future__ import annotations

import hmac
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_hostile import BIN, BOUND, REAL_PASS, VOCABULARY, hostile_tree, lite_guard

CHECK = f"{BIN / 'lite_guard'} check --no-project --registry {VOCABULARY}"


def _shell(command: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """``command`` under bash with pipefail: the status of a pipeline is its first failure."""
    result = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=cwd, capture_output=True,
                            timeout=BOUND, env={**os.environ, "LITE_GUARD_CACHE_DIR":
                                                str(cwd.parent / "cache"), **env})
    result.stdout, result.stderr = result.stdout.decode(), result.stderr.decode()
    assert "Traceback" not in result.stderr, result.stderr
    return result


def _many_passes(root: Path, count: int = 1500) -> None:
    """One file of ``count`` passes: far more findings than a pipe holds (64 KiB)."""
    body = "".join(REAL_PASS.split("\n\n\n", 1)[1].replace("MyPass", f"Pass{n}") + "\n\n"
                   for n in range(count))
    (root / "many.py").write_text(REAL_PASS.split("\n\n\n", 1)[0] + "\n\n\n" + body)


# ---- output streams ---------------------------------------------------------------------------

@pytest.mark.parametrize("format", ["text", "json"])
def test_check_read_by_head_keeps_the_findings_exit_status(tmp_path, format):
    """`lite_guard check | head -1` exited 0 (BrokenPipeError was 'success'): under pipefail a CI
    step passed with 1,500 unregistered passes in the tree."""
    root = hostile_tree(tmp_path)
    _many_passes(root)
    result = _shell(f"{CHECK} --format {format} . | head -c 100", cwd=root)
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines()[-1] == "1501 finding(s)"  # the summary still goes out


def test_check_with_stdout_closed_keeps_its_status_and_summary(tmp_path):
    """`lite_guard check >&-` crashed (sys.stdout is None: AttributeError, a traceback)."""
    root = hostile_tree(tmp_path)
    result = _shell(f"{CHECK} . >&-", cwd=root)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == "1 finding(s)"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("command", [f"{CHECK} .", f"{BIN / 'lite_guard'} registry list"])
def test_output_to_a_full_disk_is_one_line_exit_2(tmp_path, command):
    """Writing findings to a full disk was an OSError traceback (and exit 1: 'findings')."""
    root = hostile_tree(tmp_path)
    result = _shell(f"{command} > /dev/full", cwd=root)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == ("lite_guard: cannot write the output: No space left on"
                                              " device; free space or write it elsewhere")


# ---- the working directory and project settings -----------------------------------------------

@pytest.mark.parametrize("args", [["check"], ["registry", "list"]])
def test_a_deleted_working_directory_is_one_line_exit_2(tmp_path, args):
    """Path.cwd() raised FileNotFoundError from the search for pyproject.toml: a traceback."""
    gone = tmp_path / "gone"
    gone.mkdir()
    result = _shell(f"cd {gone} && rmdir {gone} && {BIN / 'lite_guard'} {' '.join(args)}",
                    cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "lite_guard: .: the current directory no longer exists, so its pyproject.toml cannot be"
        " found; cd into your project and run again"]


def test_sarif_of_absolute_paths_from_a_deleted_working_directory(tmp_path):
    root = hostile_tree(tmp_path)
    gone = tmp_path / "gone"
    gone.mkdir()
    result = _shell(f"cd {gone} && rmdir {gone} && {CHECK} --format sarif {root}", cwd=tmp_path)
    assert result.returncode == 1
    assert f'"uri": "file://{root}/real_pass.py"' in result.stdout


def test_a_nul_in_a_project_registry_path_is_one_line_exit_2(tmp_path):
    """A registry path "\\u0000" in [tool.lite_guard] reached os.open: ValueError, a traceback."""
    root = hostile_tree(tmp_path)
    (root / "pyproject.toml").write_text('[tool.lite_guard]\npaths = ["."]\nregistries = ["a\\u0000"]\n')
    result = lite_guard("check", cwd=root)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"lite_guard: {root / 'pyproject.toml'}:3: [tool.lite_guard] registries holds a path with a"
        " NUL character; remove it"]


def test_a_pyproject_and_a_registry_saved_with_a_bom_are_read(tmp_path):
    """A UTF-8 byte-order mark (Notepad's default) was 'malformed TOML: Invalid statement'."""
    root = hostile_tree(tmp_path)
    bom = b"\xef\xbb\xbf"
    (root / "pyproject.toml").write_bytes(bom + b'[tool.lite_guard]\npaths = ["real_pass.py"]\n'
                                          + b'registries = ["reg.toml"]\n')
    (root / "reg.toml").write_bytes(bom + VOCABULARY.read_bytes())
    result = lite_guard("check", cwd=root)
    assert result.returncode == 1
    assert result.stdout.startswith(f"{root / 'real_pass.py'}:4:7 LG001 graph pass 'real_pass:MyPass'")
    assert "from 5 file(s): " in result.stderr and f"{root / 'reg.toml'}\n" in result.stderr


# ---- lintrunner's paths file -------------------------------------------------------------------

def _lintrunner(root: Path, *args: str) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-P", "-m", "lint_rules.lintrunner", *args,
                             "--no-project", "--registry", str(VOCABULARY)], cwd=root,
                            capture_output=True, timeout=BOUND,
                            env={**os.environ, "LITE_GUARD_CACHE_DIR": str(root.parent / "cache")})
    result.stdout, result.stderr = result.stdout.decode(), result.stderr.decode()
    assert "Traceback" not in result.stderr, result.stderr
    return result


@pytest.mark.parametrize("kind, reason", [
    ("missing", "No such file or directory"),
    ("directory", "not a regular file (a directory)"),
    ("fifo", "not a regular file (a FIFO)"),  # was a hang: open() of a FIFO blocks
])
def test_a_paths_file_that_cannot_be_read_is_one_line_exit_2(tmp_path, kind, reason):
    root = hostile_tree(tmp_path)
    paths_file = tmp_path / "paths"
    if kind == "directory":
        paths_file.mkdir()
    elif kind == "fifo":
        os.mkfifo(paths_file)
    result = _lintrunner(root, f"@{paths_file}")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"lite_guard lintrunner: @{paths_file}: cannot read the paths file ({reason}); pass the"
        " file lintrunner writes, @{{PATHSFILE}}"]


def test_paths_file_names_are_linted_exactly_as_written(tmp_path):
    """Names were stripped and decoded as UTF-8: ' evil.py' was linted as 'evil.py' (so the file
    with the space was never read), and one undecodable byte was a UnicodeDecodeError."""
    root = hostile_tree(tmp_path)
    spaced = REAL_PASS.replace("MyPass", "Spaced")
    (root / " evil.py").write_text(spaced)
    (root / "evil.py").write_text("nothing = 1\n")
    (root / os.fsdecode(b"\xff.py")).write_text(REAL_PASS.replace("MyPass", "Undecodable"))
    paths_file = tmp_path / "paths"
    paths_file.write_bytes(b" evil.py\nevil.py\n\xff.py\nreal_pass.py\n")
    result = _lintrunner(root, f"@{paths_file}")
    assert result.returncode == 0, result.stderr  # lintrunner: findings are messages, exit 0
    names = sorted(line.split('"name": "LG001"')[0].split('"path": ')[1].split(",")[0]
                   for line in result.stdout.splitlines())
    # the undecodable byte as the text \udcff (round 11: lintrunner's strict JSON reader refuses a
    # lone surrogate escape)
    assert names == ['" evil.py"', '"\\\\udcff.py"', '"real_pass.py"'], result.stdout


# ---- --fix and the files it writes -------------------------------------------------------------

def test_fix_keeps_the_mode_of_pyproject_and_gives_the_new_registry_the_umask_mode(tmp_path):
    """Atomic writes went through mkstemp: pyproject.toml became 0600 (the team could no longer
    read it) and the new registry too."""
    root = hostile_tree(tmp_path)
    pyproject = root / "pyproject.toml"
    pyproject.write_text('[tool.lite_guard]\npaths = ["real_pass.py"]\n')
    pyproject.chmod(0o640)
    result = _shell(f"umask 022 && {BIN / 'lite_guard'} check --fix", cwd=root)
    assert result.returncode == 1  # the placeholder why is reported until a person decides
    assert stat.S_IMODE(pyproject.stat().st_mode) == 0o640
    assert stat.S_IMODE((root / "lite_guard_registry.toml").stat().st_mode) == 0o644


@pytest.mark.skipif(os.getuid() != 0 or shutil.which("chattr") is None,
                    reason="an immutable folder needs root and chattr")
def test_fix_into_a_folder_it_cannot_write_is_one_line_exit_2(tmp_path):
    root = hostile_tree(tmp_path)
    (root / "pyproject.toml").write_text('[tool.lite_guard]\npaths = ["real_pass.py"]\n')
    if subprocess.run(["chattr", "+i", str(root)], capture_output=True).returncode:
        pytest.skip("this file system has no immutable attribute")
    try:
        result = lite_guard("check", "--fix", cwd=root)
    finally:
        subprocess.run(["chattr", "-i", str(root)], check=True)
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == (
        f"lite_guard check --fix: cannot write {root / 'lite_guard_registry.toml'}: Operation not"
        " permitted; make it writable (or its folder) and run --fix again")


# ---- registries named by the environment -------------------------------------------------------

def test_a_missing_registry_in_the_environment_is_its_own_line_not_install_torch(tmp_path):
    """LITE_GUARD_REGISTRIES=/missing made `trace` say 'cannot load the command (RegistryError:
    ...); install torch ... or reinstall lite-guard': the wrong thing to do."""
    script = tmp_path / "script.py"
    script.write_text("pass\n")
    result = lite_guard("trace", str(script), cwd=tmp_path,
                        env={"LITE_GUARD_REGISTRIES": str(tmp_path / "missing.toml")})
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"lite_guard: {tmp_path / 'missing.toml'}: registry file does not exist (named in"
        " LITE_GUARD_REGISTRIES); fix the path there or unset the variable"]


# ---- signals: a CI timeout (SIGTERM) or kill -9 mid-run ---------------------------------------

def _children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found |= {int(child) for child in (task / "children").read_text().split()}
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return False


def _interrupted_run(tmp_path: Path, sig: int) -> tuple[subprocess.Popen, set[int], bytes, bytes]:
    """A run of two slow files on two workers, sent ``sig`` once its workers are busy."""
    slow = "a = 1\n" * 340_000 + REAL_PASS  # ~2 MB: under the size limit, seconds to lint
    root = hostile_tree(tmp_path, {"slow_a.py": slow, "slow_b.py": slow})
    run = subprocess.Popen([str(BIN / "lite_guard"), "check", "--no-project", "--registry",
                            str(VOCABULARY), "--jobs", "2", "."], cwd=root,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env={**os.environ, "LITE_GUARD_CACHE_DIR": str(tmp_path / "cache")},
                           # as from a terminal: a test run started in the background (`nohup
                           # ... &`) passes SIGINT on ignored, and the run never sees the Ctrl-C
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + BOUND
    while len(workers := _children(run.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(workers) >= 2, "the run never started its workers"
    time.sleep(0.3)  # busy on the slow files
    run.send_signal(sig)
    # Whatever reads the run's output waits for EOF: every holder of the pipes must be gone.
    stdout, stderr = run.communicate(timeout=BOUND)
    return run, workers, stdout, stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_sigterm_mid_run_is_one_line_exit_143_and_no_worker_survives(tmp_path):
    """SIGTERM (a CI job's timeout) killed the parent only: its workers, orphaned, each held the
    others' pipes open and never saw EOF, and held stdout, so the CI step waited forever."""
    run, workers, _, stderr = _interrupted_run(tmp_path, signal.SIGTERM)
    assert run.returncode == 143
    assert stderr.decode().splitlines() == [
        "lite_guard check: terminated (SIGTERM); the run's findings were not reported"]
    time.sleep(0.5)
    assert not [pid for pid in workers if _alive(pid)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_workers_die_with_a_killed_parent_so_the_output_pipe_closes(tmp_path):
    run, workers, _, _ = _interrupted_run(tmp_path, signal.SIGKILL)
    assert run.returncode == -signal.SIGKILL
    time.sleep(0.5)
    assert not [pid for pid in workers if _alive(pid)]


# ---- fuzz: arguments that would waste a run ---------------------------------------------------

@pytest.mark.parametrize("args, line", [
    # NaN compares false with everything: `--time nan` ran 100 programs with no time box.
    (["--time", "nan"], "lite_guard fuzz: --count, --time and --max-steps must be positive (and"
                        " --time finite)"),
    # Found only when the first reproducer was due (minutes or hours in): a traceback then.
    (["--out", "a_file/repros"], "lite_guard fuzz: --out: a_file is not a folder, so"
                                 " a_file/repros cannot be created; pass another path"),
    (["--sweep", "--sweep-out", "."], "lite_guard fuzz: --sweep-out: . exists and is not a regular"
                                      " file; pass another path"),
])
def test_fuzz_arguments_that_would_waste_a_run_are_one_line_exit_2(tmp_path, args, line):
    (tmp_path / "a_file").write_text("")
    result = lite_guard("fuzz", "--count", "1", *args, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [line]
    assert result.stdout == ""


# ---- trace: scripts that misbehave -------------------------------------------------------------

COMPILE = ("import torch\n"
           "torch.compile(lambda x: x.sin() + 1, backend='lite')(torch.randn(4))\n")


def test_trace_of_a_script_that_closes_stdout_still_prints_its_ledger(tmp_path):
    """`sys.stdout.close()` in the script: flushing it after the script was a ValueError
    traceback, and the ledger was lost."""
    (tmp_path / "script.py").write_text(COMPILE + "import sys\nsys.stdout.close()\n")
    result = lite_guard("trace", "--json", "script.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["lite"][0]["graph"] == "graph0"


def test_trace_of_a_script_that_changes_directory_writes_the_page_where_asked(tmp_path):
    """The default-mode run looked for the script, and the page was written, relative to the
    directory the script moved to: '/script.py' not found, exit 2, no page."""
    (tmp_path / "script.py").write_text(COMPILE + "import os\nos.chdir('/')\n")
    result = lite_guard("trace", "--html", "page.html", "script.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "wrote page.html"
    assert "default mode (observed)" in (tmp_path / "page.html").read_text()


def test_trace_of_a_script_raising_its_own_base_exception_is_one_line(tmp_path):
    (tmp_path / "script.py").write_text("class Stop(BaseException):\n    pass\n\n\n"
                                        "raise Stop('from the script')\n")
    result = lite_guard("trace", "script.py", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "lite_guard trace: script.py raised Stop: from the script (in lite mode)"]


# ---- terminal escapes in registry text and script errors ---------------------------------------

ESCAPING = ('[[pass]]\nname = "proj.passes:E\\u001b[2Jvil\\nforged"\nstage = "post_grad"\n'
            'lite = "always"\nkind = "class"\nwhy = "x\\u001b]0;title\\u0007 \\r\\nLG001 fake"\n')


def test_registry_show_and_list_cannot_steer_the_terminal(tmp_path):
    """ESC [2J (clear the screen) and OSC 0 (retitle the terminal) in a registry entry reached
    the reader's terminal raw, and a newline in a name or why forged lines, through `registry
    show`, `list` and show's "did you mean"."""
    (tmp_path / "esc.toml").write_text(ESCAPING)
    name = "proj.passes:E\x1b[2Jvil\nforged"
    shown = lite_guard("registry", "show", "--no-project", "--registry", "esc.toml", name,
                       cwd=tmp_path)
    assert shown.returncode == 0
    assert shown.stdout.splitlines()[:4] == ["      name: proj.passes:E\\x1b[2Jvil\\nforged",
                                             "     stage: post_grad", "      lite: always",
                                             "       why: x\\x1b]0;title\\x07 \\r\\nLG001 fake"]
    missed = lite_guard("registry", "show", "--no-project", "--registry", "esc.toml", name[:-3],
                        cwd=tmp_path)
    assert missed.returncode == 2
    assert missed.stderr.splitlines() == [
        "lite_guard registry show: no pass or config named 'proj.passes:E\\x1b[2Jvil\\nfor' in the"
        " registry; did you mean: proj.passes:E\\x1b[2Jvil\\nforged? (list them with 'lite_guard"
        " registry list')"]
    listed = lite_guard("registry", "list", "--no-project", "--registry", "esc.toml", cwd=tmp_path,
                        env={"COLUMNS": "400"})
    assert listed.returncode == 0
    for output in (shown.stdout, missed.stderr, listed.stdout):
        assert "\x1b" not in output and "\x07" not in output and "\r" not in output


def test_a_script_error_with_escapes_is_one_escaped_line(tmp_path):
    (tmp_path / "script.py").write_text("raise ValueError('bad \\x1b]0;title\\x07 thing')\n")
    result = lite_guard("trace", "script.py", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "lite_guard trace: script.py raised ValueError: bad \\x1b]0;title\\x07 thing (in lite mode)"]


@pytest.mark.parametrize("pattern", [".", "/", ""])
def test_an_exclude_that_is_no_pattern_is_one_line_exit_2(tmp_path, pattern):
    """exclude = ["."] reached Path.match(""): 'ValueError: empty pattern', a traceback."""
    root = hostile_tree(tmp_path)
    (root / "pyproject.toml").write_text(f'[tool.lite_guard]\npaths = ["."]\nexclude = ["{pattern}"]\n')
    result = lite_guard("check", cwd=root)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"lite_guard: {root / 'pyproject.toml'}:3: [tool.lite_guard] exclude: '{pattern}' is not a"
        ' path pattern; write e.g. "build/" or "tests/*.py"']


# ---- syntax of another Python -----------------------------------------------------------------

@pytest.mark.skipif(sys.version_info >= (3, 12), reason="PEP 695 parses from Python 3.12 on")
def test_newer_syntax_is_lg900_that_names_the_grammar_and_what_to_do(tmp_path):
    """`type Alias[T] = list[T]` (3.12) under 3.11 was 'cannot parse: invalid syntax' with no
    hint that the code is fine and the linter's Python too old."""
    root = hostile_tree(tmp_path, {"new.py": "type Alias[T] = list[T]\n" + REAL_PASS})
    result = lite_guard("check", "--no-project", "--registry", str(VOCABULARY), "--no-cache", ".",
                        cwd=root)
    assert result.returncode == 1
    assert "new.py:1:6 LG900 cannot parse: invalid syntax; the file was not checked (parsed as" \
           " Python 3.11; if it is written for a newer Python, run lite_guard with that one)" \
           in result.stdout.splitlines()


# ---- a cache the code under review can plant -------------------------------------------------

def test_a_cache_inside_the_linted_tree_is_not_trusted(tmp_path):
    """LITE_GUARD_CACHE_DIR inside the checkout (to let CI cache it): a pull request can commit
    the whole cache, secret included (git checks files out 0600 under umask 077), with a record
    MAC'd by that secret that says the tree is clean: the pass was hidden, exit 0."""
    root = hostile_tree(tmp_path)
    made = tmp_path / "attackers_cache"  # made on the attacker's machine, for this very tree
    first = lite_guard("check", "--no-project", "--registry", str(VOCABULARY), ".", cwd=root,
                       env={"LITE_GUARD_CACHE_DIR": str(made)})
    assert first.returncode == 1
    secret = (made / "lint-v3" / "secret.key").read_bytes()
    (record,) = (made / "lint-v3").glob("run-*.json")
    run_key = record.stem.removeprefix("run-")
    body = json.loads(record.read_bytes().partition(b"\n")[2])
    hidden = json.dumps({**body, "findings": []}, separators=(",", ":")).encode()
    mac = hmac.new(secret, b"lite-guard lint run\0" + run_key.encode() + b"\0" + hidden,
                   "sha256").hexdigest()
    record.write_bytes(mac.encode() + b"\n" + hidden)
    cache = root / ".lite_guard_cache"
    made.rename(cache)  # committed, and checked out where CI's LITE_GUARD_CACHE_DIR points
    again = lite_guard("check", "--no-project", "--registry", str(VOCABULARY), ".", cwd=root,
                       env={"LITE_GUARD_CACHE_DIR": str(cache)})
    assert again.returncode == 1
    assert again.stdout.startswith("real_pass.py:4:7 LG001 graph pass 'real_pass:MyPass'")
    assert again.stderr.splitlines()[0] == (
        f"lite_guard: warning: lint cache not used: {cache} is inside the linted tree {root},"
        " which the code under review controls; set LITE_GUARD_CACHE_DIR outside it")


def test_a_cache_in_the_checkout_of_a_linted_folder_is_not_trusted(tmp_path):
    """The usual layout: [tool.lite_guard] paths = ["src"], the cache beside it in the checkout."""
    checkout = tmp_path / "checkout"
    (checkout / ".git").mkdir(parents=True)
    src = hostile_tree(checkout)  # checkout/tree: the linted folder
    cache = checkout / ".lite_guard_cache"
    result = lite_guard("check", "--no-project", "--registry", str(VOCABULARY), str(src), cwd=checkout,
                        env={"LITE_GUARD_CACHE_DIR": str(cache)})
    assert result.returncode == 1
    assert result.stderr.splitlines()[0] == (
        f"lite_guard: warning: lint cache not used: {cache} is inside the checkout {checkout},"
        " which the code under review controls; set LITE_GUARD_CACHE_DIR outside it")
    assert not cache.exists()


def test_lintrunner_adapter_with_paths_on_its_command_line(tmp_path):
    """`python -m lint_rules.lintrunner a.py --registry R` (paths given, no @file) ended the
    check's arguments with a bare "--": 'unrecognized arguments: --', exit 2, nothing linted."""
    root = hostile_tree(tmp_path)
    result = _lintrunner(root, "real_pass.py")
    assert result.returncode == 0, result.stderr
    assert '"path": "real_pass.py", "line": 4, "char": 7' in result.stdout


def test_fix_with_only_uncheckable_files_reports_them(tmp_path):
    """--fix on findings that have no entry to write (LG900) still looked for a registry to
    write: 'the only registries in use are shipped...', exit 2, and the LG900 was never shown."""
    root = tmp_path / "tree"
    root.mkdir()
    (root / "broken.py").write_text("x = (\n")
    result = lite_guard("check", "--fix", "--no-project", "--check-syntax", ".", cwd=root)
    assert result.returncode == 1
    assert result.stdout.startswith("broken.py:1:5 LG900 cannot parse: '(' was never closed;")


def test_the_project_registry_named_again_on_the_command_line_is_loaded_once(tmp_path):
    """`--registry lite_guard_registry.toml`, already in [tool.lite_guard] registries: every
    entry was a 'duplicate pass ... (first defined at' the same file, exit 2."""
    root = hostile_tree(tmp_path)
    (root / "reg.toml").write_text('[[pass]]\nname = "real_pass:MyPass"\nstage = "post_grad"\n'
                                   'lite = "never"\nkind = "class"\n')
    (root / "pyproject.toml").write_text('[tool.lite_guard]\npaths = ["."]\nregistries = ["reg.toml"]\n')
    result = lite_guard("check", "--registry", "./reg.toml", cwd=root)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[-1] == "0 finding(s)"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_mid_run_is_one_line_exit_130_and_leaves_no_record(tmp_path):
    run, workers, stdout, stderr = _interrupted_run(tmp_path, signal.SIGINT)
    assert run.returncode == 130
    assert stderr.decode().splitlines() == ["lite_guard check: interrupted"]
    assert stdout == b""
    time.sleep(0.5)
    assert not [pid for pid in workers if _alive(pid)]
    assert not list((tmp_path / "cache").glob("lint-v3/run-*.json"))


@pytest.mark.parametrize("kind", ["link to /dev/zero", "directory"])
def test_a_pyproject_that_is_not_a_file_is_one_line_not_the_parents(tmp_path, kind):
    """A pyproject.toml that is no regular file was skipped, and the search went on to a parent
    folder's pyproject.toml: another project's settings (paths, registries) silently applied."""
    (tmp_path / "pyproject.toml").write_text('[tool.lite_guard]\npaths = ["elsewhere"]\n')
    root = hostile_tree(tmp_path)
    if kind == "directory":
        (root / "pyproject.toml").mkdir()
    else:
        (root / "pyproject.toml").symlink_to("/dev/zero")
    result = lite_guard("check", cwd=root)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"lite_guard: {root / 'pyproject.toml'}: pyproject.toml is not a regular file (a"
        " directory, FIFO, device or dangling link); make it a file or remove it"]


def test_the_registries_summary_line_escapes_a_registry_file_name(tmp_path):
    root = hostile_tree(tmp_path)
    odd = tmp_path / "v\x1b[2J\n.toml"
    odd.write_bytes(VOCABULARY.read_bytes())
    result = lite_guard("check", "--no-project", "--registry", str(odd), ".", cwd=root)
    assert result.returncode == 1
    (summary,) = [line for line in result.stderr.splitlines() if line.startswith("registries: ")]
    assert summary.endswith(f"{tmp_path}/v\\x1b[2J\\n.toml") and "\x1b" not in result.stderr


def test_fix_prints_an_observer_name_with_escapes_on_one_escaped_line(tmp_path):
    """A GraphTransformObserver's pass name is any string: --fix printed it raw on stderr."""
    root = tmp_path / "tree"
    root.mkdir()
    (root / "obs.py").write_text("from torch.fx.passes.graph_transform_observer import"
                                 " GraphTransformObserver\n\n\ndef run(gm):\n"
                                 "    with GraphTransformObserver(gm, 'evil\\x1b[2Jpass'):\n"
                                 "        pass\n")
    (tmp_path / "reg.toml").write_text("")
    result = lite_guard("check", "--fix", "--no-project", "--registry", str(tmp_path / "reg.toml"),
                        ".", cwd=root)
    assert result.returncode == 1  # the placeholder why, until a person decides
    assert f"lite_guard check --fix: added to {tmp_path / 'reg.toml'}: 1 fail-closed entry (pass" \
           " obs:evil\\x1b[2Jpass)" in result.stderr.splitlines()
    assert "\x1b" not in result.stderr + result.stdout
