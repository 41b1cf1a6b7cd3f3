"""Shapes of third-party code the round-7 red team found the lint getting wrong (torch_npu,
executorch, intel-extension-for-pytorch, unsloth): a value built from itself crashed the pass
rule for the whole tree; another package's ``_inductor/config.py`` was taken for torch's; a TODO
helper raising NotImplementedError, or an abstract property implemented by a class attribute,
hid a concrete pass. Real files, the real ``lite_guard check`` CLI, prefilter on and off, exact
path, line, column, code and message of every finding."""

from __future__ import annotations

import pytest
from test_lint_dynamic_installs import _check, _lg001

PASSBASE = "from torch.fx.passes.infra.pass_base import PassBase, PassResult\n\n\n"
CALL = ("    def call(self, graph_module):\n        graph_module.graph.eliminate_dead_code()\n"
        "        return PassResult(graph_module, True)\n")
PASSBASE_FORM = "class deriving from PassBase"


def _class_finding(where: str, name: str, stage: str = "post_grad") -> str:
    return _lg001(where, name, PASSBASE_FORM, stage, kind="class")


CASES = {
    # torch_npu's lowering.py: `msg = f"{msg} ..."` then stored on V.graph; the rule recursed
    # until RecursionError and reported nothing for any file. Now: no crash, and the real pass
    # in the same tree is still reported.
    "self_referencing_value": (
        {"lowering.py": "from torch._inductor.virtualized import V\n\n\n"
                        "def fallback(stack_trace):\n    msg = \"index put.\"\n"
                        "    msg = f\"{msg} Found from: {stack_trace}\"\n"
                        "    V.graph.disable_cudagraphs_reason = msg\n",
         "passes.py": "import torch._inductor.config as config\n\n\n"
                      "def my_pass(graph):\n    graph.eliminate_dead_code()\n\n\n"
                      "config.post_grad_custom_post_pass = my_pass\n"},
        [_lg001("passes.py:8:37", "passes:my_pass", "installed in post_grad_custom_post_pass",
                "post_grad")]),
    # executorch's Qualcomm InsertRequantize: a TODO helper that only raises
    "todo_helper_raises": (
        {"q.py": PASSBASE + "class InsertRequantize(PassBase):\n    def _multi_output(self):\n"
                 "        raise NotImplementedError(\"multi output\")\n\n" + CALL},
        [_class_finding("q.py:4:7", "q:InsertRequantize")]),
    # executorch's Arm passes: an abstract property implemented by a plain class attribute
    "abstract_property_as_attribute": (
        {"arm.py": "from abc import abstractmethod\n\n" + PASSBASE
                   + "class ArmPass(PassBase):\n    @property\n    @abstractmethod\n"
                     "    def _passes_required_after(self):\n        ...\n\n\n"
                     "class DecomposeFoo(ArmPass):\n    _passes_required_after = set()\n\n" + CALL},
        [_class_finding("arm.py:13:7", "arm:DecomposeFoo")]),
    # controls: raise NotImplementedError where it is the contract stays abstract: the entry
    # point, a method subclasses override, a re-declared abstract method
    "informal_abstract_bases": (
        {"base.py": PASSBASE + "class Base(PassBase):\n    def call(self, graph_module):\n"
                    "        raise NotImplementedError\n\n\n"
                    "class Family(PassBase):\n    def rewrite(self, node):\n"
                    "        raise NotImplementedError\n\n" + CALL + "\n\n"
                    "class Member(Family):\n    def rewrite(self, node):\n        return node\n"},
        [_class_finding("base.py:18:7", "base:Member")]),
    # executorch linted in its own repo layout: ExportPass cannot be read, so what makes its
    # subclasses passes is that they implement PassBase's entry point, call(graph_module)
    "entry_point_under_an_unreadable_base": (
        {"noop.py": "import torch\nfrom executorch.exir.pass_base import ExportPass\n\n\n"
                    "class RemoveNoop(ExportPass):\n"
                    "    def call(self, graph_module: torch.fx.GraphModule):\n"
                    "        graph_module.graph.eliminate_dead_code()\n        return graph_module\n\n"
                    "    def helper(self, graph_module: torch.fx.GraphModule):\n"
                    "        return graph_module\n\n\n"
                    "class Partitioner(ExportPass):\n"
                    "    def partition(self, graph_module: torch.fx.GraphModule):\n"
                    "        return graph_module\n"},
        [_lg001("noop.py:5:7", "noop:RemoveNoop", "class whose call takes an FX graph (annotated"
                " GraphModule); its base 'executorch.exir.pass_base.ExportPass' cannot be resolved",
                "post_grad", kind="class")]),
    # torch_npu ships its own settings module at torch_npu/_inductor/config.py: not torch's config
    # (it was 75 LG002 + 539 LG003 "stale entry" findings against our own registries)
    "third_party_inductor_config": (
        {"acme_npu/__init__.py": "", "acme_npu/_inductor/__init__.py": "",
         "acme_npu/_inductor/config.py": "enable_npu_fusion = True\nmax_autotune_npu = False\n"},
        []),
}


@pytest.mark.parametrize("prefilter", [True, False], ids=["prefilter", "no-prefilter"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_each_third_party_shape_is_exactly_its_findings(tmp_path, case, prefilter):
    files, expected = CASES[case]
    for name in files:
        (tmp_path / "tree" / name).parent.mkdir(parents=True, exist_ok=True)
    result = _check(tmp_path, files, prefilter)
    assert "LG900" not in result.stdout + result.stderr, result.stdout + result.stderr
    assert result.stdout.splitlines() == expected, result.stdout + result.stderr
    assert result.returncode == (1 if expected else 0), result.stderr
