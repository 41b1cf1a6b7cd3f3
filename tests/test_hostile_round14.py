"""Hostile inputs of round 14, through the real commands on real files (helpers of
tests/test_hostile.py, every subprocess bounded by a timeout): help and version text written to
a full device; empty and folder entries in ``[tool.lite_guard]``; a lintrunner command line that
ends its own options; a registry name written with decomposed letters; scripts under ``trace``
whose errors Python ignores (a thread, ``__del__``, ``atexit``) or that leave a thread running;
a torch that cannot start its compiler (``TORCHINDUCTOR_CACHE_DIR``) under ``trace`` and
``fuzz``; class bases written as ``getattr(module, "Name")`` or as an item of a variable."""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import time

import pytest

from test_hostile import BIN, BOUND, VOCABULARY, assert_real_finding, check, \
    hostile_tree, lite_guard

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PASS_BODY = '''
    def __call__(self, graph):
        return graph

    def uuid(self):
        return "x"
'''
IMPORT = "from torch._inductor.custom_graph_pass import CustomGraphPass\n"
TRACE_BOUND = 60  # trace and fuzz import torch (about 5 s on two shared cores)


def _lines(result: subprocess.CompletedProcess, path: str) -> list[str]:
    return [line for line in result.stdout.splitlines() if line.startswith(f"{path}:")]


def _hint(name: str) -> str:
    return (f"is not in any registry; register it: [[pass]] name = \"{name}\", stage = \"post_grad\","
            " lite = \"never\", kind = \"class\"")


def _to_full_device(*args: str, cwd) -> subprocess.CompletedProcess:
    with open("/dev/full", "w") as full:
        return subprocess.run([str(BIN / "lite_guard"), *args], cwd=cwd, stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=BOUND,
                              stdin=subprocess.DEVNULL)


# ---- (a) argparse's own output (help, version) to a device that refuses it -----------------------

@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs Linux's /dev/full")
@pytest.mark.parametrize("args", [("--version",), ("--help",), ("check", "--help")])
def test_help_and_version_that_cannot_be_written_are_one_line_and_exit_2(tmp_path, args):
    """argparse prints help and version itself and drops an OSError: ``lite_guard --version >
    /dev/full`` printed nothing and exited 0, a green CI step that lost its output. Now it is
    the one line every other unwritable output gives."""
    result = _to_full_device(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        "lite_guard: cannot write the output: No space left on device; free space or write it elsewhere"]


# ---- (b) empty and folder entries in [tool.lite_guard] -------------------------------------------

def _project(tmp_path, settings: str):
    root = hostile_tree(tmp_path)
    (root / "pyproject.toml").write_text("[project]\nname = \"x\"\n\n[tool.lite_guard]\n" + settings)
    return root


def test_an_empty_path_in_pyproject_paths_is_one_line_not_the_whole_project(tmp_path):
    """``paths = ["src", ""]`` (a template variable left empty) joined "" to the project folder
    and linted all of it, silently; ``lite_guard check ""`` is refused since round 13."""
    root = _project(tmp_path, 'paths = [\n    "real_pass.py",\n    "",\n]\n')
    result = lite_guard("check", cwd=root)
    assert result.returncode == 2, result.stdout
    assert result.stderr.splitlines() == [
        f"lite_guard: {root}/pyproject.toml:5: [tool.lite_guard] paths holds an empty path; remove"
        " it or name a file or folder"]


@pytest.mark.parametrize("entry, said", [
    ('""', "registries holds an empty path; remove it or name a registry TOML file"),
    ('"."', "registries: '.' is a folder, not a registry file; name each registry TOML file in it"),
])
def test_a_registries_entry_that_is_empty_or_a_folder_is_one_line_on_its_pyproject_line(
        tmp_path, entry, said):
    """``registries = [""]`` or ``["."]`` was ``<project folder>:0: cannot read registry file:
    not a regular file``: a line on no file one could open, naming no setting. It is now the
    pyproject's line, saying what is wrong with the entry."""
    root = _project(tmp_path, f'paths = ["real_pass.py"]\nregistries = [{entry}]\n')
    result = lite_guard("check", cwd=root)
    assert result.returncode == 2, result.stdout
    assert result.stderr.splitlines() == [f"lite_guard: {root}/pyproject.toml:6: [tool.lite_guard] {said}"]


# ---- (c) the lintrunner adapter given a command line that ends its options ----------------------

