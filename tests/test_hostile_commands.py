"""Hostile input to the commands BENCH owns (round 5 red team): ``lite_guard trace``, ``fuzz``,
``registry`` and the CLI shell. Every case runs the real CLI in a subprocess and asserts the exact
stderr line, the documented exit code (0 clean, 1 findings, 2 usage), no traceback and bounded
time; each test failed before its fix (the docstring says how).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
TORCH_BOUND = 300  # seconds: a command that imports torch, on 2 shared cores


def lite_guard(*args: str, cwd: Path, env: dict | None = None,
               bound: float = TORCH_BOUND) -> subprocess.CompletedProcess:
    """The CLI in a subprocess: bounded time, no traceback, no signal; output as text."""
    started = time.monotonic()
    result = subprocess.run([str(BIN / "lite_guard"), *args], cwd=cwd, capture_output=True,
                            timeout=bound, stdin=subprocess.DEVNULL,
                            env={**os.environ, "LITE_GUARD_CACHE_DIR": str(cwd / ".cache"),
                                 **(env or {})})
    result.seconds = time.monotonic() - started
    result.stdout = result.stdout.decode("utf-8")  # strict: output must be valid UTF-8
    result.stderr = result.stderr.decode("utf-8")
    assert result.returncode >= 0, f"killed by signal {-result.returncode}: {result.stderr}"
    assert "Traceback" not in result.stderr, result.stderr
    return result


# ---- the CLI shell ----------------------------------------------------------------------------

UNICODE_ENTRY = ('[[pass]]\nname = "proj.passes:caf\u00e9"\nstage = "post_grad"\n'
                 'lite = "never"\nwhy = "r\u00e9sum\u00e9 \u2603"\n')


@pytest.mark.parametrize("action", [["show", "proj.passes:caf\u00e9"], ["list", "--stage", "post_grad"]])
def test_registry_text_an_ascii_terminal_cannot_encode_is_escaped_not_a_traceback(tmp_path, action):
    """PYTHONIOENCODING=ascii (or a latin-1 terminal) and a registry's `why = "résumé ☃"`:
    `registry show` died with a UnicodeEncodeError traceback, exit 1."""
    (tmp_path / "extra.toml").write_text(UNICODE_ENTRY, encoding="utf-8")
    result = lite_guard("registry", *action, "--registry", "extra.toml", cwd=tmp_path,
                        env={"PYTHONIOENCODING": "ascii"}, bound=60)
    assert result.returncode == 0, result.stderr
    assert "r\\xe9sum\\xe9 \\u2603" in result.stdout  # escaped, nothing dropped


# ---- trace: scripts whose own objects misbehave -----------------------------------------------

@pytest.mark.parametrize("body, line", [
    ("class E(Exception):\n    def __str__(self):\n        raise RuntimeError('no')\n\n\nraise E()\n",
     "lite_guard trace: script.py raised E: <E whose str() raised> (in lite mode)"),
    ("class B(BaseException):\n    def __str__(self):\n        raise ValueError('no')\n\n\nraise B()\n",
     "lite_guard trace: script.py raised B: <B whose str() raised> (in lite mode)"),
    ("class C:\n    def __repr__(self):\n        raise RuntimeError('no')\n\n\nraise SystemExit(C())\n",
     "lite_guard trace: script.py exited with <C whose repr() raised> in lite mode"),
])
def test_trace_of_a_script_whose_error_cannot_be_printed_is_one_line_exit_2(tmp_path, body, line):
    """An exception whose __str__ raises (or a SystemExit code whose __repr__ does): trace's
    own failure line raised inside its except clause, a traceback from lite_guard, exit 1."""
    (tmp_path / "script.py").write_text(body)
    result = lite_guard("trace", "script.py", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [line]


def test_trace_of_a_script_that_exits_false_is_a_clean_exit(tmp_path):
    (tmp_path / "script.py").write_text("import sys\nsys.exit(False)\n")  # Python exits 0
    assert lite_guard("trace", "script.py", cwd=tmp_path).returncode == 0


def test_trace_html_that_cannot_be_written_is_refused_before_the_script_runs(tmp_path):
    """--html naming a folder: the script ran in lite mode and again in default mode (minutes
    for a real model), then 'cannot write'; now one line before anything runs."""
    (tmp_path / "page").mkdir()
    (tmp_path / "script.py").write_text("open('ran', 'w').close()\n")
    result = lite_guard("trace", "--html", "page", "script.py", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"lite_guard trace: --html: {tmp_path / 'page'} exists and is not a regular file;"
        " pass another path"]
    assert not (tmp_path / "ran").exists()


def test_trace_of_a_folder_says_it_is_not_a_regular_file(tmp_path):
    (tmp_path / "folder").mkdir()
    result = lite_guard("trace", "folder", cwd=tmp_path, bound=60)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "lite_guard trace: no such script: 'folder' (not a regular file); give the path of a"
        " Python script"]


# ---- fuzz: sizes that would never finish ------------------------------------------------------

def test_fuzz_with_a_huge_count_stops_at_its_time_limit(tmp_path):
    """--count 10**23 --time 3: every program was drawn before the first ran (and before the
    deadline was first looked at), so the run never ended; now programs are drawn one at a time
    and the deadline stops the drawing too."""
    result = lite_guard("fuzz", "--count", str(10**23), "--time", "3", "--out", "repros",
                        cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1].endswith("0 failed, 0 skipped")
    assert "time limit reached after" in result.stderr
    assert result.seconds < 200


def test_fuzz_drawing_hands_back_what_the_visitor_raised_as_itself():
    """An error while a program is checked (a full disk under --out, Ctrl-C) surfaces as that
    error, not as hypothesis' 'Flaky' about a program it replayed."""
    from lite_compiler.fuzz.session import draw_programs, each_program

    seen = []

    def visit(program):
        seen.append(program)
        if len(seen) == 3:
            raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        each_program(10, 5, visit)
    assert seen == draw_programs(3, seed=5)  # the same programs, in the same order, no replay


