"""The on/off environment variables read one way everywhere (lite_guard.env_switch): off, false
and no switch a cache off as 0 does; a value that is neither on nor off keeps the default and says
so in one line. Each test sets the variable and looks at what it switches (a cache directory
written or not, the collector's thresholds, files parsed by the lint)."""

import gc
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from lite_guard.env_switch import EnvSwitchWarning, switch
from lite_guard.registry import shipped_registry_files
from lite_guard.registry_cache import cached_registry

REPO = Path(__file__).resolve().parent.parent


def _files_under(path: Path) -> list[Path]:
    return [p for p in path.rglob("*") if p.is_file()]


@pytest.mark.parametrize("value, cached", [("off", False), ("FALSE", False), (" no ", False),
                                           ("0", False), ("on", True), ("1", True)])
def test_registry_cache_switch_reads_on_and_off_words(monkeypatch, tmp_path, value, cached):
    monkeypatch.setenv("LITE_GUARD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LITE_GUARD_REGISTRY_CACHE", value)
    registry = cached_registry(shipped_registry_files(), torch_version="2.13.0")
    assert registry.passes
    assert bool(_files_under(tmp_path / "cache")) is cached


def test_verdict_cache_switch_reads_on_and_off_words(monkeypatch, tmp_path):
    pytest.importorskip("torch")
    from lite_compiler.verdict_cache import VerdictStore

    monkeypatch.setenv("LITE_GUARD_CACHE_DIR", str(tmp_path))
    for value, opened in (("off", False), ("no", False), ("yes", True), ("", True)):
        monkeypatch.setenv("LITE_GUARD_VERDICT_CACHE", value)
        assert (VerdictStore.open() is not None) is opened, value


def test_gc_deferral_switch_reads_off_words(monkeypatch):
    from lite_compiler.gc_deferral import full_collections_deferred

    before = gc.get_threshold()
    monkeypatch.setenv("LITE_GUARD_DEFER_GC", "off")
    with full_collections_deferred():
        assert gc.get_threshold() == before  # not deferred
    monkeypatch.setenv("LITE_GUARD_DEFER_GC", "on")
    with full_collections_deferred():
        assert gc.get_threshold()[2] > before[2]  # the old generation waits
    assert gc.get_threshold() == before


def _check(tmp_path: Path, value: str) -> subprocess.CompletedProcess:
    (tmp_path / "a.py").write_text("import torch\n")
    env = {**os.environ, "LITE_GUARD_NO_PREFILTER": value}
    return subprocess.run([sys.executable, "-m", "lite_guard", "check", "--no-project", "--no-cache",
                           "--jobs", "1", str(tmp_path / "a.py")], capture_output=True, text=True,
                          env=env, cwd=REPO)


def test_prefilter_switch_reads_on_and_off_words(monkeypatch):
    from lint_rules import prefilter

    for value, used in (("true", False), ("YES", False), ("1", False), ("off", True),
                        ("false", True), ("0", True), ("", True)):
        monkeypatch.setenv("LITE_GUARD_NO_PREFILTER", value)
        assert prefilter.enabled() is used, value


def test_an_unknown_value_is_one_warning_line_and_the_lint_runs_as_by_default(tmp_path):
    plain = _check(tmp_path, "")
    odd = _check(tmp_path, "maybe")
    assert odd.returncode == plain.returncode == 0
    warning = ("lite_guard: warning: LITE_GUARD_NO_PREFILTER='maybe' is neither on (1, true, yes,"
               " on) nor off (0, false, no, off); the default (off) is used: set one of those or"
               " unset it")
    assert odd.stderr.splitlines()[0] == warning
    assert odd.stderr.count("warning") == 1 and "warning" not in plain.stderr
    assert odd.stdout == plain.stdout and odd.stderr.splitlines()[-1] == plain.stderr.splitlines()[-1]


def test_an_unknown_value_warns_once_per_value_and_keeps_the_default(monkeypatch):
    monkeypatch.setenv("LITE_GUARD_TEST_SWITCH", "enabled")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert switch("LITE_GUARD_TEST_SWITCH", True) is True
        assert switch("LITE_GUARD_TEST_SWITCH", True) is True
    assert [type(w.message) for w in seen] == [EnvSwitchWarning]
    assert "LITE_GUARD_TEST_SWITCH='enabled'" in str(seen[0].message)
