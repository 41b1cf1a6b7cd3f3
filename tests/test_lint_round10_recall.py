"""Round 10 (docs/lint-recall.md, "Round 10"): the forms of the round-10 held-out set
(ColossalAI, nncf, brevitas) and the round-9 leftovers, each found by its structure and effect.

* a graph rewrite nothing in the linted paths runs is reported whether or not its package is
  linted whole (an entry of the package's API, or run from outside the linted paths);
* one its package's ``__init__`` re-exports is that API's pass, even when a function of the
  tree also calls it (ColossalAI's ``balanced_split_pass``);
* a transform a module-level factory returns (nncf's ``*_transformation_builder`` closures);
* a class implementing an abstract method of an in-tree base with a rewrite of the FX graph it
  is handed (brevitas's ``GraphTransform`` / ``UntilFixedPointGraphTransform`` subclasses);
* a call by a name that resolves to another module's function does not make a rewrite a step
  (ColossalAI's two ``solution_annotation_pass``);
* a module-level ``functools.partial`` of a lambda that rewrites its graph, bound and never
  applied (round 9's ``_drop_detach``);
* ``re.compile`` (another package's ``compile``) and the builtin ``compile`` are not
  ``torch.compile``: a file naming only those is not parsed for a compiler argument.

Real files, the real ``lite_guard check`` CLI, prefilter on and off, the exact path, line,
column, code and message of every finding."""

from __future__ import annotations

import pytest
from test_lint_dynamic_installs import _check, _lg001
from test_lint_speed import lint_both, recognising, write

from lite_guard.registry import Registry

PACKAGE = {"proj/__init__.py": "", "proj/passes/__init__.py": ""}
HEAD = "import torch\nfrom torch.fx import GraphModule\n\n\n"
# two pipeline-split passes of a package's API (ColossalAI's fx/passes): one only its users
# run, one its package re-exports and another pass of the tree falls back to
SPLIT = (HEAD
         + "def uniform_split_pass(gm: GraphModule, pp_size: int) -> GraphModule:\n"
           "    for node in gm.graph.nodes:\n"
           "        with gm.graph.inserting_after(node):\n"
           "            gm.graph.call_function(print, (node,))\n"
           "    gm.recompile()\n    return gm\n\n\n"
           "def balanced_split_pass(gm: GraphModule, pp_size: int) -> GraphModule:\n"
           "    gm.recompile()\n    return gm\n\n\n"
           "def custom_split_pass(gm: GraphModule, pp_size: int) -> GraphModule:\n"
           "    return balanced_split_pass(gm, pp_size)\n")
# a builder returning the transform a model transformer applies later (nncf)
BUILDERS = (HEAD
            + "def node_removal(model: GraphModule, node) -> None:\n"
              "    model.graph.erase_node(node)\n\n\n"
              "def node_removal_builder(node):\n"
              "    def node_removal_transformation(model: GraphModule):\n"
              "        node_removal(model, node)\n\n"
              "    return node_removal_transformation\n\n\n"
              "def printer_builder():\n"  # returns a transform that only reads the graph
              "    def print_transformation(model: GraphModule):\n"
              "        print(len(model.graph.nodes))\n\n"
              "    return print_transformation\n\n\n"
              "def make_backend():\n"  # returns a compiler, (gm, example_inputs): not a pass
              "    def backend_fn(gm: GraphModule, example_inputs):\n"
              "        node_removal(gm, None)\n        return gm\n\n"
              "    return backend_fn\n")