def test_lintrunner_adapter_after_double_dash_adds_no_second_one(tmp_path):
    """``command = [..., "--", "@{{PATHSFILE}}"]`` (a careful config ending options before the
    file list) got a second "--" from the adapter, which check read as a path: a "--: no such
    file" error line and exit 2 beside the findings."""
    root = hostile_tree(tmp_path)
    paths_file = tmp_path / "paths.txt"
    paths_file.write_text("real_pass.py\n")
    result = subprocess.run(
        [sys.executable, "-P", "-m", "lint_rules.lintrunner", "--no-project", "--registry",
         str(VOCABULARY), "--", f"@{paths_file}"], cwd=root, capture_output=True, text=True,
        timeout=BOUND, stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": REPO, "LITE_GUARD_CACHE_DIR": str(tmp_path / "cache")})
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "no such file" not in result.stderr, result.stderr
    (message,) = result.stdout.splitlines()
    assert '"path": "real_pass.py", "line": 4' in message and '"name": "LG001"' in message


# ---- (d) a registry name written with decomposed letters ----------------------------------------

def test_a_registry_name_with_decomposed_letters_shows_what_to_write_visibly(tmp_path):
    """``name = "mypkg:Café"`` typed with "e" + U+0301 matches no class (Python composes
    identifiers). The round-13 line said "write name = "mypkg:Café"": to the eye, exactly what
    was written. The composed spelling is now given in TOML escapes, which paste as it."""
    root = hostile_tree(tmp_path)
    (root / "reg.toml").write_text('[[pass]]\nname = "mypkg:Cafe\u0301"\nstage = "post_grad"\n'
                                   'lite = "never"\nkind = "class"\n', encoding="utf-8")
    result = check(root, "--registry", "reg.toml")
    assert result.returncode == 2, result.stdout
    assert result.stderr.splitlines() == [
        "lite_guard: reg.toml:2: pass 'mypkg:Cafe\u0301' (class) is written with decomposed letters"
        " (\"mypkg:Cafe\\u0301\"); Python composes identifiers (NFKC), so this name matches no"
        " class; write name = \"mypkg:Caf\\u00e9\""]


# ---- (e) trace: errors Python ignores, threads left running --------------------------------------

@pytest.mark.parametrize("body, said", [
    ("import atexit\n\ndef bye():\n    raise SystemExit(3)\n\natexit.register(bye)\n",
     r"exception ignored in atexit callback, as Python ignores it: SystemExit: 3"),
    ("import threading\nt = threading.Thread(target=lambda: 1 / 0, name='worker')\nt.start()\n"
     "t.join()\n",
     r"exception ignored in thread worker, as Python ignores it: ZeroDivisionError: division by zero"),
    ("class A:\n    def __del__(self):\n        raise ValueError('\\x1b[2Jboom')\n\n\na = A()\ndel a\n",
     r"exception ignored in <function A.__del__ at 0x[0-9a-f]+>, as Python ignores it:"
     r" ValueError: \\x1b\[2Jboom"),
])
def test_trace_reports_an_error_python_ignores_as_one_escaped_line(tmp_path, body, said):
    """An exception in a thread, in ``__del__`` or in an ``atexit`` callback (even SystemExit)
    is printed by Python as a traceback and ignored: under trace that was a traceback after the
    ledgers (read in a CI log as trace crashing), and ``__del__``'s message reached the terminal
    raw (an ESC that clears the screen). Now one escaped line; the status stays Python's, 0."""
    script = tmp_path / "ignored.py"
    script.write_text(body)
    result = lite_guard("trace", str(script), cwd=tmp_path, timeout=TRACE_BOUND)
    assert result.returncode == 0, result.stderr
    assert "no torch.compile ran in the script" in result.stdout
    said_lines = [line for line in result.stderr.splitlines() if line.startswith("lite_guard trace:")]
    assert len(said_lines) == 1, result.stderr
    assert re.fullmatch(rf"lite_guard trace: {re.escape(str(script))}: {said}", said_lines[0]), said_lines
    assert "\x1b" not in result.stderr + result.stdout


def test_trace_of_a_script_that_leaves_a_thread_running_says_what_it_waits_for(tmp_path):
    """A script that starts a non-daemon thread and returns: Python waits for the thread at exit,
    so trace printed the ledgers, then hung with nothing said. It still waits, as Python does,
    and says so in one line naming the thread and what to do."""
    script = tmp_path / "lingers.py"
    script.write_text("import threading, time\n"
                      "threading.Thread(target=time.sleep, args=(600,), name='poller').start()\n")
    process = subprocess.Popen([str(BIN / "lite_guard"), "trace", str(script)], cwd=tmp_path,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               stdin=subprocess.DEVNULL,
                               env={**os.environ, "LITE_GUARD_CACHE_DIR": str(tmp_path / "cache")})
    try:
        deadline = time.monotonic() + TRACE_BOUND
        said = b""
        while time.monotonic() < deadline and b"lite_guard trace:" not in said:
            # select, not readline: a trace that says nothing must fail the test, not hang it
            if select.select([process.stderr], [], [], 0.5)[0]:
                chunk = os.read(process.stderr.fileno(), 65536)
                assert chunk, f"trace ended without saying it waits: {said!r}"
                said += chunk
        line = next((x for x in said.decode().splitlines() if x.startswith("lite_guard trace:")), "")
        assert line == (
            f"lite_guard trace: {script} left 1 thread(s) running (poller); waiting for them to end,"
            " as Python does (make them daemon threads or join them in the script; Ctrl-C stops"
            " the wait)")
    finally:
        process.kill()
        process.communicate(timeout=BOUND)


# ---- (f) a torch that cannot start its compiler --------------------------------------------------

def test_trace_under_an_unusable_inductor_cache_dir_is_one_line_naming_the_setting(tmp_path):
    """``TORCHINDUCTOR_CACHE_DIR=/dev/null``: importing torch's compiler creates that folder and
    fails; trace's line was "lite_guard: '/dev/null': File exists; check the path and its
    permissions", naming no setting to fix. Said before the script runs, naming it."""
    script = tmp_path / "s.py"
    script.write_text("print('ran')\n")
    result = lite_guard("trace", str(script), cwd=tmp_path, timeout=TRACE_BOUND,
                        env={"TORCHINDUCTOR_CACHE_DIR": "/dev/null"})
    assert result.returncode == 2, result.stderr
    assert "ran" not in result.stdout
    assert result.stderr.splitlines() == [
        "lite_guard trace: torch cannot start its compiler (FileExistsError: [Errno 17] File exists:"
        " '/dev/null'); TORCHINDUCTOR_CACHE_DIR='/dev/null' names that path: point it at a folder"
        " you can write, or unset it"]


def test_fuzz_under_an_unusable_inductor_cache_dir_is_exit_2_not_all_skipped_and_green(tmp_path):
    """The same setting made aot_eager (the reference) fail on every program: "0 passed, 0
    failed, 1 skipped", exit 0, a fuzz job that tested nothing and passed."""
    result = lite_guard("fuzz", "--count", "1", "--out", str(tmp_path / "repros"), cwd=tmp_path,
                        timeout=TRACE_BOUND, env={"TORCHINDUCTOR_CACHE_DIR": "/dev/null/inductor"})
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.splitlines() == [
        "lite_guard fuzz: torch cannot start its compiler (NotADirectoryError: [Errno 20] Not a"
        " directory: '/dev/null/inductor'); TORCHINDUCTOR_CACHE_DIR='/dev/null/inductor' names that"
        " path: point it at a folder you can write, or unset it"]


# ---- (g) class bases written as getattr or as an item of a variable ------------------------------

@pytest.mark.parametrize("name, source", [
    ("by_getattr", "import torch._inductor.custom_graph_pass as cgp\n\n\n"
                   "class P(getattr(cgp, \"CustomGraphPass\")):" + PASS_BODY),
    ("from_dict", IMPORT + "BASES = {\"pass\": CustomGraphPass}\n\n\nclass P(BASES[\"pass\"]):" + PASS_BODY),
    ("from_tuple", IMPORT + "BASES = (object, CustomGraphPass)\n\n\nclass P(BASES[-1]):" + PASS_BODY),
])
def test_a_base_written_as_getattr_or_a_literal_item_is_read(tmp_path, name, source):
    """``class P(getattr(cgp, "CustomGraphPass"))``, ``class P(BASES["pass"])``: a call and a
    subscript of a literal dict or tuple, which the index did not follow: the pass was not
    reported (a green run). Each is read as the class it names now (summary v23)."""
    result = check(hostile_tree(tmp_path, {f"{name}.py": source}), "--no-cache")
    assert result.returncode == 1, result.stderr
    line = source.splitlines().index(next(x for x in source.splitlines() if x.startswith("class P"))) + 1
    assert _lines(result, f"{name}.py") == [
        f"{name}.py:{line}:7 LG001 graph pass '{name}:P' (class deriving from CustomGraphPass)"
        f" {_hint(f'{name}:P')}"]
    assert_real_finding(result)


def test_a_callable_class_whose_base_is_picked_at_run_time_is_reported(tmp_path):
    """``class P(BASES[random.randrange(2)])``: which item is the base is decided when the class
    statement runs. Like starred bases, a callable class whose base cannot be read is reported,
    not skipped; a subscripted class (``Generic[T]``) stays a base, not a finding."""
    source = (IMPORT + "import random\nfrom typing import Generic, TypeVar\n"
              "BASES = [object, CustomGraphPass]\nT = TypeVar(\"T\")\n\n\n"
              "class P(BASES[random.randrange(2)]):" + PASS_BODY
              + "\n\nclass G(Generic[T]):" + PASS_BODY)
    result = check(hostile_tree(tmp_path, {"picked.py": source}), "--no-cache")
    assert result.returncode == 1, result.stderr
    assert _lines(result, "picked.py") == [
        "picked.py:8:7 LG001 graph pass 'picked:P' (callable class whose base 'BASES[...]' is picked"
        " from a variable at run time, which cannot be resolved statically; if it is a pass base it"
        f" is a pass: name the base directly) {_hint('picked:P')}"]
    assert_real_finding(result)


def test_flake8_reads_a_getattr_base_as_check_does(tmp_path):
    """The flake8 plugin runs the same engine: the getattr base is a finding there too."""
    source = ("import torch._inductor.custom_graph_pass as cgp\n\n\n"
              "class P(getattr(cgp, \"CustomGraphPass\")):" + PASS_BODY)
    root = hostile_tree(tmp_path, {"by_getattr.py": source})
    result = subprocess.run([str(BIN / "flake8"), "-j", "2", "--select", "LG", "by_getattr.py",
                             "real_pass.py"], cwd=root, capture_output=True, text=True,
                            timeout=BOUND, stdin=subprocess.DEVNULL)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("by_getattr.py:4:7: LG001 graph pass 'by_getattr:P'") for line in lines), lines
    assert any(line.startswith("real_pass.py:4:7: LG001 graph pass 'real_pass:MyPass'") for line in lines), lines


