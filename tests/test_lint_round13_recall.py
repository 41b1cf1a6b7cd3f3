"""Round 13 (docs/lint-recall.md, "Round 13"): the forms of the round-13 held-out set (kernl's
dynamo optimizer, MQBench's FX quantization, torch-mlir's pt1 dynamo backend), each found by its
structure and effect.

* ``torch._dynamo.optimize(compiler)`` gives a compiler, as ``torch.compile(backend=...)`` does
  (registry rows), also by position: the compiler handed so is not a pass handed on;
* a function a compiler calls with its graph that does not rewrite it but hands it to two or
  more rewrites of the tree (kernl's ``dynamo_backend_ofi(gm)``) is the compiler's pipeline:
  each rewrite it runs is a pass, also one that rewrites through a function of another file
  (``replace_pattern(gm, ...)``); what only reads the graph is not; one rewrite alone is
  reached through its wrapper, reported as the wrapper;
* a closure given as a compiler (torch-mlir's ``wrapper_backend``, built by a factory and given
  to ``aot_autograd(fw_compiler=...)``): a graph rewrite it calls with its graph is a pass;
* a class a decorator of the tree registers, whose method rewrites an FX graph, is a pass
  without a ``__call__`` (MQBench's quantizers: the runner calls ``prepare``);
* a function a decorator of the tree registers that never names the graph it is handed
  (MQBench's ``deploy_qparams_*``, which edit an ONNX file) is not a pass; one that does
  nothing (``pass``) still is.

Real files, the real ``lite_guard check`` CLI, prefilter on and off, the exact path, line,
column, code and message of every finding."""

from __future__ import annotations

import pytest
from test_lint_dynamic_installs import _lg001
from test_lint_round10_recall import check_exactly

PACKAGE = {"proj/__init__.py": "", "proj/opt/__init__.py": ""}

# a pattern rewriter of the project's own (kernl's extended_matcher.replace_pattern)
MATCHER = ("from torch.fx import GraphModule\n\n\n"
           "def replace_pattern(gm: GraphModule, pattern, replacement):\n"
           "    for node in list(gm.graph.nodes):\n"
           "        if node.target is pattern:\n"
           "            node.target = replacement\n"
           "    gm.recompile()\n"
           "    return []\n")
STEPS = ("import torch\nfrom torch.fx import GraphModule\n\n"
         "from proj.opt.matcher import replace_pattern\n\n\n"
         "def remove_dropout(gm: GraphModule):\n"
         "    for n in gm.graph.nodes:\n"
         "        if n.target is torch.nn.functional.dropout:\n"
         "            n.replace_all_uses_with(n.args[0])\n"
         "            gm.graph.erase_node(n)\n"
         "    gm.recompile()\n\n\n"
         "def fuse_attention(gm: GraphModule, causal: bool):\n"
         "    replace_pattern(gm, torch.matmul, torch.bmm)\n\n\n"
         "def count_nodes(gm: GraphModule) -> int:\n"  # reads only
         "    return len(gm.graph.nodes)\n")
PIPELINE = ("import torch\nfrom torch.fx import GraphModule\n\n"
            "from proj.opt.steps import count_nodes, fuse_attention, remove_dropout\n\n\n"
            "def optimize_graph(gm: GraphModule):\n"
            "    remove_dropout(gm)\n"
            "    fuse_attention(gm, True)\n"
            "    count_nodes(gm)\n"
            "    return gm\n")
ENTRY = ("import torch\nimport torch._dynamo as torchdynamo\n\n"
         "from proj.opt.pipeline import optimize_graph\n\n\n"
         "def _compiler(gm: torch.fx.GraphModule, example_inputs):\n"
         "    optimize_graph(gm)\n"
         "    return gm.forward\n\n\n"
         "def optimize_model(model):\n"
         "    @torchdynamo.optimize(_compiler)\n"
         "    def run(*args, **kwargs):\n"
         "        return model.forward_original(*args, **kwargs)\n\n"
         "    model.forward = run\n")
# one rewrite behind a wrapper: the wrapper is the compiler's pass
WRAPPED = ("import torch\nfrom torch.fx import GraphModule\n\n"
           "from proj.opt.steps import count_nodes, remove_dropout\n\n\n"
           "def clean(gm: GraphModule):\n"
           "    remove_dropout(gm)\n"
           "    count_nodes(gm)\n\n\n"
           "def backend(gm: GraphModule, example_inputs):\n"
           "    clean(gm)\n"
           "    return gm.forward\n\n\n"
           "def build(fn):\n"
           "    return torch.compile(fn, backend=backend)\n")
