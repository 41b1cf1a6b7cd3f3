"""Round 14 (docs/lint-recall.md, "Round 14"): the forms of the round-14 held-out set
(experimental-experiment's tracer and exporter, AIMET's ``prepare_model`` of round 12, torch_mcpu's
install through a helper), each found by its structure and effect.

* a function or method annotated to return an FX graph that it builds itself (no parameter is
  annotated as a graph: it traces or exports a module) runs each rewrite of the tree it hands
  that graph to on every graph it builds: such a rewrite is a pass of that producer, a method
  of its own class (``self.remove_inplace(graph)``) or a function of the tree; what only reads
  is not, and neither is what a function returning a module, or transforming a graph it is
  handed, calls (its steps);
* a helper of the tree that hands back a parameter (``append_post_grad_pass(existing, new)``
  returning ``new``) names, at a hook install, what its caller gives it: the pass, not an
  unresolvable ``new``.

Real files, the real ``lite_guard check`` CLI, prefilter on and off, the exact path, line,
column, code and message of every finding."""

from __future__ import annotations

import pytest
from test_lint_dynamic_installs import _lg001
from test_lint_round10_recall import check_exactly

PACKAGE = {"proj/__init__.py": ""}

# a tracer whose trace() cleans every graph it builds (experimental-experiment's CustomTracer)
TRACER = ("from typing import Any\n\nimport torch\n\n\n"
          "class CleanTracer(torch.fx.Tracer):\n"
          "    def trace(self, root: Any, concrete_args=None) -> torch.fx.Graph:\n"
          "        graph = super().trace(root, concrete_args)\n"
          "        self.remove_inplace(graph)\n"
          "        self.count_nodes(graph)\n"
          "        return graph\n\n"
          "    @classmethod\n"
          "    def remove_inplace(cls, graph: torch.fx.Graph) -> int:\n"
          "        n = 0\n"
          "        for node in list(graph.nodes):\n"
          "            if node.target is torch.relu_:\n"
          "                with graph.inserting_after(node):\n"
          "                    new = graph.call_function(torch.relu, node.args)\n"
          "                node.replace_all_uses_with(new)\n"
          "                graph.erase_node(node)\n"
          "                n += 1\n"
          "        return n\n\n"
          "    @classmethod\n"
          "    def count_nodes(cls, graph: torch.fx.Graph) -> int:\n"  # reads only
          "        return len(graph.nodes)\n")
STEPS = ("import torch\nfrom torch.fx import GraphModule\n\n\n"
         "def fold(gm: GraphModule):\n"
         "    for node in list(gm.graph.nodes):\n"
         "        if node.target is torch.nn.functional.dropout:\n"
         "            node.replace_all_uses_with(node.args[0])\n"
         "            gm.graph.erase_node(node)\n"
         "    gm.recompile()\n\n\n"
         "def strip(gm: GraphModule):\n"
         "    gm.graph.eliminate_dead_code()\n"
         "    gm.recompile()\n\n\n"
         "def merge(gm: GraphModule):\n"
         "    gm.graph.lint()\n"
         "    gm.recompile()\n")
# an entry that traces the module and prepares what it traced (AIMET's prepare_model), and its
# near misses: a function returning a module, one transforming the graph it is handed
PREPARE = ("from typing import Optional\n\nimport torch\n\n"
           "from proj.steps import fold, merge, strip\n\n\n"
           "def prepare_model(model: torch.nn.Module) -> \"torch.fx.GraphModule\":\n"
           "    traced = torch.fx.symbolic_trace(model)\n"
           "    fold(traced)\n"
           "    return traced\n\n\n"
           "def prepare_eager(model: torch.nn.Module) -> torch.nn.Module:\n"
           "    traced = torch.fx.symbolic_trace(model)\n"
           "    strip(traced)\n"
           "    return traced\n\n\n"
           "def finish(gm: torch.fx.GraphModule) -> Optional[torch.fx.GraphModule]:\n"
           "    copied = gm.__class__(gm, gm.graph)\n"
           "    merge(copied)\n"
           "    return copied\n\n\n"
           "def run(model):\n"
           "    return finish(prepare_eager(model))\n")
# a pass installed through a helper that hands it back, or chains it (torch_mcpu)
CHAIN = ("from torch import fx\n\n\n"
         "def fuse(graph: fx.Graph) -> None:\n"
         "    graph.eliminate_dead_code()\n\n\n"
         "def append_pass(existing, new_pass):\n"
         "    if existing is None:\n"
         "        return new_pass\n"
         "    return lambda graph: (new_pass(graph), existing(graph))\n")
INSTALL = ("import torch._inductor.config as inductor_config\n\n"
           "from proj.chain import append_pass, fuse\n\n\n"
           "def setup():\n"
           "    inductor_config.post_grad_custom_post_pass = append_pass(\n"
           "        inductor_config.post_grad_custom_post_pass, fuse)\n")


def _produced(where: str, name: str, evidence: str, how: str, producer: str) -> str:
    return _lg001(where, name, f"function taking an FX graph ({evidence}), rewrites it ({how}) and"
                  f" the graph producer {producer}, which returns a graph it builds itself, runs"
                  " it on each graph it builds: a pass of that producer, which no hook sees",
                  "post_grad")


CASES = {
    # CleanTracer.trace builds its graph and rewrites it with its own classmethod; reading is not
    "rewrite_a_tracer_runs_on_each_graph_it_builds": (
        {**PACKAGE, "proj/tracing.py": TRACER}, ".",
        [_produced("proj/tracing.py:14:9", "proj.tracing:CleanTracer.remove_inplace",
                   "annotated Graph", "calls graph.inserting_after()",
                   "proj.tracing:CleanTracer.trace")]),
    # prepare_model (a string annotation) traces and folds: fold is its pass; a function
    # returning a module, and one transforming a graph it is handed, run steps
    "rewrite_an_entry_runs_on_the_graph_it_traced": (
        {**PACKAGE, "proj/steps.py": STEPS, "proj/prepare.py": PREPARE}, ".",
        [_produced("proj/steps.py:5:5", "proj.steps:fold", "annotated GraphModule",
                   "calls gm.recompile()", "proj.prepare:prepare_model")]),
    # the hook receives what append_pass hands back: fuse, or a lambda chaining it
    "pass_installed_through_a_helper_handing_it_back": (
        {**PACKAGE, "proj/chain.py": CHAIN, "proj/install.py": INSTALL}, ".",
        [_lg001("proj/install.py:7:50", "proj.chain:append_pass.<locals>.<lambda>",
                "installed in post_grad_custom_post_pass", "post_grad"),
         _lg001("proj/install.py:7:50", "proj.chain:fuse",
                "installed in post_grad_custom_post_pass", "post_grad")]),
}


@pytest.mark.parametrize("prefilter", [True, False], ids=["prefilter", "no-prefilter"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_each_round14_shape_is_exactly_its_findings(tmp_path, case, prefilter):
    check_exactly(tmp_path, *CASES[case], prefilter)