# ---- (h) a lint cache secret of the wrong kind ---------------------------------------------------

@pytest.mark.parametrize("plant, said", [
    (lambda secret: os.mkfifo(secret, 0o600),
     "is not a private file of yours (a FIFO, socket or device, not a regular file)"),
    (lambda secret: os.symlink(os.devnull, secret), "is a symlink, which is not accepted"),
])
def test_a_cache_secret_that_is_a_fifo_or_a_link_is_a_warning_that_says_what_it_is(tmp_path, plant, said):
    """A FIFO planted as ``secret.key`` was refused as "mode 644" (a permission problem to the
    reader, fixed by no chmod), a symlink as "Too many levels of symbolic links". Each now says
    what the file is; the run goes on uncached, every finding reported."""
    root = hostile_tree(tmp_path)
    lite_guard("check", "--no-project", "--registry", str(VOCABULARY), ".", cwd=root)  # the cache
    secret = next((tmp_path / "cache").glob("lint-v*/secret.key"))
    secret.unlink()
    plant(str(secret))
    result = check(root)
    assert result.returncode == 1, result.stderr
    assert_real_finding(result)
    assert result.stderr.splitlines()[0] == (
        f"lite_guard: warning: lint cache not used: {secret} {said}; delete it to make a new one")


# ---- (i) trace: a script terminated, a script out of file descriptors ---------------------------