# a transform interface of the tree and its implementations (brevitas's graph/base.py)
TRANSFORMS = ("from abc import ABC, abstractmethod\n\nfrom torch.fx import GraphModule\n\n\n"
              "class GraphTransform(ABC):\n    @abstractmethod\n"
              "    def apply(self, graph_model: GraphModule) -> GraphModule:\n        pass\n\n\n"
              "class UntilFixedPoint(ABC):\n    @abstractmethod\n"
              "    def is_converged(self, graph_model: GraphModule) -> bool:\n        pass\n\n"
              "    def apply(self, graph_model: GraphModule) -> GraphModule:\n"
              "        while not self.is_converged(graph_model):\n            continue\n"
              "        return graph_model\n\n\n"
              "class RemoveDropout(GraphTransform):\n"
              "    def apply(self, graph_model: GraphModule) -> GraphModule:\n"
              "        for node in graph_model.graph.nodes:\n"
              "            graph_model.graph.erase_node(node)\n"
              "        return graph_model\n\n\n"
              "class MergeBatchNorm(UntilFixedPoint):\n"
              "    def is_converged(self, graph_model: GraphModule) -> bool:\n"
              "        for node in graph_model.graph.nodes:\n"
              "            node.replace_all_uses_with(node.args[0])\n"
              "        return True\n\n\n"
              "class CountNodes(GraphTransform):\n"  # implements it, rewrites nothing
              "    def apply(self, graph_model: GraphModule) -> GraphModule:\n"
              "        print(len(graph_model.graph.nodes))\n        return graph_model\n\n\n"
              "class CallableToModule(GraphTransform, ABC):\n"  # abstract: its subclasses are
              "    @abstractmethod\n    def match(self, node) -> bool:\n        pass\n\n"
              "    def apply(self, graph_model: GraphModule) -> GraphModule:\n"
              "        graph_model.recompile()\n        return graph_model\n\n\n"
              "class FnToModule(CallableToModule):\n"
              "    def match(self, node) -> bool:\n        return True\n\n\n"
              "class ExportQuantizer(ABC):\n"  # an ONNX model used like a graph: not FX's
              "    @abstractmethod\n    def quantize(self, model, inputs):\n        pass\n\n\n"
              "class OnnxQuantizer(ExportQuantizer):\n"
              "    def quantize(self, model: 'onnx_ir.Model', inputs):\n"
              "        for node in model.graph:\n"
              "            onnx_ir.convenience.replace_all_uses_with(node, node)\n"
              "        return model\n")


def _entry(where: str, name: str, how: str, package: str = "proj") -> str:
    return _lg001(where, name, f"function taking an FX graph (annotated GraphModule), rewrites it"
                  f" ({how}) and nothing in the linted paths calls it or hands it on: an entry of"
                  f" its package {package}'s API, or installed from outside the linted paths",
                  "post_grad")


def _interface(where: str, name: str, base: str, member: str) -> str:
    return _lg001(where, name, f"class implementing {base}, an abstract method of a base of the"
                  f" tree, with a rewrite of an FX graph (calls {member}())", "post_grad", "class")


CASES = {
    # the package linted whole: an API pass nothing of it runs (round 9 did not report it)
    "api_entry_of_a_package_linted_whole": (
        {**PACKAGE, "proj/passes/split.py": SPLIT}, ".",
        [_entry("proj/passes/split.py:5:5", "proj.passes.split:uniform_split_pass",
                "calls gm.recompile()"),
         _entry("proj/passes/split.py:18:5", "proj.passes.split:custom_split_pass",
                "through proj.passes.split:balanced_split_pass, which calls gm.recompile()")]),
    # re-exported by its package's __init__: that API's pass, though custom_split_pass calls it
    "reexported_by_the_package_init": (
        {**PACKAGE, "proj/passes/__init__.py": "from .split import balanced_split_pass\n",
         "proj/passes/split.py": SPLIT}, ".",
        [_entry("proj/passes/split.py:5:5", "proj.passes.split:uniform_split_pass",
                "calls gm.recompile()"),
         _lg001("proj/passes/split.py:13:5", "proj.passes.split:balanced_split_pass",
                "function taking an FX graph (annotated GraphModule), rewrites it (calls"
                " gm.recompile()) and its package proj.passes exports it: an entry of that API,"
                " run on the graphs its users hand it", "post_grad"),
         _entry("proj/passes/split.py:18:5", "proj.passes.split:custom_split_pass",
                "through proj.passes.split:balanced_split_pass, which calls gm.recompile()")]),
    # a closure a factory returns, rewriting the graph through a function of the tree; the
    # function it calls is its step; a returned closure that only reads is not a pass, nor one
    # shaped like a compiler, (gm, example_inputs), that the factory builds (DeepSpeed's)
    "transform_returned_by_its_builder": (
        {**PACKAGE, "proj/passes/builders.py": BUILDERS}, ".",
        [_lg001("proj/passes/builders.py:10:9",
                "proj.passes.builders:node_removal_builder.<locals>.node_removal_transformation",
                "function taking an FX graph (annotated GraphModule), rewrites it (through"
                " proj.passes.builders:node_removal, which calls model.graph.erase_node()) and its"
                " factory proj.passes.builders:node_removal_builder returns it: a transform built"
                " for whoever calls the factory", "post_grad")]),
    # implementations of the tree's abstract transform methods that rewrite the graph, own or
    # inherited from a concrete ancestor (FnToModule: CallableToModule.apply implements
    # GraphTransform.apply); not one that only reads, not an abstract class, not one whose
    # parameter is annotated as another library's model (transformers' ONNX quantizer)
    "implementations_of_an_abstract_transform_method": (
        {**PACKAGE, "proj/passes/base.py": TRANSFORMS}, ".",
        [_interface("proj/passes/base.py:23:7", "proj.passes.base:RemoveDropout",
                    "GraphTransform.apply", "graph_model.graph.erase_node"),
         _interface("proj/passes/base.py:30:7", "proj.passes.base:MergeBatchNorm",
                    "UntilFixedPoint.is_converged", "node.replace_all_uses_with"),
         _interface("proj/passes/base.py:53:7", "proj.passes.base:FnToModule",
                    "GraphTransform.apply", "graph_model.recompile")]),
    # a call of another module's function of the same name is no call of this one
    "same_name_in_another_module": (
        {**PACKAGE,
         "proj/passes/experimental.py": HEAD + "def annotate_pass(gm: GraphModule) -> GraphModule:\n"
                                               "    gm.recompile()\n    return gm\n",
         "proj/passes/runtime.py": HEAD + "def annotate_pass(gm: GraphModule) -> GraphModule:\n"
                                          "    gm.recompile()\n    return gm\n\n\n"
                                          "def prepare(gm: GraphModule) -> GraphModule:\n"
                                          "    return annotate_pass(gm)\n"}, ".",
        [_entry("proj/passes/experimental.py:5:5", "proj.passes.experimental:annotate_pass",
                "calls gm.recompile()"),
         _entry("proj/passes/runtime.py:10:5", "proj.passes.runtime:prepare",
                "through proj.passes.runtime:annotate_pass, which calls gm.recompile()")]),
    # a rewrite bound through functools.partial of a lambda, never applied in the tree
    "partial_of_a_lambda_never_applied": (
        {"fold.py": "import functools\n\nimport torch\n\naten = torch.ops.aten\n\n"
                    "_drop_detach = functools.partial(\n"
                    "    lambda graph, op: [graph.erase_node(n) for n in list(graph.nodes)"
                    " if n.target is op],\n    op=aten.detach.default)\n"
                    "_count = functools.partial(lambda graph: len(graph.nodes))\n"}, ".",
        [_lg001("fold.py:7:1", "fold:_drop_detach", "function taking an FX graph (a lambda that"
                " calls graph.erase_node() on it), rewrites it (calls graph.erase_node()) and"
                " nothing in the linted paths calls it or hands it on: an entry of its package"
                " fold's API, or installed from outside the linted paths", "post_grad")]),
}


