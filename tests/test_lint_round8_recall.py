"""Shapes the round-7 red team found the lint missing (docs/lint-recall.md, "Round 8"): values
handed to torch's own pass and compiler arguments (``aot_autograd(partition_fn=p)``, torch.fx's
``PassManager([p])`` / ``pm.add_pass(p)``, ``backend=``, ``fw_compiler=``, ``inner_compile=``),
graph rewrites a compiler calls (TensorRT-LLM's ``recover_pass``), and another project's pipeline
code replaced by a graph rewrite (unsloth_zoo over vLLM). The vocabulary is registry data
(``[[base]]`` roles ``pass_argument``, ``compiler_argument``, ``graph_mutation``); whether a
function is a pass is decided by what it does to the graph, not by its name.

Real files, the real ``lite_guard check`` CLI, prefilter on and off, the exact path, line,
column, code and message of every finding."""

from __future__ import annotations

import pytest
from test_lint_dynamic_installs import _check, _lg001

REWRITE = ("    for node in list(gm.graph.nodes):\n        if not node.users:\n"
           "            gm.graph.erase_node(node)\n    gm.recompile()\n    return gm\n")
PARTITION = ("def my_partition(joint_module, joint_inputs, *, num_fwd_outputs, **kwargs):\n"
             "    joint_module.graph.eliminate_dead_code()\n"
             "    return min_cut_rematerialization_partition(joint_module, joint_inputs,\n"
             "                                               num_fwd_outputs=num_fwd_outputs,"
             " **kwargs)\n\n\n")
FW = "def fw_compiler(gm, example_inputs):\n    return gm.forward\n\n\n"


def _called(where: str, name: str, rewrite: str, compiler: str, given: str) -> str:
    return _lg001(where, name, f"function rewriting an FX graph (calls {rewrite}()), called with"
                  f" the graph by the compiler '{compiler}' given to {given}", "post_grad")


def _replaces(where: str, name: str, target: str, rewrite: str) -> str:
    return _lg001(where, name, f"replaces {target} at run time with a rewrite of an FX graph"
                  f" (calls {rewrite}()), a monkeypatch of another project's compile pipeline"
                  " that no hook sees", "post_grad")