def test_trace_of_a_script_terminated_by_sigterm_prints_the_ledgers_and_one_line_exit_143(tmp_path):
    """SIGTERM (a CI job's timeout, here sent by the script to itself) killed trace with the
    script: no ledger, no line, status 143 from nowhere. It ends the script as Ctrl-C does:
    the ledgers of what ran, one line saying so, exit 143."""
    script = tmp_path / "stopped.py"
    script.write_text("import os, signal\nprint('before')\nos.kill(os.getpid(), signal.SIGTERM)\n"
                      "print('after')\n")
    result = lite_guard("trace", str(script), cwd=tmp_path, timeout=TRACE_BOUND)
    assert result.returncode == 143, result.stderr
    assert result.stdout.splitlines() == ["before", "no torch.compile ran in the script"]
    assert result.stderr.splitlines()[-1] == (
        f"lite_guard trace: {script} was terminated (SIGTERM) in lite mode")


def test_trace_of_a_script_that_uses_up_its_file_descriptors_still_prints_the_ledgers(tmp_path):
    """A script that lowers RLIMIT_NOFILE to 3: printing the ledgers imported rich afterwards and
    failed, "lite_guard: '.../rich/__init__.py': Too many open files; check the path and its
    permissions", exit 2, the ledgers lost. What printing needs is imported before the script."""
    script = tmp_path / "greedy.py"
    script.write_text("import resource\nresource.setrlimit(resource.RLIMIT_NOFILE, (3, 3))\nprint('x')\n")
    result = lite_guard("trace", str(script), cwd=tmp_path, timeout=TRACE_BOUND)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["x", "no torch.compile ran in the script"]