@pytest.mark.parametrize("prefilter", [True, False], ids=["prefilter", "no-prefilter"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_each_round10_shape_is_exactly_its_findings(tmp_path, case, prefilter):
    check_exactly(tmp_path, *CASES[case], prefilter)


def check_exactly(tmp_path, files: dict[str, str], target: str, expected: list[str],
                  prefilter: bool) -> None:
    """``lite_guard check target`` on ``files`` prints exactly ``expected``, and no LG900."""
    result = _check(tmp_path, files, prefilter, target)
    assert "LG900" not in result.stdout + result.stderr, result.stdout + result.stderr
    assert result.stdout.splitlines() == expected, result.stdout + result.stderr
    assert result.returncode == (1 if expected else 0), result.stderr


def test_re_compile_and_the_builtin_compile_are_not_torch_compile(tmp_path, monkeypatch):
    """``re.compile`` names the ``re`` module's function (the file imports ``re``), a bare
    ``compile(...)`` the builtin: a file holding those and a ``backend=`` keyword hands nothing
    to ``torch.compile`` and is not parsed (transformers' processing_utils.py, trainer_pt_utils.py
    were parsed whole for it); ``torch.compile`` and ``from torch import compile`` still are."""
    registry = recognising(Registry.load(include_project=False))
    rewrite = "def rewrite(gm, example_inputs):\n    gm.graph.eliminate_dead_code()\n    return gm\n\n"
    root = write(tmp_path / "proj", {
        "regex.py": "import re\n\nNAME = re.compile(r'\\w+')\nCODE = compile('1', 'f', 'eval')\n\n\n"
                    "def load(cache_cls, b):\n    return cache_cls(backend=b)\n",
        "dotted.py": "import torch\n\n" + rewrite + "def build(m):\n"
                     "    return torch.compile(m, backend=rewrite)\n",
        "bare.py": "from torch import compile\n\n" + rewrite + "def build(m):\n"
                   "    return compile(m, backend=rewrite)\n",
    })
    off, on, report = lint_both([root], registry, monkeypatch)
    assert on == off and sorted(line.split("'")[1] for line in on) == ["bare:rewrite",
                                                                       "dotted:rewrite"]
    assert report.skipped == 1  # regex.py
