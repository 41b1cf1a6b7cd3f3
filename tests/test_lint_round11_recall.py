"""Round 11 (docs/lint-recall.md, "Round 11"): the forms of the round-11 held-out set
(executorch's XNNPACK and Vulkan passes, AITemplate's fx2ait, PiPPy), each found by its
structure and effect.

* a checkout that is its package by installation, not by ``__init__.py`` (executorch: the
  checkout root is ``executorch``, its files import ``executorch.backends.x``): its files take
  the name their own imports give them, so bases resolve through the checkout and each pass is
  named as Python (and the guard, by ``__module__``) names it; in a tree importing itself by
  its own name as often, an import of it under another package's name renames nothing;
* a pass over a ``torch.export`` program (``def f(ep: ExportedProgram)``) rewriting
  ``ep.graph_module``, itself or by running a pass class of the tree on it
  (``RemoveAssertsTransform()(ep.graph_module)``);
* a concrete pass class that the tree's passes derive from and that overrides none of its
  ancestors' methods (``XNNPACKPass(ExportPass)``: an ``__init__`` and a property) is their
  base, not a pass of its own;
* a class of the tree whose base cannot be resolved, listed in one pass list with two of the
  tree's passes (``XNNPACKRemoveCloneOpsTransform`` in ``XNNPACKPassManager``'s list), is
  reported as one;
* a function handing its graph to one of torch's graph-rewriting functions (registry
  ``graph_rewrite`` rows: ``subgraph_rewriter.replace_pattern``, ``split_const_subgraphs``)
  rewrites it (fx2ait's ``run_const_fold``).

Real files, the real ``lite_guard check`` CLI, prefilter on and off, the exact path, line,
column, code and message of every finding."""

from __future__ import annotations

import pytest
from test_lint_dynamic_installs import _lg001
from test_lint_round10_recall import check_exactly

PASS_BASE = ("from torch.fx.passes.infra.pass_base import PassBase, PassResult\n\n\n"
             "class ExportPass(PassBase):\n"
             "    def call_operator(self, op, args, kwargs):\n"
             "        return op(*args, **kwargs)\n\n"
             "    def call(self, graph_module):\n"
             "        return PassResult(graph_module, False)\n")
# the backend's passes, importing the checkout by its installed name (executorch's layout)
BACKEND = ("import torch\nfrom proj.exir.pass_base import ExportPass\n\n\n"
           "class XnnPass(ExportPass):\n"
           "    def __init__(self, exported_program) -> None:\n"
           "        super().__init__()\n        self._exported_program = exported_program\n\n"
           "    @property\n    def exported_program(self):\n"
           "        return self._exported_program\n\n\n"
           "class ConvPass(XnnPass):\n"
           "    def call(self, graph_module: torch.fx.GraphModule):\n"
           "        graph_module.recompile()\n        return super().call(graph_module)\n\n\n"
           "class SqueezeInputs(ExportPass):\n"  # overrides only the interpreter's call_operator
           "    def call_operator(self, op, args, kwargs):\n"
           "        return super().call_operator(op, args[:1], kwargs)\n")
CHECKOUT = {"exir/__init__.py": "", "exir/pass_base.py": PASS_BASE, "backends/__init__.py": "",
            "backends/xnn/__init__.py": "from proj.backends.xnn.passes import ConvPass,"
                                        " SqueezeInputs\n",
            "backends/xnn/passes.py": BACKEND,
            "backends/xnn/partition.py": "from proj.backends.xnn.passes import ConvPass\n\n"
                                         "SUPPORTED = [ConvPass]\n"}