# a compiler a factory builds, given to aot_autograd (torch-mlir's make_simple_dynamo_backend)
CLOSURE = ("from typing import List\n\nimport torch\n"
           "from torch._dynamo.backends.common import aot_autograd\n\n\n"
           "def _adjust_calling_convention(gm: torch.fx.GraphModule) -> bool:\n"
           "    changed = False\n"
           "    for node in gm.graph.nodes:\n"
           "        if node.op == 'output' and isinstance(node.args[0], tuple):\n"
           "            node.args = (node.args[0][0],)\n"
           "            changed = True\n"
           "    if changed:\n"
           "        gm.recompile()\n"
           "    return changed\n\n\n"
           "def _outputs(gm: torch.fx.GraphModule) -> int:\n"  # reads only
           "    return sum(1 for node in gm.graph.nodes if node.op == 'output')\n\n\n"
           "def make_simple_backend(user_backend):\n"
           "    def wrapper_backend(gm: torch.fx.GraphModule, example_inputs: List[torch.Tensor]):\n"
           "        _adjust_calling_convention(gm)\n"
           "        _outputs(gm)\n"
           "        return user_backend(gm, example_inputs)\n\n"
           "    return aot_autograd(fw_compiler=wrapper_backend)\n")
# a registry of the tree (MQBench's utils/registry.py), its quantizer classes and deploy functions
REGISTRY = ("QUANTIZERS = {}\nDEPLOY = {}\n\n\n"
            "def register_quantizer(kind):\n"
            "    def insert(cls):\n"
            "        QUANTIZERS[kind] = cls\n"
            "        return cls\n"
            "    return insert\n\n\n"
            "def register_deploy(kind):\n"
            "    def insert(func):\n"
            "        DEPLOY.setdefault(kind, []).append(func)\n"
            "        return func\n"
            "    return insert\n")
QUANTIZERS = ("from torch.fx import GraphModule\n\n"
              "from proj.registry import register_quantizer\n\n\n"
              "@register_quantizer('trt')\n"
              "class ModelQuantizer(object):\n"
              "    def prepare(self, model: GraphModule, qconfig):\n"
              "        return self._insert_fake_quant(model, qconfig)\n\n"
              "    def _insert_fake_quant(self, model: GraphModule, qconfig):\n"
              "        graph = model.graph\n"
              "        for node in list(graph.nodes):\n"
              "            with graph.inserting_after(node):\n"
              "                graph.create_node('call_module', 'fq', (node,), {})\n"
              "        model.recompile()\n"
              "        return model\n\n\n"
              "@register_quantizer('report')\n"
              "class Reporter(object):\n"  # reads only
              "    def prepare(self, model: GraphModule, qconfig):\n"
              "        return [n.name for n in model.graph.nodes]\n")
DEPLOY = ("import onnx\nfrom torch.fx import GraphModule\n\n"
          "from proj.registry import register_deploy\n\n\n"
          "@register_deploy('trt')\n"
          "def merge_bn(model: GraphModule, **kwargs):\n"
          "    for node in list(model.graph.nodes):\n"
          "        if node.op == 'call_module':\n"
          "            model.graph.erase_node(node)\n\n\n"
          "@register_deploy('trt')\n"
          "def deploy_qparams(model: GraphModule, onnx_path, **kwargs):\n"  # never names model
          "    graph = onnx.load(onnx_path).graph\n"
          "    onnx.save(graph, onnx_path)\n\n\n"
          "@register_deploy('noop')\n"
          "def keep(model: GraphModule, **kwargs):\n"  # does nothing: the guard sees it run
          "    pass\n")


def _in_pipeline(where: str, name: str, how: str, others: int) -> str:
    return _lg001(where, name, f"function taking an FX graph (annotated GraphModule), rewrites it"
                  f" ({how}) and the pipeline proj.opt.pipeline:optimize_graph, which the compiler"
                  " 'proj.entry:_compiler' given to optimize(backend=...) calls with its graph,"
                  f" runs it with {others} other rewrite{'s' if others > 1 else ''}: a pass of"
                  " that pipeline, which no hook sees", "post_grad")


