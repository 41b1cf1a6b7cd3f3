"""Real models from torchvision, timm and transformers (random init, tiny configs, nothing
downloaded): ours bitwise equal to aot_eager, and regions on a Hugging Face Llama nobody edited.

The smallest configurations run here (a few minutes on 2 cores); every model, training and
inference, fp32 and bf16, with torch's own lite mode beside ours, runs in bench/real_models.py.
"""

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "examples"))

import importlib.util  # noqa: E402

# Found, not imported: torchvision may need lite_compiler.testing's shim before its import.
_MISSING = [lib for lib in ("torchvision", "timm", "transformers") if importlib.util.find_spec(lib) is None]
pytestmark = pytest.mark.skipif(bool(_MISSING), reason=f"{_MISSING} not installed (the test extra has them)")

import torch  # noqa: E402

from bench.real_model_zoo import CASES, compare, run_variant  # noqa: E402

SMALL = [
    ("torchvision resnet (BasicBlock [1,1,1,1])", "train", "fp32"),
    ("timm vit_tiny (2 blocks, 32 px)", "train", "bf16"),
    ("transformers Llama", "infer", "bf16"),
]


@pytest.mark.parametrize("name,mode,dtype", SMALL, ids=[f"{n.split(' (')[0]}-{m}-{d}" for n, m, d in SMALL])
def test_ours_is_bitwise_equal_to_aot_eager_on_a_real_model(name, mode, dtype):
    case = CASES[name]
    torch.manual_seed(0)
    model = case.build()
    reference = run_variant(case, model, mode, dtype, "aot_eager")
    ours = run_variant(case, model, mode, dtype, "lite")
    assert ours["graphs"] >= 1, "nothing reached the lite backend"
    verdict = compare(reference["tensors"], ours["tensors"])
    assert verdict["bitwise"], verdict["detail"]
    if mode == "train":  # every parameter's gradient was compared, not only the outputs
        grads = [n for n, _ in ours["tensors"] if n.startswith("grad ")]
        assert len(grads) == len([p for p in model.parameters() if p.requires_grad])


def test_hf_llama_example_regions_without_editing_the_model():
    from hf_llama_regions import main

    result = main()
    assert result["bitwise"], "without regions, lite must equal aot_eager bit for bit"
    assignments = result["assignments"]
    assert assignments["model.layers.0.mlp"] == "mlp" and assignments["model.norm"] == "norm"
    assert sorted(set(assignments.values())) == ["mlp", "norm"] and len(assignments) == 7
    ledger = result["ledger"]
    for phase in ("fw", "bw"):
        for region in ("norm", "mlp"):
            graphs = [g for g in ledger.region_code if f"/{phase}/region[{region}]/" in g]
            # Inductor compiled each (a lone matmul is an extern call); fused kernels among them.
            assert graphs and all("def call(" in ledger.region_code[g] for g in graphs), (phase, region)
            assert any("cpp_fused" in ledger.region_code[g] for g in graphs), (phase, region)
    fw_modules = sorted(m for g, mods in ledger.region_modules.items() if "/fw/" in g for m in mods)
    assert fw_modules == sorted(assignments)
    assert result["restored"]


def test_a_run_counts_its_own_graphs_after_the_process_kept_its_maximum_of_ledgers():
    """The process keeps its newest ledgers only; a long test run or benchmark reaches that cap,
    and a run's graphs must still be the ledgers it created (by identity, not by position)."""
    import lite_compiler
    from lite_compiler.ledger import _MAX_KEPT, new_ledger

    for _ in range(_MAX_KEPT):
        new_ledger("lite")
    case = CASES["torchvision resnet (BasicBlock [1,1,1,1])"]
    torch.manual_seed(0)
    ours = run_variant(case, case.build(), "infer", "fp32", "lite")
    assert ours["graphs"] >= 1, "nothing reached the lite backend"
    assert len(lite_compiler.all_ledgers()) == _MAX_KEPT


def _results_doc(path: Path, commit: str, models: list[str]) -> Path:
    path.write_text(json.dumps({
        "meta": {"command": "python bench/real_models.py", "commit": commit, "torch": "t",
                 "device": "cpu", "python": "3", "machine": "m", "versions": {"timm": "1"}},
        "results": [{"model": m, "library": "x", "seconds": 1.0,
                     "rows": [{"model": m, "mode": "train", "dtype": "fp32",
                               "ours": {"bitwise": True}, "upstream": {"bitwise": False,
                                                                      "detail": "d"}}]}
                    for m in models]}))
    return path


def test_merging_a_second_run_keeps_each_rows_commit_in_the_provenance_lines(tmp_path):
    from bench import real_models

    names = list(CASES)
    base = _results_doc(tmp_path / "base.json", "aaaaaaa", names[:3])
    other = _results_doc(tmp_path / "other.json", "bbbbbbb", [names[2], names[-1]])
    data = real_models.merge(base, [other])
    assert [r["model"] for r in data["results"]] == [*names[:3], names[-1]]  # the zoo's order
    assert [r["commit"] for r in data["results"]] == ["aaaaaaa", "aaaaaaa", "bbbbbbb", "bbbbbbb"]
    lines = real_models.measured_lines(data)
    assert lines == [
        f"Measured: `python bench/real_models.py --models '{names[0]}' '{names[1]}' --device cpu` "
        "at commit `aaaaaaa` (2 model(s)).",
        f"Measured: `python bench/real_models.py --models '{names[2]}' '{names[-1]}' --device cpu` "
        "at commit `bbbbbbb` (2 model(s)).",
    ]
    assert json.loads(base.read_text()) == data  # the results file is rewritten
    assert "Environment: torch t, device cpu (m); timm 1." in real_models.render(data)