# passes over an exported program (executorch's Vulkan remove_asserts, insert_prepack_nodes)
EXPORTED = ("import torch\nfrom torch.export import ExportedProgram\n"
            "from torch.fx.passes.infra.pass_base import PassBase, PassResult\n\n\n"
            "class RemoveAsserts(PassBase):\n"
            "    def call(self, graph_module: torch.fx.GraphModule) -> PassResult:\n"
            "        for node in graph_module.graph.nodes:\n"
            "            graph_module.graph.erase_node(node)\n"
            "        return PassResult(graph_module, True)\n\n\n"
            "def remove_asserts(edge_program: ExportedProgram) -> ExportedProgram:\n"
            "    graph_module = edge_program.graph_module\n"
            "    RemoveAsserts()(graph_module)\n    return edge_program\n\n\n"
            "def insert_prepack(program: ExportedProgram) -> ExportedProgram:\n"
            "    for node in program.graph_module.graph.nodes:\n"
            "        with program.graph_module.graph.inserting_after(node):\n"
            "            program.graph_module.graph.call_function(torch.clone, (node,))\n"
            "    return program\n\n\n"
            "def count_nodes(program: ExportedProgram) -> int:\n"  # reads only: no pass
            "    return len(program.graph_module.graph.nodes)\n")
PACKAGE = {"proj/__init__.py": "", "proj/passes/__init__.py": ""}
# a pass list holding a class whose base is in a module not on disk (XNNPACKPassManager)
MANAGER = ("from proj.passes.xnn import ConvPass, SqueezeInputs\n"
           "from proj.transforms.remove_clone import RemoveCloneOpsTransform\n\n\n"
           "class XnnRemoveClone(RemoveCloneOpsTransform):\n"
           "    def __init__(self):\n"
           "        super().__init__(preserve_input_output_copies=True)\n\n\n"
           "class Unlisted(RemoveCloneOpsTransform):\n"  # in no pass list: nothing says it is one
           "    pass\n\n\n"
           "class Manager:\n"
           "    def __init__(self, ep):\n"
           "        self.passes = [XnnRemoveClone, ConvPass, SqueezeInputs]\n"
           "        self.names = [Unlisted, ConvPass, print]\n")

# rewrites through torch's graph-rewriting functions (fx2ait's run_const_fold, compose_bmm); a
# project function of the same name (matcher.replace_pattern) only reads
FOLD = ("import torch\nfrom torch.fx import GraphModule, subgraph_rewriter\n"
        "from torch.fx.experimental.const_fold import split_const_subgraphs\n\n"
        "from proj.passes import matcher\n\n\n"
        "def run_const_fold(traced_mod: GraphModule) -> GraphModule:\n"
        "    folded = split_const_subgraphs(traced_mod)\n"
        "    folded.run_folding()\n    return folded\n\n\n"
        "def compose_mm(module: GraphModule) -> GraphModule:\n"
        "    subgraph_rewriter.replace_pattern(module, torch.mm, torch.matmul)\n"
        "    return module\n\n\n"
        "def find_mm(module: GraphModule) -> GraphModule:\n"
        "    matcher.replace_pattern(module, torch.mm)\n    return module\n")
MATCHER = ("from torch.fx import GraphModule\n\n\n"
           "def replace_pattern(gm: GraphModule, pattern) -> list:\n"
           "    return [n for n in gm.graph.nodes if n.target is pattern]\n")


def _api(where: str, name: str, how: str, graph: str = "ExportedProgram") -> str:
    return _lg001(where, name, f"function taking an FX graph (annotated {graph}),"
                  f" rewrites it ({how}) and nothing in the linted paths calls it or hands it on:"
                  " an entry of its package proj's API, or installed from outside the linted"
                  " paths", "post_grad")


def _class(where: str, name: str) -> str:
    return _lg001(where, name, "class deriving from PassBase", "post_grad", "class")