CASES = {
    # torchdynamo.optimize(_compiler): _compiler compiles; the pipeline it calls runs two passes
    # (one through the project's own replace_pattern, in another file); count_nodes reads
    "pipeline_of_a_compiler_given_to_dynamo_optimize": (
        {**PACKAGE, "proj/opt/matcher.py": MATCHER, "proj/opt/steps.py": STEPS,
         "proj/opt/pipeline.py": PIPELINE, "proj/entry.py": ENTRY}, ".",
        [_in_pipeline("proj/opt/steps.py:7:5", "proj.opt.steps:remove_dropout",
                      "calls gm.recompile()", 1),
         _in_pipeline("proj/opt/steps.py:15:5", "proj.opt.steps:fuse_attention",
                      "through proj.opt.matcher:replace_pattern, which calls gm.recompile()", 1)]),
    # one rewrite behind a wrapper the compiler calls: the wrapper is the pass
    "one_rewrite_behind_a_wrapper": (
        {**PACKAGE, "proj/opt/matcher.py": MATCHER, "proj/opt/steps.py": STEPS,
         "proj/opt/wrapped.py": WRAPPED}, ".",
        [_lg001("proj/opt/steps.py:15:5", "proj.opt.steps:fuse_attention",  # nothing runs it
                "function taking an FX graph (annotated GraphModule), rewrites it (through"
                " proj.opt.matcher:replace_pattern, which calls gm.recompile()) and nothing in"
                " the linted paths calls it or hands it on: an entry of its package proj's API,"
                " or installed from outside the linted paths", "post_grad"),
         _lg001("proj/opt/wrapped.py:7:5", "proj.opt.wrapped:clean",
                "function taking an FX graph (annotated GraphModule), rewrites it (through"
                " proj.opt.steps:remove_dropout, which calls gm.recompile()) called"
                " with the graph by the compiler 'proj.opt.wrapped:backend' given to"
                " compile(backend=...)", "post_grad")]),
    # a closure given as aot_autograd's fw_compiler: its rewrite is a pass, its reading is not
    "compiler_built_by_a_factory": (
        {**PACKAGE, "proj/backend.py": CLOSURE}, ".",
        [_lg001("proj/backend.py:7:5", "proj.backend:_adjust_calling_convention",
                "function rewriting an FX graph (calls gm.recompile()), called with the graph by"
                " the compiler 'proj.backend:make_simple_backend.<locals>.wrapper_backend' given"
                " to aot_autograd(fw_compiler=...)", "post_grad")]),
    # registered classes and functions: the rewriting ones are passes, the reading class and
    # the function that never names its graph are not; a no-op registered is
    "registered_by_a_registry_of_the_tree": (
        {**PACKAGE, "proj/registry.py": REGISTRY, "proj/quant.py": QUANTIZERS,
         "proj/deploy.py": DEPLOY}, ".",
        [_lg001("proj/deploy.py:8:5", "proj.deploy:merge_bn",
                "function taking an FX graph (annotated GraphModule), registered by its"
                " decorator @register_deploy", "post_grad"),
         _lg001("proj/deploy.py:21:5", "proj.deploy:keep",
                "function taking an FX graph (annotated GraphModule), registered by its"
                " decorator @register_deploy", "post_grad"),
         _lg001("proj/quant.py:7:7", "proj.quant:ModelQuantizer",
                "class registered by its decorator @register_quantizer, whose _insert_fake_quant"
                " rewrites an FX graph (calls graph.inserting_after())", "post_grad", "class")]),
}


@pytest.mark.parametrize("prefilter", [True, False], ids=["prefilter", "no-prefilter"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_each_round13_shape_is_exactly_its_findings(tmp_path, case, prefilter):
    check_exactly(tmp_path, *CASES[case], prefilter)


def test_a_callable_named_in_prose_does_not_make_a_file_read_whole():
    """``optimize`` is torch._dynamo's compiler-taking callable, and an English word: a file is
    read whole for it where it is called, a decorator, an attribute of an imported torch module
    or imported (an alias the index calls), not where a docstring, a comment, a parameter or an
    import of another package names it (transformers' docstrings made 53 more files of 3,000
    read whole, the cold lint 9 s -> 15 s, in a first version)."""
    from lint_rules.index import Vocabulary
    from lite_guard.registry import Registry

    vocab = Vocabulary.from_registry(Registry.load(include_project=False))
    handing = [
        "import torch._dynamo as torchdynamo\n\n@torchdynamo.optimize(compiler)\ndef run(x):\n"
        "    return x\n",
        "import torch\n\nrun = torch._dynamo.optimize(compiler)(fn)\n",
        "from torch._dynamo import optimize as opt\n\nrun = opt(compiler)(fn)\n",
        "from torch._dynamo import *\n\nrun = optimize(compiler)(fn)\n",
    ]
    silent = [
        '"""Kernels that optimize the attention."""\n# we optimize here\nX = 1\n',
        "def export(model, optimize: bool = True):\n    return dict(optimize=optimize)\n",
        "from scipy.optimize import linear_sum_assignment\n",
    ]
    assert [vocab.may_hand_arguments(text) for text in handing] == [True] * len(handing)
    assert [vocab.may_hand_arguments(text) for text in silent] == [False] * len(silent)
