"""Lite mode under torch.distributed (gloo, CPU, world size 2): FSDP2 and FSDP2+TP training is
bitwise identical to aot_eager at every step, and a distributed reorder pass forced on inside a
region is refused by the guard. Drives examples/distributed_train.py (one mp.spawn per test)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


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
    # Spawned ranks unpickle distributed_train.rank_main; they inherit this sys.path.
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    import distributed_train

    return distributed_train


def _run(example, *argv: str) -> dict:
    try:
        return example.run(example.parse_args(["--world-size", "2", *argv]))
    except OSError as exc:  # pragma: no cover - sandbox without sockets / shared memory
        pytest.skip(f"cannot start a gloo process group here: {exc}")


def _assert_bitwise_every_step(out: dict, steps: int) -> None:
    assert not out.get("errors"), out.get("tracebacks")
    assert len(out["steps"]) == steps
    for row in out["steps"]:
        for what in ("loss", "grad_norm"):
            assert len(row[what]) == 2  # both ranks gathered to rank 0
            for entry in row[what]:
                assert entry["bitwise_equal"], f"step {row['step']} rank {entry['rank']} {what}: {entry}"
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
        for entry in row["loss"] + row["grad_norm"]:
            assert entry["abs_diff"] < 1e-3  # reported, not required to be 0


def test_distributed_reorder_pass_forced_on_in_a_region_is_refused(example):
    # torch.use_deterministic_algorithms(True) (which every rank sets) turns Inductor's
    # `deterministic` on, and the scheduler then skips the compute/comm reorder by itself; the
    # region turns it off again so that the reorder really would run, and the guard must refuse it.
    out = _run(example, "--steps", "1", "--backends", "lite",
               "--region-config", "reorder_for_compute_comm_overlap=True",
               "--region-config", "deterministic=False")
    assert out["error_types"] == {"lite": "LitePassViolation"}, out.get("tracebacks")
    assert out["pass_names"] == {"lite": "reorder_compute_and_comm_for_overlap"}
    assert "lite mode refused pass 'reorder_compute_and_comm_for_overlap'" in out["errors"]["lite"]
    assert "region[block0]" in out["errors"]["lite"]
