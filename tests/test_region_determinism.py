"""A user who asked for determinism gets regions compiled deterministically.

``torch.use_deterministic_algorithms(True)`` turns Inductor's ``deterministic`` config on. Lite
mode used to force it off (the registry's lite value) and warn. Now a numerics setting the user
made, that the registry lets regions set, is kept inside regions (where Inductor compiles);
outside them aot_eager's ATen ops run, which honour the global flag themselves. A region's own
``deterministic=...`` still wins. The config in effect is observed by a registered region pass
that reads it while Inductor compiles the region.
"""

import contextlib
import warnings

import pytest
import torch

import lite_compiler
from lite_compiler.testing import assert_bitwise_equal

HERE = __name__
SEEN: list = []


def read_deterministic(graph):
    """A post-grad region pass (registered lite = "region"): what Inductor's config says."""
    SEEN.append(torch._inductor.config.deterministic)


@pytest.fixture(autouse=True)
def _registered_pass(tmp_path, monkeypatch):
    registry = tmp_path / "mine.toml"
    registry.write_text(f'[[pass]]\nname = "{HERE}:read_deterministic"\nstage = "post_grad"\n'
                        'lite = "region"\nkind = "custom_hook"\nwhy = "only reads the config"\n')
    monkeypatch.setenv("LITE_GUARD_REGISTRIES", str(registry))
    SEEN.clear()
    yield


@contextlib.contextmanager
def deterministic_algorithms():
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(False)  # also turns Inductor's `deterministic` off


class Net(torch.nn.Module):
    def __init__(self, **region_configs):
        super().__init__()
        self.fc, self.region_configs = torch.nn.Linear(64, 64), region_configs

    def forward(self, x):
        y = self.fc(x)
        with lite_compiler.region(id="r", **self.region_configs):
            y = torch.softmax(y, -1) * y.sum(-1, keepdim=True)
        return y.relu()


def _compile_once(model, x):
    torch._dynamo.reset()
    with torch._inductor.config.patch(post_grad_custom_post_pass=read_deterministic):  # lite-guard: ignore[LG001] (registered by the fixture's file)
        return torch.compile(model, backend="lite")(x)


def test_regions_compile_deterministically_when_the_user_asked_for_determinism():
    with deterministic_algorithms(), warnings.catch_warnings():
        warnings.simplefilter("error", lite_compiler.LiteSettingOverridden)  # not overridden now
        _compile_once(Net(), torch.randn(8, 64))
    assert SEEN == [True]  # Inductor compiled the region with deterministic = True
    (row,) = [e for e in lite_compiler.last_ledger() if e.name == "config deterministic"]
    assert row.allowed and row.lite == "region"
    assert row.reason.startswith("torch._inductor.config.deterministic = True (the user's setting)"
                                 " is kept inside regions")


def test_without_determinism_regions_keep_the_lite_value():
    _compile_once(Net(), torch.randn(8, 64))
    assert SEEN == [False]
    assert not [e for e in lite_compiler.last_ledger() if e.name == "config deterministic"]


def test_a_regions_own_setting_wins_over_the_users_global_one():
    with deterministic_algorithms():
        _compile_once(Net(deterministic=False), torch.randn(8, 64))
    assert SEEN == [False]


def test_non_numerics_settings_are_still_overridden_loudly():
    with torch._inductor.config.patch(freezing=True), \
            pytest.warns(lite_compiler.LiteSettingOverridden, match="freezing = True is overridden"):
        _compile_once(Net(), torch.randn(8, 64))
    (row,) = [e for e in lite_compiler.last_ledger() if e.name == "config freezing"]
    assert not row.allowed


def test_outside_regions_lite_is_bitwise_aot_eager_under_determinism():
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.LayerNorm(32),
                                torch.nn.Linear(32, 4))
    with deterministic_algorithms():
        assert_bitwise_equal(model, torch.randn(8, 16))


def test_deterministic_regions_give_the_same_bits_on_every_compile():
    x = torch.randn(8, 64)
    model = Net()
    with deterministic_algorithms():
        first = _compile_once(model, x)
        second = _compile_once(model, x)
    assert torch.equal(first, second)
    assert SEEN == [True, True]
