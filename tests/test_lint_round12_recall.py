"""Round 12 (docs/lint-recall.md, "Round 12"): the forms of the round-12 held-out set
(tt-torch's dynamo passes, MASE's graph transforms, lightning-thunder's dynamo rewrites), each
found by its structure and effect.

* a module-level function whose first parameter is not annotated as a graph (no annotation, or
  a project's wrapper type) is a graph function when it walks that parameter's nodes
  (``for n in gm.graph.nodes``, ``wrapper.fx_graph.nodes``) and rewrites what it walks or what
  it reached from the parameter; or when it hands the parameter, first, to one of torch's
  graph-rewriting functions (``split_const_subgraphs(gm)``) or to such a graph function of its
  file (MASE's ``quantize_transform_pass``); a function taking a node reads ``node.graph`` but
  walks no graph, a walk that only reads rewrites nothing, and a parameter typed by another
  package (an ONNX ``model: ir.Model``) is that package's graph;
* an annotation allowing a graph among other types (``Union[torch.fx.Graph,
  torch.fx.GraphModule]``, ``GraphModule | ExportedProgram``) is a graph annotation;
* a module-level function threading one graph through two or more graph rewrites of the tree
  (``gm = drop_casts(gm); gm = fold(gm)``) is a pass pipeline of the project's own: each rewrite
  it runs is a pass, which no hook sees; not when the function is a graph rewrite itself (its
  calls are its steps), nor in a method;
* a compiler given as an instance of a class of the tree (``torch.compile(fn,
  backend=Compiler())``) is that class's ``__call__``: a graph rewrite it calls with its graph
  is reported, as for a function given as the compiler.

Real files, the real ``lite_guard check`` CLI, prefilter on and off, the exact path, line,
column, code and message of every finding."""

from __future__ import annotations

import pytest
from test_lint_dynamic_installs import _lg001
from test_lint_round10_recall import check_exactly

PACKAGE = {"proj/__init__.py": "", "proj/passes/__init__.py": ""}
API = (" and nothing in the linted paths calls it or hands it on: an entry of its package proj's"
       " API, or installed from outside the linted paths")

# graph functions by what they do with an unannotated (or wrapper-typed) first parameter
WALKS = ("import torch\nfrom torch.fx.experimental.const_fold import split_const_subgraphs\n\n\n"
         "def drop_casts(gm):\n"
         "    for node in gm.graph.nodes:\n"
         "        if node.target is torch.ops.prims.convert_element_type.default:\n"
         "            node.replace_all_uses_with(node.args[0])\n"
         "    return gm\n\n\n"
         "def drop_asserts(wrapper: 'Wrapper', args=None):\n"  # a project's wrapper of a graph
         "    for node in list(wrapper.fx_graph.nodes):\n"
         "        if node.target is torch._assert:\n"
         "            wrapper.fx_graph.erase_node(node)\n"
         "    return wrapper, {}\n\n\n"
         "def quantize(wrapper, args=None):\n"  # its rewrite is a step of this file
         "    wrapper = _by_type(wrapper, args)\n"
         "    return wrapper, {}\n\n\n"
         "def _by_type(wrapper, config):\n"
         "    for node in wrapper.fx_graph.nodes:\n"
         "        with wrapper.fx_graph.inserting_before(node):\n"
         "            wrapper.fx_graph.call_function(torch.relu, (node,))\n"
         "    return wrapper\n\n\n"
         "def fold(gm):\n"
         "    gm = split_const_subgraphs(gm)\n"
         "    gm.run_folding()\n"
         "    return gm\n\n\n"
         "def count(gm):\n"  # walks, reads only
         "    return len([n for n in gm.graph.nodes if n.op == 'call_function'])\n\n\n"
         "def unlink(node):\n"  # a node's graph, no walk
         "    node.graph.erase_node(node)\n")
# another package's graph (transformers' ONNX fusions): walked and rewired by its own members
ONNX = ("import onnx_ir as ir\n\n\n"
        "def pack_inputs(model: ir.Model) -> None:\n"
        "    for node in model.graph:\n"
        "        node.replace_input_with(1, None)\n")
