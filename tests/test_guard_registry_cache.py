"""The validated registry cached per user (lite_guard.registry_cache): read back only when it is
authentic and for the very bytes in use; anything else is parsed again, never trusted."""

from __future__ import annotations

import io
import os
import pickle
import stat

import pytest

from lite_guard import registry_cache
from lite_guard.registry import UNSET, Registry, RegistryError, registry_paths

ENTRY = """
[[pass]]
name = "{name}"
stage = "post_grad"
lite = "never"
hook = "mypkg.passes:{name}"
why = "a project pass"

[[config]]
key = "epilogue_fusion"
kind = "optimization"
type = "bool"
lite_value = false
why = "forced off"
"""


@pytest.fixture()
def cache_dir(tmp_path, monkeypatch):
    directory = tmp_path / "cache"
    monkeypatch.setenv(registry_cache.ENV_DIR, str(directory))
    monkeypatch.delenv(registry_cache.ENV_SWITCH, raising=False)
    return directory


def _entries(cache_dir):
    layout = cache_dir / registry_cache.LAYOUT
    return sorted(layout.glob("*.pickle")) if layout.exists() else []


def _same(a: Registry, b: Registry) -> bool:
    return (a.passes, a.configs, a.pipelines, a.bases, a.files) == \
        (b.passes, b.configs, b.pipelines, b.bases, b.files)


def test_shipped_registry_read_back_equals_a_fresh_parse(cache_dir):
    paths = registry_paths(include_project=False)
    first = registry_cache.cached_registry(paths)
    assert len(_entries(cache_dir)) == 1
    again = registry_cache.cached_registry(paths)
    fresh = Registry.from_files(paths)
    assert again is not first and _same(again, fresh) and _same(first, fresh)
    assert again.content_hash() == fresh.content_hash()
    assert again.derive_lite_config("inductor", "2.13.0") == fresh.derive_lite_config("inductor", "2.13.0")
    # "classified, not forced" is the UNSET singleton, compared with "is": it must survive
    unforced = [c.key for c in again.configs if c.lite_value is UNSET]
    assert unforced == [c.key for c in fresh.configs if c.lite_value is UNSET] and unforced


def test_an_authentic_entry_is_what_is_used(cache_dir, tmp_path):
    """The entry for these bytes is read, not the files: replace its content (keeping a valid
    MAC, which only this user can compute) and that content comes back."""
    mine = tmp_path / "mine.toml"
    mine.write_text(ENTRY.format(name="my_pass"))
    other = tmp_path / "other.toml"
    other.write_text(ENTRY.format(name="other_pass"))
    registry_cache.cached_registry([mine])
    (entry,) = _entries(cache_dir)
    store = registry_cache._Store.open()
    try:
        substitute = Registry.from_files([other])
        substitute.files = (mine,)  # as if parsed from mine
        payload = registry_cache._dumps(substitute)
        entry.write_bytes(store._mac(entry.stem, payload) + payload)
    finally:
        store.close()
    loaded = registry_cache.cached_registry([mine])
    assert [p.name for p in loaded.passes] == ["other_pass"]


