"""Round 9 (docs/lint-recall.md, "Round 9"): passes whose installer is not in the linted paths,
found by their effect on the FX graph (DeepSpeed's ``compile/passes`` linted on its own), and a
partitioner stored into the keywords a patched ``AotAutograd.__init__`` passes on
(``kwargs["partition_fn"] = p``). Also the install forms of the round-9 held-out samples the
lint already read (a dict dispatch, a decorator of another module, a re-export through
``__init__``, a bound method in a hook, a pass class through a module alias, a pattern registered
into torch's pass, a lambda in a ``PassManager``), kept so that they stay found.

Real files, the real ``lite_guard check`` CLI on the part of the tree named, prefilter on and
off, the exact path, line, column, code and message of every finding."""

from __future__ import annotations

import pytest
from test_lint_dynamic_installs import _check, _lg001

PACKAGE = {"proj/__init__.py": "", "proj/compile/__init__.py": "",
           "proj/compile/passes/__init__.py": ""}
HEAD = "import torch\nfrom torch.fx import GraphModule\n\n\n"
# A pass module as DeepSpeed writes them: public entries a schedule elsewhere installs, steps they
# call, a helper taking the graph second, and a reader.
PASSES = (HEAD
          + "def add_reduce(gm: GraphModule, graph_id: int, bwd: bool) -> GraphModule:\n"
            "    if bwd:\n        return _reduce_bw(gm, graph_id)\n    return gm\n\n\n"
            "def _reduce_bw(gm: GraphModule, graph_id: int) -> GraphModule:\n"
            "    graph = gm.graph\n    gm.graph = _moved(graph)\n    return gm\n\n\n"
            "def _moved(graph):\n    return graph\n\n\n"
            "def _insert(graph_id: int, gm: GraphModule, node) -> None:\n"
            "    with gm.graph.inserting_after(node):\n"
            "        gm.graph.call_function(torch.ops.aten.clone.default, (node,))\n\n\n"
            "def offload(gm: GraphModule, graph_id: int) -> GraphModule:\n"
            "    for node in list(gm.graph.nodes):\n        _insert(graph_id, gm, node)\n"
            "    return gm\n\n\n"
            "def plan(gm: GraphModule, budget: float) -> GraphModule:\n"
            "    print(len(gm.graph.nodes), budget)\n    return gm\n")
LOWERINGS = ("import torch\nfrom torch._decomp import register_decomposition\n"
             "from torch._inductor import lowering\n"
             "from torch._inductor.lowering import make_fallback, register_lowering\n\n"
             "aten = torch.ops.aten\n\n\n"
             "@register_lowering(aten.special_xlogy)\ndef lower_xlogy(x, y):\n    return x\n\n\n"
             "def decompose_hardswish(grad, x):\n    return grad * x\n\n\n"
             "register_decomposition([aten.hardswish_backward])(decompose_hardswish)\n"
             "make_fallback(aten.cummax)\n\n\n"
             "@lowering.register_lowering(aten.mm.default)\ndef lower_mm(a, b):\n    return a\n\n\n"
             "MINE = {}\n"  # a project's own table (registry=): not torch's, not reported
             "register_decomposition(aten.gelu, registry=MINE)(decompose_hardswish)\n")




def _unclaimed(where: str, name: str, how: str) -> str:
    return _lg001(where, name, "function taking an FX graph (annotated GraphModule), rewrites it"
                  f" ({how}) and nothing in the linted paths calls it or hands it on: what"
                  " installs it is outside them (its package proj is not linted whole)",
                  "post_grad")


def _api(where: str, name: str, how: str) -> str:
    return _lg001(where, name, "function taking an FX graph (annotated GraphModule), rewrites it"
                  f" ({how}) and nothing in the linted paths calls it or hands it on: an entry of"
                  " its package proj's API, or installed from outside the linted paths", "post_grad")


def _lowering(where: str, name: str, what: str, stage: str) -> str:
    what = what if what.endswith("a change") else f"{what} in torch's global table"
    what = what.replace("a change", "a change of torch's global table")
    return _lg001(where, name, f"{what}: every later compile lowers or decomposes that op so, lite"
                  " regions included, and no hook sees it", stage)


