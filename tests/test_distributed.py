"""Lite mode under torch.distributed (gloo, CPU, world size 2 and 4): FSDP2, FSDP2+TP and a 2-D
dp=2 x tp=2 mesh train bitwise identically to aot_eager at every step; distributed reorder and
bucketing passes forced on are refused by the guard (or, outside regions, never run); a user's
bucketing pass opted in through their own registry runs and is in the ledger. Drives
examples/distributed_train.py through tests/distributed_harness.py (one mp.spawn per run), which
compares every parameter and gradient of every rank after every step. See docs/distributed.md."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
TESTS = Path(__file__).resolve().parent
OPT_IN = EXAMPLES / "opt_in_bucketing"
SP = ("--tp", "2", "--sequence-parallel")  # TP with all_gather / reduce_scatter in the graphs


def _gloo_or_skip() -> None:
    import torch.distributed as dist

    if not dist.is_available():
        pytest.skip("torch.distributed is not available in this torch build")
    if not dist.is_gloo_available():
        pytest.skip("the gloo backend is not available in this torch build")
    try:
        import torch.multiprocessing as mp

        mp.get_context("spawn")
    except (ImportError, ValueError) as exc:  # pragma: no cover
        pytest.skip(f"multiprocessing spawn is unavailable: {exc}")


@pytest.fixture(scope="module")
def example():
    _gloo_or_skip()
    # Spawned ranks unpickle distributed_harness.rank_main; they inherit this sys.path.
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))
    import distributed_harness

    return distributed_harness


def _run(example, *argv: str, world_size: int = 2) -> dict:
    try:
        return example.run(example.parse_args(["--world-size", str(world_size), *argv]))
    except OSError as exc:  # pragma: no cover - sandbox without sockets / shared memory
        pytest.skip(f"cannot start a gloo process group here: {exc}")


def _assert_bitwise_every_step(out: dict, steps: int, world_size: int = 2) -> None:
    assert not out.get("errors"), out.get("tracebacks")
    assert len(out["steps"]) == steps
    for row in out["steps"]:
        assert len(row["ranks"]) == world_size  # every rank reported
        for entry in row["ranks"]:
            where = f"step {row['step']} rank {entry['rank']}"
            # every parameter and every gradient of the model, on every rank, every step
            assert entry["tensors"] >= 2 * 20 and entry["grads"] == entry["tensors"] // 2, where
            assert entry["mismatched"] == [], f"{where}: not bitwise equal: {entry['mismatched']}"
            assert entry["params_equal"] and entry["grads_equal"] and entry["loss_equal"], where
    assert out["bitwise_equal_every_step"] is True
    for backend in ("aot_eager", "lite"):
        assert out["backends"][backend]["graphs"] >= 1  # the blocks really were compiled
        assert out["backends"][backend]["graph_breaks"] == 0
        assert out["backends"][backend]["steps_per_s"] > 0


def test_fsdp2_lite_is_bitwise_aot_eager_every_step(example):
    out = _run(example, "--steps", "3")
    _assert_bitwise_every_step(out, 3)
    assert out["backends"]["lite"]["region_graphs"] == []  # nothing annotated: all ATen fallback


def test_fsdp2_with_tensor_parallel_lite_is_bitwise_aot_eager_every_step(example):
    # 2-D mesh (dp=1, tp=2): Colwise/RowwiseParallel DTensor TP, FSDP2 on the dp dimension.
    out = _run(example, "--steps", "2", "--tp", "2")
    _assert_bitwise_every_step(out, 2)


def test_fsdp2_annotated_regions_compile_and_report_per_step(example):
    out = _run(example, "--steps", "2", "--regions")
    assert not out.get("errors"), out.get("tracebacks")
    regions = out["backends"]["lite"]["region_graphs"]
    # one region per block, compiled by Inductor in the forward and the backward graph
    assert {r.split("/region[")[1].split("]")[0] for r in regions} == {"block0", "block1"}
    assert any("/fw/" in r for r in regions) and any("/bw/" in r for r in regions)
    for row in out["steps"]:
        for entry in row["ranks"]:
            assert entry["loss_abs_diff"] < 1e-3  # reported, not required to be 0


def test_distributed_reorder_pass_forced_on_in_a_region_is_refused(example):
    # torch.use_deterministic_algorithms(True) (which every rank sets) turns Inductor's
    # `deterministic` on, and the scheduler then skips the compute/comm reorder by itself; the
    # region turns it off again so that the reorder really would run. The registry's region
    # policy for the reorder config is "forced": the region may not switch it on at all.
    out = _run(example, "--steps", "1", "--backends", "lite",
               "--region-config", "reorder_for_compute_comm_overlap=True",
               "--region-config", "deterministic=False")
    assert out["error_types"] == {"lite": "LiteRegionConfigError"}, out.get("tracebacks")
    assert out["errors"]["lite"].startswith(
        "LiteRegionConfigError: region 'block0': inductor_configs sets"
        " 'reorder_for_compute_comm_overlap' = True, refused: the registry forces"
        " reorder_for_compute_comm_overlap = False in regions too"), out["errors"]["lite"]
    assert not any(e["name"] == "reorder_compute_and_comm_for_overlap" and e["allowed"]
                   for e in out["ledgers"]["lite"] or [])


# ---- world size 4: a 2-D mesh ------------------------------------------------------------------

def test_world_size_4_fsdp2_dp2_x_tp2_lite_is_bitwise_aot_eager_every_step(example):
    # 4 gloo ranks on a (dp=2, tp=2) mesh: FSDP2 shards on dp, TP on tp; each dp group sees its
    # own batch. About 15 s on 2 CPU cores, so it is not marked slow.
    out = _run(example, "--steps", "2", "--tp", "2", world_size=4)
    assert out["config"]["world_size"] == 4
    _assert_bitwise_every_step(out, 2, world_size=4)


# ---- guard coverage: collective bucketing ------------------------------------------------------

def _ledger_names(out: dict, backend: str = "lite") -> set[str]:
    return {e["name"] for e in out["backends"][backend]["ledger"]}


@pytest.fixture(scope="module")
def sp_lite(example):
    """Sequence-parallel TP, lite only, nothing opted in: the reference collective counts."""
    out = _run(example, "--steps", "1", "--backends", "lite", *SP)
    assert not out.get("errors"), out.get("tracebacks")
    return out


def test_sequence_parallel_graphs_hold_all_gather_and_reduce_scatter(sp_lite):
    counts = sp_lite["backends"]["lite"]["collectives"]
    for kind in ("fw", "bw"):
        assert counts[kind]["all_gather_into_tensor"] >= 1, counts
        assert counts[kind]["reduce_scatter_tensor"] >= 1, counts
    assert counts["bw"]["reduce_scatter_tensor"] >= 2  # independent ones: something to bucket


def test_bucketing_forced_on_in_a_tp_region_is_refused_at_post_grad_passes(example):
    # The whole block body is the region, so its TP all_gathers / reduce_scatters are compiled by
    # Inductor (first run). Forcing FX bucketing on in that region needs Inductor's post-grad
    # pipeline, the only place torch runs it (fx_passes/post_grad.py, observers
    # "bucket_all_gathers" / "bucket_reduce_scatters"); the guard refuses that pipeline's driver
    # `post_grad_passes` (registered lite = "never") before any bucketing sub-pass can run.
    ok = _run(example, "--steps", "1", "--backends", "lite", *SP, "--region-scope", "block")
    assert not ok.get("errors"), ok.get("tracebacks")
    assert ok["backends"]["lite"]["collectives"]["region"]["all_gather_into_tensor"] > 0
    assert ok["backends"]["lite"]["collectives"]["region"]["reduce_scatter_tensor"] > 0
    out = _run(example, "--steps", "1", "--backends", "lite", *SP, "--region-scope", "block",
               "--region-config", "use_post_grad_passes=True",
               "--region-config", "bucket_all_gathers_fx='all'",
               "--region-config", "bucket_reduce_scatters_fx='all'")
    # The registry's region policy refuses switching the post-grad pipeline on in a region,
    # before any bucketing sub-pass could run.
    assert out["error_types"] == {"lite": "LiteRegionConfigError"}, out.get("tracebacks")
    assert out["errors"]["lite"].startswith(
        "LiteRegionConfigError: region 'block0': inductor_configs sets 'use_post_grad_passes' ="
        " True, refused"), out["errors"]["lite"]
    assert not any(e["name"].startswith("bucket_") for e in out["ledgers"]["lite"] or [])


def test_bucketing_and_overlap_configs_outside_regions_never_run(example, sp_lite):
    # torch._inductor.config.patch(...) of the bucketing / overlap-scheduling configs while
    # compiling with backend="lite": outside regions the lite compiler runs aot_eager's graph and
    # never Inductor's post-grad pipeline, so the passes cannot run. Nothing is refused, nothing
    # is bucketed, numerics stay bitwise aot_eager's.
    out = _run(example, "--steps", "2", *SP,
               "--inductor-config", "bucket_all_gathers_fx='all'",
               "--inductor-config", "bucket_reduce_scatters_fx='all'",
               "--inductor-config", "aten_distributed_optimizations.enable_overlap_scheduling=True")
    _assert_bitwise_every_step(out, 2)
    names = _ledger_names(out)
    assert not any(n.startswith("bucket_") or n == "overlap_scheduling" for n in names), names
    assert out["backends"]["lite"]["collectives"] == sp_lite["backends"]["lite"]["collectives"]


# ---- opt-in: a user bucketing pass allowed by the user's registry -------------------------------

OPT_IN_PASS = f"{OPT_IN / 'bucketing_pass.py'}:BucketReduceScatters"
OPT_IN_IDENTITY = "bucketing_pass:BucketReduceScatters"  # module:qualname, what the guard asks for
OPT_IN_REGISTRY = str(OPT_IN / "lite_guard.toml")


def test_opt_in_bucketing_pass_runs_in_lite_and_is_in_the_ledger(example, sp_lite):
    out = _run(example, "--steps", "2", *SP, "--custom-pass", OPT_IN_PASS,
               "--registry", OPT_IN_REGISTRY)
    # aot_eager ignores Inductor's custom passes; with 2 ranks a bucketed reduce-scatter adds the
    # same two values per element, so lite stays bitwise equal even with the pass on.
    _assert_bitwise_every_step(out, 2)
    rows = [e for e in out["backends"]["lite"]["ledger"] if e["name"] == OPT_IN_IDENTITY]
    assert {e["graph"] for e in rows} == {"fw", "bw"}, rows
    for e in rows:
        assert e["allowed"] is True and e["lite"] == "always" and e["stage"] == "post_grad"
        assert e["kind"] == "custom_hook"
    before = sp_lite["backends"]["lite"]["collectives"]["bw"]["reduce_scatter_tensor"]
    after = out["backends"]["lite"]["collectives"]["bw"]["reduce_scatter_tensor"]
    assert after < before, (before, after)  # it really bucketed


def test_opt_in_bucketing_pass_without_the_registry_entry_is_refused(example):
    out = _run(example, "--steps", "1", "--backends", "lite", *SP, "--custom-pass", OPT_IN_PASS)
    assert out["error_types"] == {"lite": "LitePassViolation"}, out.get("tracebacks")
    assert out["pass_names"] == {"lite": OPT_IN_IDENTITY}
    assert "no registry names this pass" in out["errors"]["lite"]
    # (the ledger also lists the user's settings lite mode overrode, e.g. "config deterministic")
    refused = [e for e in out["ledgers"]["lite"] if not e["allowed"] and e["kind"] != "config"]
    assert [(e["name"], e["lite"]) for e in refused] == [(OPT_IN_IDENTITY, "unregistered")]


# ---- the harness's own check can fail ----------------------------------------------------------

def test_the_comparison_catches_one_ulp_in_one_gradient(example):
    import torch

    reference = {"w": (torch.ones(3), torch.full((3,), 0.5)), "b": (torch.zeros(2), torch.ones(2))}
    changed = dict(reference)
    grad = reference["b"][1].clone()
    grad[1] = torch.nextafter(grad[1], torch.tensor(2.0))  # one ulp
    changed["b"] = (reference["b"][0], grad)
    result = example.compare(reference, changed)
    assert result["mismatched"] == ["grad b"]
    assert result["params_equal"] and not result["grads_equal"]
    assert result["tensors"] == 4 and 0 < result["max_abs_diff"] < 1e-6
    assert example.compare(reference, dict(reference))["mismatched"] == []