CASES = {
    # the checkout root is the package proj (no __init__.py there): bases resolve through
    # proj.exir.pass_base, read from disk outside the linted paths; the tree's intermediate
    # base XnnPass is not a pass of its own
    "checkout_that_is_its_package": (
        CHECKOUT, "backends",
        [_class("backends/xnn/passes.py:15:7", "proj.backends.xnn.passes:ConvPass"),
         _class("backends/xnn/passes.py:21:7", "proj.backends.xnn.passes:SqueezeInputs")]),
    # the same base in a package laid out by __init__.py files
    "base_of_the_trees_passes": (
        {**PACKAGE, "proj/passes/base.py": PASS_BASE,
         "proj/passes/xnn.py": BACKEND.replace("proj.exir.pass_base", "proj.passes.base")}, ".",
        [_class("proj/passes/base.py:4:7", "proj.passes.base:ExportPass"),
         _class("proj/passes/xnn.py:15:7", "proj.passes.xnn:ConvPass"),
         _class("proj/passes/xnn.py:21:7", "proj.passes.xnn:SqueezeInputs")]),
    # a class listed with two passes of the tree in a pass list, its base unreadable
    "listed_with_passes": (
        {**PACKAGE, "proj/passes/base.py": PASS_BASE,
         "proj/passes/xnn.py": BACKEND.replace("proj.exir.pass_base", "proj.passes.base"),
         "proj/passes/manager.py": MANAGER}, ".",
        [_class("proj/passes/base.py:4:7", "proj.passes.base:ExportPass"),
         _lg001("proj/passes/manager.py:5:7", "proj.passes.manager:XnnRemoveClone",
                "class listed with the passes proj.passes.xnn:ConvPass and"
                " proj.passes.xnn:SqueezeInputs in proj.passes.manager:16, run as they are; its"
                " base 'proj.transforms.remove_clone.RemoveCloneOpsTransform' cannot be resolved",
                "post_grad", "class"),
         _class("proj/passes/xnn.py:15:7", "proj.passes.xnn:ConvPass"),
         _class("proj/passes/xnn.py:21:7", "proj.passes.xnn:SqueezeInputs")]),
    # a tree importing itself by its own name too (transformers): an import of it under
    # another package's name (``liger_kernel.transformers``) renames nothing
    "another_packages_prefix": (
        {**PACKAGE, "proj/passes/vk.py": EXPORTED,
         "proj/integrations.py": "from liger_kernel.proj.passes import vk\n",
         "proj/cli.py": "from proj.passes.vk import count_nodes\n"}, "proj",
        [_class("proj/passes/vk.py:6:7", "proj.passes.vk:RemoveAsserts"),
         _api("proj/passes/vk.py:13:5", "proj.passes.vk:remove_asserts",
              "runs the pass proj.passes.vk:RemoveAsserts on it"),
         _api("proj/passes/vk.py:19:5", "proj.passes.vk:insert_prepack",
              "calls program.graph_module.graph.inserting_after()")]),
    # rewrites through torch's graph-rewriting functions, not through a project's namesake
    "rewrites_through_torchs_graph_functions": (
        {**PACKAGE, "proj/passes/fold.py": FOLD, "proj/passes/matcher.py": MATCHER}, ".",
        [_api("proj/passes/fold.py:8:5", "proj.passes.fold:run_const_fold",
              "calls split_const_subgraphs()", "GraphModule"),
         _api("proj/passes/fold.py:14:5", "proj.passes.fold:compose_mm",
              "calls subgraph_rewriter.replace_pattern()", "GraphModule")]),
    # rewrites of an exported program's graph: itself, or by a pass class of the tree run on it
    "passes_over_an_exported_program": (
        {**PACKAGE, "proj/passes/vk.py": EXPORTED}, ".",
        [_class("proj/passes/vk.py:6:7", "proj.passes.vk:RemoveAsserts"),
         _api("proj/passes/vk.py:13:5", "proj.passes.vk:remove_asserts",
              "runs the pass proj.passes.vk:RemoveAsserts on it"),
         _api("proj/passes/vk.py:19:5", "proj.passes.vk:insert_prepack",
              "calls program.graph_module.graph.inserting_after()")]),
}


@pytest.mark.parametrize("prefilter", [True, False], ids=["prefilter", "no-prefilter"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_each_round11_shape_is_exactly_its_findings(tmp_path, case, prefilter):
    check_exactly(tmp_path, *CASES[case], prefilter)