CASES = {
    # DeepSpeed's compile/passes linted alone: each public entry that rewrites the graph (itself
    # or through a step of the tree, the graph handed at any position) is reported; the steps
    # it calls and a function that only reads the graph are not
    "installer_outside_the_linted_part": (
        {**PACKAGE, "proj/compile/passes/zero.py": PASSES}, "proj/compile/passes",
        [_unclaimed("proj/compile/passes/zero.py:5:5", "proj.compile.passes.zero:add_reduce",
                    "through proj.compile.passes.zero:_reduce_bw, which assigns gm.graph"),
         _unclaimed("proj/compile/passes/zero.py:26:5", "proj.compile.passes.zero:offload",
                    "through proj.compile.passes.zero:_insert, which calls"
                    " gm.graph.inserting_after()")]),
    # a rewrite kept by a decorator of the linted part (a registry of memory policies a pass of
    # the tree dispatches to, torchtitan): its installer is in view, it is not reported
    "decorated_by_the_tree": (
        {**PACKAGE, "proj/compile/passes/registry.py":
            "POLICIES = {}\n\n\ndef _make(table):\n    def register(name):\n"
            "        def keep(fn):\n            table[name] = fn\n            return fn\n"
            "        return keep\n    return register\n\n\nregister_policy = _make(POLICIES)\n",
         "proj/compile/passes/policy.py": HEAD + "from .registry import register_policy\n\n\n"
            "@register_policy(\"full\")\ndef full_policy(gm: GraphModule) -> GraphModule:\n"
            "    gm.recompile()\n    return gm\n"}, "proj/compile/passes", []),
    # the same package linted whole: nothing in it runs them, so they are entries of its API
    # (or run from outside the linted paths): reported since round 10 (round 9 left them out)
    "package_linted_whole": (
        {**PACKAGE, "proj/compile/passes/zero.py": PASSES}, ".",
        [_api("proj/compile/passes/zero.py:5:5", "proj.compile.passes.zero:add_reduce",
              "through proj.compile.passes.zero:_reduce_bw, which assigns gm.graph"),
         _api("proj/compile/passes/zero.py:26:5", "proj.compile.passes.zero:offload",
              "through proj.compile.passes.zero:_insert, which calls gm.graph.inserting_after()")]),
    # the installer in the linted part, under an alias (``import ... as``), then calling it
    "installer_imports_it_under_an_alias": (
        {**PACKAGE, "proj/compile/passes/zero.py": PASSES,
         "proj/compile/passes/schedule.py": "from .zero import add_reduce as reduce_pass\n"
                                            "from .zero import offload\n\n\n"
                                            "def run(gm):\n    offload(gm, 0)\n"
                                            "    return reduce_pass(gm, 0, True)\n"},
         "proj/compile/passes", []),
    # DeepCompile: a patched AotAutograd.__init__ hands its keywords to a function that stores
    # a partitioner in them; the compilers stored beside it only compile
    "partition_fn_stored_into_passed_keywords": (
        {"patch.py": "import functools\n\n\n"
                     "def make_partitioner(fallback):\n"
                     "    def partition_and_tag(joint_module, joint_inputs, **kwargs):\n"
                     "        return fallback(joint_module, joint_inputs, **kwargs)\n"
                     "    return partition_and_tag\n\n\n"
                     "def _rewrite_kwargs(kwargs: dict) -> None:\n"
                     "    kwargs[\"fw_compiler\"] = functools.partial(kwargs[\"fw_compiler\"])\n"
                     "    kwargs[\"partition_fn\"] = make_partitioner(kwargs.get(\"partition_fn\"))\n"
                     "\n\n"
                     "def patch_aot():\n"
                     "    from torch._dynamo.backends.common import AotAutograd\n"
                     "    original = AotAutograd.__init__\n\n"
                     "    @functools.wraps(original)\n"
                     "    def patched(self, **kwargs):\n"
                     "        _rewrite_kwargs(kwargs)\n"
                     "        original(self, **kwargs)\n\n"
                     "    AotAutograd.__init__ = patched\n"}, ".",
        [_lg001("patch.py:12:30", "patch:make_partitioner.<locals>.partition_and_tag",
                "stored as kwargs['partition_fn'], the keywords aot_autograd /"
                " aot_module_simplified(partition_fn=...) is given", "aot")]),
    # a local dict of settings, not keywords a caller passes on: nothing flows anywhere
    "partition_fn_key_in_a_local_dict": (
        {"settings.py": "def describe(p):\n    options = {}\n    options[\"partition_fn\"] = p\n"
                        "    return options\n"}, ".", []),
    # torch's global lowering / decomposition / fallback tables changed from outside torch
    # (registry role lowering_registration): a decorator, a call of a call, a call, a module
    # attribute; named by the function registered, a fallback by its op
    "lowering_registrations": (
        {"lowerings.py": LOWERINGS}, ".",
        [_lowering("lowerings.py:9:2", "lowerings:lower_xlogy",
                   "registers lower_xlogy with register_lowering(aten.special_xlogy)", "lowering"),
         _lowering("lowerings.py:18:1", "lowerings:decompose_hardswish",
                   "registers decompose_hardswish with register_decomposition([...])", "post_grad"),
         _lowering("lowerings.py:19:1", "lowerings:make_fallback(aten.cummax)",
                   "calls make_fallback(aten.cummax), a change", "lowering"),
         _lowering("lowerings.py:22:2", "lowerings:lower_mm",
                   "registers lower_mm with register_lowering(aten.mm.default)", "lowering")]),
    # the same registrations in torch's own tree are torch's lowerings: not reported
    "lowering_registrations_inside_torch": (
        {"torch/__init__.py": "", "torch/_inductor/__init__.py": "",
         "torch/_inductor/mine.py": LOWERINGS}, ".", []),
}

@pytest.mark.parametrize("prefilter", [True, False], ids=["prefilter", "no-prefilter"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_each_round9_shape_is_exactly_its_findings(tmp_path, case, prefilter):
    files, target, expected = CASES[case]
    result = _check(tmp_path, files, prefilter, target)
    assert "LG900" not in result.stdout + result.stderr, result.stdout + result.stderr
    # a tree holding torch/ is checked as torch's: its registry entries the tree lacks are LG003
    lines = [line for line in result.stdout.splitlines() if " LG003 " not in line]
    assert lines == expected, result.stdout + result.stderr
    if not any(" LG003 " in line for line in result.stdout.splitlines()):
        assert result.returncode == (1 if expected else 0), result.stderr