CASES = {
    # 1. a custom partitioner handed to AOTAutograd; the forward compiler only compiles: silent
    "partition_fn": (
        {"backend.py": "from functorch.compile import min_cut_rematerialization_partition\n"
                       "from torch._dynamo.backends.common import aot_autograd\n"
                       "from torch._functorch.aot_autograd import aot_module_simplified\n\n\n"
                       + PARTITION + FW
                       + "my_backend = aot_autograd(fw_compiler=fw_compiler,"
                         " partition_fn=my_partition)\n\n\n"
                         "def other_backend(gm, example_inputs):\n"
                         "    return aot_module_simplified(gm, example_inputs, fw_compiler,"
                         " None, my_partition)\n"},
        [_lg001("backend.py:16:65", "backend:my_partition",
                "handed to aot_autograd(partition_fn=...)", "aot"),
         _lg001("backend.py:20:73", "backend:my_partition",
                "handed to aot_module_simplified(partition_fn=...)", "aot")]),
    # 1. a forward compiler that rewrites the graph it compiles is a pass
    "rewriting_fw_compiler": (
        {"backend.py": "from torch._dynamo.backends.common import aot_autograd\n\n\n"
                       "def fw_compiler(gm, example_inputs):\n" + REWRITE.replace(
                           "    return gm\n", "    return gm.forward\n")
                       + "\n\nmy_backend = aot_autograd(fw_compiler=fw_compiler)\n"},
        [_lg001("backend.py:4:5", "backend:fw_compiler", "compiler given to"
                " aot_autograd(fw_compiler=...) that rewrites the graph it compiles (calls"
                " gm.graph.erase_node())", "post_grad")]),
    # 2. TensorRT-LLM auto_deploy: a class decorator of the tree that keeps the class in a
    # registry dict, a runner that instantiates and applies it; the transform rewrites the graph
    # in _apply(self, gm, cm, factory, shared_config) (not a one-graph __call__)
    "class_decorator_registry": (
        {"ad/__init__.py": "",
         "ad/interface.py": "from abc import ABC, abstractmethod\n\n"
                            "from torch.fx import GraphModule\n\n\n"
                            "class BaseTransform(ABC):\n"
                            "    def __call__(self, gm: GraphModule, cm, factory, shared_config):\n"
                            "        return self._apply(gm, cm, factory, shared_config)\n\n"
                            "    @abstractmethod\n"
                            "    def _apply(self, gm: GraphModule, cm, factory, shared_config):\n"
                            "        ...\n\n\n"
                            "class TransformRegistry:\n    _registry = {}\n\n    @classmethod\n"
                            "    def register(cls, name):\n        def inner(transform_cls):\n"
                            "            cls._registry[name] = transform_cls\n"
                            "            return transform_cls\n        return inner\n\n"
                            "    @classmethod\n    def get(cls, name):\n"
                            "        return cls._registry[name]\n",
         "ad/fuse.py": "from .interface import BaseTransform, TransformRegistry\n\n\n"
                       "@TransformRegistry.register(\"fuse_gemms\")\n"
                       "class FuseGemms(BaseTransform):\n"
                       "    def _apply(self, gm, cm, factory, shared_config):\n"
                       "        for node in list(gm.graph.nodes):\n"
                       "            if not node.users:\n                gm.graph.erase_node(node)\n"
                       "        return gm\n\n\n"
                       "@TransformRegistry.register(\"noop\")\nclass Noop(BaseTransform):\n"
                       "    def _apply(self, gm, cm, factory, shared_config):\n        return gm\n",
         "ad/optimizer.py": "from .interface import TransformRegistry\n\n\n"
                            "def optimize(config, gm, cm):\n"
                            "    for name, cfg in config.items():\n"
                            "        gm = TransformRegistry.get(name)(cfg)(gm, cm, None, {})\n"
                            "    return gm\n"},
        [_lg001("ad/fuse.py:5:7", "ad.fuse:FuseGemms", "class registered by its decorator"
                " @TransformRegistry.register, whose _apply rewrites an FX graph (calls"
                " gm.graph.erase_node())", "post_grad", kind="class")]),
    # 4. a method of a class that an in-tree runner calls with the graph, for each element of a
    # list it keeps; a transform that only reads the graph is not a pass
    "runner_calls_run": (
        {"proj/__init__.py": "",
         "proj/transforms.py": "class DeadCodeTransform:\n    def run(self, gm):\n"
                               "        gm.graph.eliminate_dead_code()\n        gm.recompile()\n"
                               "        return gm\n\n\nclass Describe:\n    def run(self, gm):\n"
                               "        return len(gm.graph.nodes)\n",
         "proj/runner.py": "from .transforms import DeadCodeTransform, Describe\n\n\n"
                           "class Runner:\n    def __init__(self):\n"
                           "        self.transforms = [DeadCodeTransform(), Describe()]\n\n"
                           "    def apply(self, gm):\n        for t in self.transforms:\n"
                           "            gm = t.run(gm)\n        return gm\n"},
        [_lg001("proj/transforms.py:1:7", "proj.transforms:DeadCodeTransform", "class whose run"
                " rewrites an FX graph (calls gm.graph.eliminate_dead_code()), called with the"
                " graph by 'proj.runner:Runner.apply'", "post_grad", kind="class")]),
    # 7. torch_npu: a check of every entry of torch's own pattern passes replaced (through the
    # imported pass list, and through the module); counting the entries edits nothing
    "torch_pattern_entries_edited": (
        {"npu.py": "import torch._inductor.fx_passes.joint_graph as jg\n"
                   "from torch._inductor.fx_passes.post_grad import pass_patterns\n\n\n"
                   "def _never(match):\n    return False\n\n\n"
                   "def disable_some():\n"
                   "    for entry in pass_patterns[1].patterns.values():\n"
                   "        for e in entry:\n            e.extra_check = _never\n"
                   "    for entries in jg.patterns.patterns.values():\n"
                   "        for e in entries:\n            e.extra_check = _never\n\n\n"
                   "def count():\n    n = 0\n"
                   "    for entry in pass_patterns[1].patterns.values():\n"
                   "        n += len(entry)\n    return n\n"},
        [_lg001("npu.py:12:13", "npu:_never", "sets extra_check on each entry of"
                " pass_patterns[1].patterns.values() (torch's"
                " torch._inductor.fx_passes.post_grad.pass_patterns) at run time, an edit of"
                " torch's compile pipeline that no hook sees", "post_grad"),
         _lg001("npu.py:15:13", "npu:_never", "sets extra_check on each entry of"
                " jg.patterns.patterns.values() (torch's torch._inductor.fx_passes.joint_graph)"
                " at run time, an edit of torch's compile pipeline that no hook sees",
                "joint_graph")]),
    # 3. unannotated functions handed to torch.fx's pass managers (both), positionally, by
    # keyword, through an alias and through add_pass on an instance
    "fx_pass_manager": (
        {"passes.py": "from torch.fx.passes.infra.pass_manager import PassManager\n"
                      "from torch.fx.passes.pass_manager import PassManager as LegacyPassManager\n"
                      "\n\ndef strip_dead(gm):\n" + REWRITE
                      + "\n\ndef fold_views(gm):\n    return gm\n\n\n"
                        "def drop_asserts(gm):\n    return gm\n\n\n"
                        "def build():\n    pm = PassManager([strip_dead])\n"
                        "    pm.add_pass(fold_views)\n    return pm\n\n\n"
                        "legacy = LegacyPassManager(passes=[drop_asserts])\n"},
        [_lg001("passes.py:22:22", "passes:strip_dead", "handed to PassManager(passes=...)",
                "post_grad"),
         _lg001("passes.py:23:17", "passes:fold_views",
                "handed to PassManager.add_pass(_pass=...)", "post_grad"),
         _lg001("passes.py:27:35", "passes:drop_asserts", "handed to PassManager(passes=...)",
                "post_grad")]),
    # 5. TensorRT-LLM: a graph rewrite a backend calls, in another file; a helper only reading
    # the graph is not a pass; the backend itself compiles (not a pass)
    "backend_calls_a_rewrite": (
        {"trt/__init__.py": "",
         "trt/recover.py": "def recover_pass(gm):\n" + REWRITE
                           + "\n\ndef describe(gm):\n    return len(gm.graph.nodes)\n",
         "trt/backend.py": "from torch._dynamo import register_backend\n\n"
                           "from .recover import describe, recover_pass\n\n\n"
                           "@register_backend\ndef trtllm(gm, example_inputs):\n"
                           "    gm = recover_pass(gm)\n    describe(gm)\n    return gm.forward\n"},
        [_called("trt/recover.py:1:5", "trt.recover:recover_pass", "gm.graph.erase_node",
                 "trt.backend:trtllm", "register_backend(compiler_fn=...)")]),
    # 5. the same through torch.compile(backend=fn)
    "torch_compile_backend": (
        {"m.py": "import torch\n\n\ndef recover_pass(gm):\n" + REWRITE
                 + "\n\ndef my_backend(gm, example_inputs):\n    recover_pass(gm)\n"
                   "    return gm.forward\n\n\n"
                   "compiled = torch.compile(torch.nn.Linear(2, 2), backend=my_backend)\n"},
        [_called("m.py:4:5", "m:recover_pass", "gm.graph.erase_node", "m:my_backend",
                 "compile(backend=...)")]),
    # 8. intel-extension-for-pytorch: the inner_compile= adaptor compiles (it was reported as a
    # pass); the fusion it runs on the graph first is the pass
    "inner_compile_adaptor": (
        {"ipex_fusion.py": "import torch\n\n\n"
                           "def _ipex_fusion_passes(gm: torch.fx.GraphModule):\n" + REWRITE,
         "ipex_compile.py": "import torch\nfrom torch._inductor.compile_fx import compile_fx,"
                            " compile_fx_inner\n\nfrom ipex_fusion import _ipex_fusion_passes\n\n\n"
                            "def ipex_compile_fx_inner(gm: torch.fx.GraphModule, example_inputs,"
                            " **kwargs):\n    _ipex_fusion_passes(gm)\n"
                            "    return compile_fx_inner(gm, example_inputs, **kwargs)\n\n\n"
                            "def compile(model: torch.fx.GraphModule, example_inputs):\n"
                            "    return compile_fx(model, example_inputs,"
                            " inner_compile=ipex_compile_fx_inner)\n"},
        [_called("ipex_fusion.py:4:5", "ipex_fusion:_ipex_fusion_passes", "gm.graph.erase_node",
                 "ipex_compile:ipex_compile_fx_inner", "compile_fx(inner_compile=...)")]),
    # 8, control: an adaptor that only calls the real inner compiler is no pass at all
    "plain_inner_compile_adaptor": (
        {"ipex.py": "import torch\nfrom torch._inductor.compile_fx import compile_fx,"
                    " compile_fx_inner\n\n\n"
                    "def _inner(gm: torch.fx.GraphModule, example_inputs, **kwargs):\n"
                    "    kwargs.pop(\"cudagraphs\", None)\n"
                    "    return compile_fx_inner(gm, example_inputs, **kwargs)\n\n\n"
                    "def ipex_compile(gm, example_inputs):\n"
                    "    return compile_fx(gm, example_inputs, inner_compile=_inner)\n"},
        []),
    # 6. unsloth_zoo over vLLM: another project's graph function replaced by a graph rewrite
    # (attribute, setattr, inside a function with its own import); a replacement that does not
    # rewrite the graph is not reported
    "foreign_pipeline_replaced": (
        {"patches.py": "import vllm.compilation.backends as vllm_backends\n\n\n"
                       "def _decompose_size_nodes(graph):\n"
                       "    for node in list(graph.nodes):\n"
                       "        if node.op == \"call_method\" and node.target == \"size\":\n"
                       "            node.replace_all_uses_with(node.args[0])\n"
                       "            graph.erase_node(node)\n\n\n"
                       "def note(x):\n    return x\n\n\n"
                       "vllm_backends._decompose_size_nodes = _decompose_size_nodes\n"
                       "setattr(vllm_backends, \"_decompose_size_nodes\", _decompose_size_nodes)\n"
                       "vllm_backends.note = note\n\n\n"
                       "def patch_vllm():\n    import vllm.compilation.fix_functionalization as ff\n"
                       "    ff._decompose = _decompose_size_nodes\n"},
        [_replaces(f"patches.py:{where}", "patches:_decompose_size_nodes", target,
                   "node.replace_all_uses_with")
         for where, target in (("15:1", "vllm.compilation.backends._decompose_size_nodes"),
                               ("16:1", "vllm.compilation.backends._decompose_size_nodes"),
                               ("22:5", "vllm.compilation.fix_functionalization._decompose"))]),
}


@pytest.mark.parametrize("prefilter", [True, False], ids=["prefilter", "no-prefilter"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_each_round8_shape_is_exactly_its_findings(tmp_path, case, prefilter):
    files, expected = CASES[case]
    for name in files:
        (tmp_path / "tree" / name).parent.mkdir(parents=True, exist_ok=True)
    result = _check(tmp_path, files, prefilter)
    assert "LG900" not in result.stdout + result.stderr, result.stdout + result.stderr
    assert result.stdout.splitlines() == expected, result.stdout + result.stderr
    assert result.returncode == (1 if expected else 0), result.stderr