def test_an_empty_registry_path_is_named_as_empty(tmp_path):
    """`--registry ''` was Path('.'), reported as 'not a regular file (... or directory)'."""
    result = lite_guard("registry", "list", "--registry", "", cwd=tmp_path, bound=60)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "lite_guard registry list: error: argument --registry: an empty path; name a registry"
        " TOML file (see 'lite_guard registry list --help')"]


def test_ctrl_c_in_a_traced_script_still_prints_what_compiled_and_exits_130(tmp_path):
    """KeyboardInterrupt in the script was re-raised past the report: 'interrupted', exit 130,
    and the ledgers of the compiles that had run were lost."""
    import json

    (tmp_path / "script.py").write_text(
        "import torch\ntorch.compile(lambda x: x.sin() + 1, backend='lite')(torch.randn(4))\n"
        "raise KeyboardInterrupt\n")
    result = lite_guard("trace", "--json", "script.py", cwd=tmp_path)
    assert result.returncode == 130
    assert json.loads(result.stdout)["lite"][0]["graph"] == "graph0"
    assert result.stderr.splitlines()[-1] == "lite_guard trace: script.py was interrupted in lite mode"


def test_a_force_value_nested_100000_deep_is_one_line_exit_2(tmp_path):
    """json.loads raised RecursionError (only JSONDecodeError was caught): a traceback."""
    result = lite_guard("fuzz", "--count", "1", "--out", "repros", "--force",
                        "max_autotune=" + "[" * 100_000, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "lite_guard fuzz: --force max_autotune: the value is nested too deeply to be a config value"]


def test_the_registry_sweep_stops_at_its_time_limit_and_says_what_it_did_not_run(tmp_path):
    """--sweep drew every program (--count of them) before anything else and ignored --time."""
    result = lite_guard("fuzz", "--sweep", "--count", str(10**20), "--time", "3",
                        "--sweep-out", "sweep.md", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "not run: --time ran out" in result.stdout.splitlines()[-1]
    assert "Not run (the --time of 3.0 s ran out first)" in (tmp_path / "sweep.md").read_text()
    assert result.seconds < 200


@pytest.mark.parametrize("rebind", ["io.StringIO()", "object()", "None"])
def test_trace_of_a_script_that_rebinds_sys_stdout_still_prints_its_ledger(tmp_path, rebind):
    """`sys.stdout = io.StringIO()` in the script: the ledger table was printed into the
    script's buffer (lost, exit 0); `sys.stdout = object()`: an AttributeError traceback."""
    (tmp_path / "script.py").write_text(
        "import io, sys\nimport torch\n"
        "torch.compile(lambda x: x.sin() + 1, backend='lite')(torch.randn(4))\n"
        f"sys.stdout = {rebind}\n")
    result = lite_guard("trace", "script.py", cwd=tmp_path, env={"COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    assert "lite compile graph0" in result.stdout and "allowed" in result.stdout


@pytest.mark.parametrize("statement", ["os.close(1)", "os.dup2(os.open(os.devnull, os.O_WRONLY), 1)"])
def test_trace_of_a_script_that_closes_or_redirects_descriptor_1_still_prints_its_ledger(
        tmp_path, statement):
    """`os.close(1)` in the script: 'lite_guard: the system refused: Bad file descriptor; free
    resources and run again', exit 2, and no ledger (redirected: the ledger went to /dev/null)."""
    (tmp_path / "script.py").write_text(
        "import os\nimport torch\n"
        "torch.compile(lambda x: x.sin() + 1, backend='lite')(torch.randn(4))\n"
        f"{statement}\n")
    result = lite_guard("trace", "script.py", cwd=tmp_path, env={"COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    assert "lite compile graph0" in result.stdout and "allowed" in result.stdout