# annotations allowing a graph among other types
UNIONS = ("from typing import Optional, Union\n\nimport torch\n"
          "from torch.export import ExportedProgram\n\n\n"
          "def reduce_graph(module_or_graph: Union[torch.fx.Graph, torch.fx.GraphModule]):\n"
          "    graph = module_or_graph.graph if isinstance(module_or_graph, torch.fx.GraphModule)"
          " else module_or_graph\n"
          "    for node in reversed(graph.nodes):\n"
          "        if not node.users and node.op != 'output':\n"
          "            graph.erase_node(node)\n\n\n"
          "def refit(module: torch.fx.GraphModule | ExportedProgram, weights):\n"
          "    module.recompile()\n\n\n"
          "def name_of(module: Optional[torch.nn.Module]):\n"  # allows no graph: not one
          "    module.graph.eliminate_dead_code()\n")
# a pipeline of the project's own, run by its backend, and what is not one
STEPS = ("import torch\nfrom torch.fx import GraphModule\n\n\n"
         "def drop_casts(gm):\n"
         "    for node in gm.graph.nodes:\n"
         "        node.replace_all_uses_with(node.args[0])\n"
         "    return gm\n\n\n"
         "def fold(gm: GraphModule) -> GraphModule:\n"
         "    gm.graph.eliminate_dead_code()\n"
         "    return gm\n\n\n"
         "def prune(program, constants):\n"
         "    for node in program.graph_module.graph.nodes:\n"
         "        if node.op == 'placeholder' and not node.users:\n"
         "            program.graph_module.graph.erase_node(node)\n"
         "    return constants\n\n\n"
         "def shape_prop(gm: GraphModule, inputs) -> None:\n"  # reads only
         "    for node in gm.graph.nodes:\n"
         "        node.meta['seen'] = True\n")
PIPELINE = ("import torch\n\nfrom proj.passes.steps import drop_casts, fold, prune, shape_prop\n\n\n"
            "def pass_pipeline(gm, example_inputs):\n"
            "    device_gm = torch.fx.GraphModule(gm, gm.graph)\n"
            "    device_gm = drop_casts(device_gm)\n"
            "    shape_prop(device_gm, example_inputs)\n"
            "    device_gm = fold(device_gm)\n"
            "    program = torch.export.export(device_gm, tuple(example_inputs))\n"
            "    constants = prune(program, [])\n"
            "    return program, constants\n")
# a graph rewrite threading its graph through steps is not a pipeline of passes; nor a method
ENTRY = ("from torch.fx import GraphModule\n\nfrom proj.passes.steps import drop_casts, fold\n\n\n"
         "def convert(model: GraphModule) -> GraphModule:\n"
         "    model = drop_casts(model)\n"
         "    model = fold(model)\n"
         "    return model\n\n\n"
         "class Case:\n"
         "    def check(self, m):\n"
         "        m = drop_casts(m)\n"
         "        m = fold(m)\n"
         "        return m\n")
# a compiler given as an instance (thunder's ThunderCompiler)
BACKEND = ("import torch\nfrom torch.fx import GraphModule\n\n\n"
           "def remove_empty_regions(gm: GraphModule) -> GraphModule:\n"
           "    for node in gm.graph.nodes:\n"
           "        if not node.users and node.op == 'call_function':\n"
           "            gm.graph.erase_node(node)\n"
           "    return gm\n\n\n"
           "def shapes(gm: GraphModule) -> list:\n"  # reads only
           "    return [n.meta for n in gm.graph.nodes]\n\n\n"
           "class Compiler:\n"
           "    def __call__(self, gm: GraphModule, example_inputs):\n"
           "        remove_empty_regions(gm)\n"
           "        shapes(gm)\n"
           "        return gm.forward\n\n\n"
           "def compile_fn(fn):\n"
           "    return torch.compile(fn, backend=Compiler())\n")


def _fn(where: str, name: str, evidence: str, how: str, why: str = API) -> str:
    return _lg001(where, name, f"function taking an FX graph ({evidence}), rewrites it ({how})"
                  + why, "post_grad")


def _in_pipeline(where: str, name: str, evidence: str, how: str, others: int) -> str:
    return _fn(where, name, evidence, how,
               " and the pipeline proj.passes.pipeline:pass_pipeline, threading a graph through"
               f" the tree's rewrites (g = f(g)), runs it with {others} other rewrites: a pass"
               " of that pipeline, which no hook sees")