def test_an_edit_that_keeps_size_and_mtime_is_parsed_again(cache_dir, tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(ENTRY.format(name="pass_a"))
    before = os.stat(path)
    assert [p.name for p in registry_cache.cached_registry([path]).passes] == ["pass_a"]
    path.write_text(ENTRY.format(name="pass_b"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert [p.name for p in registry_cache.cached_registry([path]).passes] == ["pass_b"]


def test_a_tampered_entry_is_not_trusted(cache_dir, tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(ENTRY.format(name="my_pass"))
    registry_cache.cached_registry([path])
    (entry,) = _entries(cache_dir)
    forged = Registry.from_files([path])
    forged.passes = ()  # "nothing is registered": what a forger would like the guard to read
    payload = registry_cache._dumps(forged)
    entry.write_bytes(b"\0" * 32 + payload)  # no valid MAC
    loaded = registry_cache.cached_registry([path])
    assert [p.name for p in loaded.passes] == ["my_pass"]


def test_an_entry_with_foreign_globals_is_never_unpickled_into_them(cache_dir, tmp_path):
    """Even with a valid MAC, only the registry's own classes are ever built from an entry."""
    path = tmp_path / "mine.toml"
    path.write_text(ENTRY.format(name="my_pass"))
    registry_cache.cached_registry([path])
    (entry,) = _entries(cache_dir)
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            return (os.mkdir, (str(marker),))

    buffer = io.BytesIO()
    pickle.Pickler(buffer).dump(Evil())
    store = registry_cache._Store.open()
    try:
        entry.write_bytes(store._mac(entry.stem, buffer.getvalue()) + buffer.getvalue())
    finally:
        store.close()
    loaded = registry_cache.cached_registry([path])
    assert not marker.exists()
    assert [p.name for p in loaded.passes] == ["my_pass"]


def test_a_directory_others_may_write_is_not_used(cache_dir, tmp_path):
    cache_dir.mkdir()
    os.chmod(cache_dir, 0o777)
    path = tmp_path / "mine.toml"
    path.write_text(ENTRY.format(name="my_pass"))
    loaded = registry_cache.cached_registry([path])
    assert [p.name for p in loaded.passes] == ["my_pass"]
    assert not (cache_dir / registry_cache.LAYOUT).exists()


def test_a_secret_others_may_read_is_not_used(cache_dir, tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(ENTRY.format(name="my_pass"))
    registry_cache.cached_registry([path])
    secret = cache_dir / registry_cache.LAYOUT / registry_cache.SECRET_NAME
    assert stat.S_IMODE(os.stat(secret).st_mode) == 0o600
    os.chmod(secret, 0o644)
    assert registry_cache._Store.open() is None
    assert [p.name for p in registry_cache.cached_registry([path]).passes] == ["my_pass"]


def test_a_bad_registry_raises_as_from_files_does_and_caches_nothing(cache_dir, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[pass]]\nname = "x"\nstage = "post_grad"\nlite = "sometimes"\n')
    with pytest.raises(RegistryError) as cached_error:
        registry_cache.cached_registry([bad])
    with pytest.raises(RegistryError) as direct_error:
        Registry.from_files([bad])
    assert str(cached_error.value) == str(direct_error.value)
    assert _entries(cache_dir) == []


def test_switched_off_it_writes_nothing(cache_dir, tmp_path, monkeypatch):
    monkeypatch.setenv(registry_cache.ENV_SWITCH, "0")
    path = tmp_path / "mine.toml"
    path.write_text(ENTRY.format(name="my_pass"))
    assert [p.name for p in registry_cache.cached_registry([path]).passes] == ["my_pass"]
    assert not cache_dir.exists()


def test_an_entry_in_use_is_kept_when_newer_ones_push_the_count_over(cache_dir, tmp_path):
    """Every registry edit makes a new entry; eviction is by last use, and a hit is a use."""
    def registry_named(name):
        path = tmp_path / f"{name}.toml"
        path.write_text(ENTRY.format(name=name))
        return path

    in_use = registry_named("in_use")
    registry_cache.cached_registry([in_use])  # the oldest entry...
    (entry,) = _entries(cache_dir)
    edits = [registry_named(f"edit_{i}") for i in range(registry_cache._KEEP)]
    for path in edits[:-2]:
        registry_cache.cached_registry([path])
    first_edit = set(_entries(cache_dir)) - {entry}
    assert len(_entries(cache_dir)) == registry_cache._KEEP - 1
    assert [p.name for p in registry_cache.cached_registry([in_use]).passes] == ["in_use"]  # ...used
    registry_cache.cached_registry([edits[-2]])
    registry_cache.cached_registry([edits[-1]])  # one over: the least recently used entry goes
    left = set(_entries(cache_dir))
    assert entry in left and len(left) == registry_cache._KEEP
    assert len(first_edit - left) == 1  # edit_0's entry, the least recently used


RANGED = """
[[config]]
key = "epilogue_fusion"
kind = "optimization"
type = "bool"
lite_value = false
torch = ">=2.12"
why = "forced off from 2.12 on"
"""


def test_a_reader_derives_the_lite_config_without_packaging(cache_dir):
    """With the running torch's version, the entry keeps its range answers: a fresh process that
    reads it derives the same lite config as a fresh parse, and never imports packaging."""
    import json
    import subprocess
    import sys

    paths = registry_paths(include_project=False)
    registry_cache.cached_registry(paths, torch_version="2.13.0+cpu")
    script = (
        "import json, sys\n"
        "from lite_guard import registry, registry_cache\n"
        "reg = registry_cache.cached_registry(registry.registry_paths(include_project=False),"
        " torch_version='2.13.0+cpu')\n"
        "print(json.dumps({'packaging': 'packaging' in sys.modules, 'tomllib': 'tomllib' in sys.modules,"
        " 'inductor': sorted(reg.derive_lite_config('inductor', '2.13.0+cpu'))}))\n")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env={**os.environ, registry_cache.ENV_DIR: str(cache_dir)})
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    fresh = Registry.from_files(paths)
    assert seen["inductor"] == sorted(fresh.derive_lite_config("inductor", "2.13.0+cpu"))
    assert seen == {**seen, "packaging": False, "tomllib": False}


def test_range_answers_are_the_entrys_and_another_torch_is_another_entry(cache_dir, tmp_path, monkeypatch):
    from lite_guard import registry as registry_module

    path = tmp_path / "ranged.toml"
    path.write_text(RANGED)
    monkeypatch.setattr(registry_module, "_VERSION_MATCHES", {})
    assert "epilogue_fusion" in registry_cache.cached_registry([path], "2.13.0").derive_lite_config()
    (entry,) = _entries(cache_dir)
    # An authentic entry whose answer says 2.13 is outside ">=2.12": the answer read is the
    # entry's (only this user can write one), not packaging's.
    store = registry_cache._Store.open()
    try:
        payload = registry_cache._dumps(Registry.from_files([path]), {">=2.12": False})
        entry.write_bytes(store._mac(entry.stem, payload) + payload)
    finally:
        store.close()
    monkeypatch.setattr(registry_module, "_VERSION_MATCHES", {})
    reg = registry_cache.cached_registry([path], "2.13.0")
    assert reg.derive_lite_config("inductor", "2.13.0") == {}
    monkeypatch.setattr(registry_module, "_VERSION_MATCHES", {})
    older = registry_cache.cached_registry([path], "2.11.0")
    assert len(_entries(cache_dir)) == 2
    assert older.derive_lite_config("inductor", "2.11.0") == {}
    assert registry_cache.cached_registry([path], "2.14.1").derive_lite_config("inductor", "2.14.1") \
        == {"epilogue_fusion": False}


def test_reading_an_entry_leaves_the_garbage_collector_as_it_was(cache_dir, tmp_path):
    """The collector is paused while an entry is unpickled, and always switched back on."""
    import gc

    path = tmp_path / "mine.toml"
    path.write_text(ENTRY.format(name="my_pass"))
    registry_cache.cached_registry([path])
    assert registry_cache.cached_registry([path]).passes[0].name == "my_pass" and gc.isenabled()
    (entry,) = _entries(cache_dir)
    store = registry_cache._Store.open()
    try:  # authentic but not loadable: the failing path must switch it back on too
        entry.write_bytes(store._mac(entry.stem, b"not a pickle") + b"not a pickle")
    finally:
        store.close()
    assert registry_cache.cached_registry([path]).passes[0].name == "my_pass" and gc.isenabled()
    gc.disable()
    try:  # and a collector the user switched off stays off
        registry_cache.cached_registry([path])
        assert not gc.isenabled()
    finally:
        gc.enable()