CASES = {
    # walked and rewritten, by itself, through torch's folding, or through its file's step;
    # a walk that reads and a node's graph are not graph functions
    "graph_by_a_walk_of_its_nodes": (
        {**PACKAGE, "proj/passes/cleanup.py": WALKS, "proj/passes/onnx_fusions.py": ONNX}, ".",
        [_fn("proj/passes/cleanup.py:5:5", "proj.passes.cleanup:drop_casts",
             "walks gm.graph.nodes", "calls node.replace_all_uses_with()"),
         _fn("proj/passes/cleanup.py:12:5", "proj.passes.cleanup:drop_asserts",
             "walks wrapper.fx_graph.nodes", "calls wrapper.fx_graph.erase_node()"),
         _fn("proj/passes/cleanup.py:19:5", "proj.passes.cleanup:quantize",
             "hands wrapper to _by_type, which walks wrapper.fx_graph.nodes",
             "through proj.passes.cleanup:_by_type, which calls"
             " wrapper.fx_graph.inserting_before()"),
         _fn("proj/passes/cleanup.py:31:5", "proj.passes.cleanup:fold",
             "hands gm to split_const_subgraphs()", "calls split_const_subgraphs()")]),
    # Union[Graph, GraphModule] and GraphModule | ExportedProgram; Optional[nn.Module] is not
    "annotation_allowing_a_graph": (
        {**PACKAGE, "proj/passes/unions.py": UNIONS}, ".",
        [_fn("proj/passes/unions.py:7:5", "proj.passes.unions:reduce_graph", "annotated Graph",
             "calls graph.erase_node()"),
         _fn("proj/passes/unions.py:14:5", "proj.passes.unions:refit", "annotated GraphModule",
             "calls module.recompile()")]),
    # the backend's pass pipeline: each rewrite it runs (also one on the program it exported
    # from the graph) is a pass; the analysis it runs is not
    "pipeline_of_the_projects_own": (
        {**PACKAGE, "proj/passes/steps.py": STEPS, "proj/passes/pipeline.py": PIPELINE}, ".",
        [_in_pipeline("proj/passes/steps.py:5:5", "proj.passes.steps:drop_casts",
                      "walks gm.graph.nodes", "calls node.replace_all_uses_with()", 2),
         _in_pipeline("proj/passes/steps.py:11:5", "proj.passes.steps:fold",
                      "annotated GraphModule", "calls gm.graph.eliminate_dead_code()", 2),
         _in_pipeline("proj/passes/steps.py:16:5", "proj.passes.steps:prune",
                      "walks program.graph_module.graph.nodes",
                      "calls program.graph_module.graph.erase_node()", 2)]),
    # a graph rewrite threading its graph through steps (torchao's convert_pt2e) is reported
    # itself, its steps are not; a test method threading one is no pipeline
    "graph_rewrite_threading_its_steps": (
        {**PACKAGE, "proj/passes/steps.py": STEPS, "proj/passes/entry.py": ENTRY}, ".",
        [_fn("proj/passes/entry.py:6:5", "proj.passes.entry:convert", "annotated GraphModule",
             "through proj.passes.steps:fold, which calls gm.graph.eliminate_dead_code()"),
         _fn("proj/passes/steps.py:16:5", "proj.passes.steps:prune",  # nothing here runs it
             "walks program.graph_module.graph.nodes",
             "calls program.graph_module.graph.erase_node()")]),
    # backend=Compiler(): its __call__ compiles; the rewrite it calls with its graph is a pass
    "compiler_given_as_an_instance": (
        {**PACKAGE, "proj/backend.py": BACKEND}, ".",
        [_lg001("proj/backend.py:5:5", "proj.backend:remove_empty_regions",
                "function rewriting an FX graph (calls gm.graph.erase_node()), called with the"
                " graph by the compiler 'proj.backend:Compiler.__call__' given to"
                " compile(backend=...)", "post_grad")]),
}


@pytest.mark.parametrize("prefilter", [True, False], ids=["prefilter", "no-prefilter"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_each_round12_shape_is_exactly_its_findings(tmp_path, case, prefilter):
    check_exactly(tmp_path, *CASES[case], prefilter)
