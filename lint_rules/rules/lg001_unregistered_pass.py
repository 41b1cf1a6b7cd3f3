"""LG001: a graph pass that no registry names, recognised by structure over the whole tree.

Three structures make something a pass, and the registry supplies the vocabulary of each:

* a concrete class deriving (through any chain of files, aliases and re-exports) from a
  ``[[base]]`` of role ``pass_class``;
* a call to an ``observer`` or ``pattern_pass`` base, whose name argument names the pass
  (resolved through constants and variables; the variable or owner when it cannot be);
* a value installed into a custom-pass hook (a ``kind = "custom_hook"`` entry's ``hook`` key)
  by any form: attribute, item, ``setattr``, ``config.patch``, a dict, ``options=``, a list.

Outside torch, more by effect: a concrete class whose ``__call__`` takes exactly one FX
graph (annotated so, or used so, itself or in the method it hands the graph to), whatever its
base: vllm-ascend's passes derive from a vLLM class the linted tree does not hold, managers
have no base at all; and a module-level function whose first parameter is an FX graph (annotated
so, or walked and rewritten as one, ``for n in gm.graph.nodes: n.replace_all_uses_with(...)``)
that the tree hands on as a value (a pass list, ``register(f)``, ``partial(f)``) or registers
with a decorator that keeps it (TensorRT's, DeepSpeed's and torchtitan's pass pipelines), or
that a module-level function of the project threads a graph through with other rewrites
(``gm = drop_casts(gm); gm = fold(gm)``: a pass pipeline of its own).
A value handed to a registry ``pass_argument`` (``aot_autograd(partition_fn=p)``, torch.fx's
``PassManager([p])`` / ``pm.add_pass(p)``) is a pass. What rewrites an FX graph (calls a
registry ``graph_mutation`` member) is a pass where it is: called with its graph by a compiler
(a value of a ``compiler_argument``: ``backend=``, ``@register_backend``, ``fw_compiler=``,
``inner_compile=``, or an instance of a class of the tree given so, its ``__call__``; the
compiler itself only when it rewrites the graph), a class kept by the
tree's own registering class decorator or applied by a runner (``for t in self.transforms:
t.run(gm)``), installed over another project's code at run time, or set on the entries of
torch's own pattern passes (``e.extra_check = f``), or a class implementing an abstract
method of an in-tree base (the tree's own transform interface). A graph function nothing in the
linted paths runs, or its package's ``__init__`` exports, is a pass too (an API entry). A pattern
registered into a pass dict the index cannot follow (a parameter) is reported too. A pass class whose pattern-pass name only its subclasses supply
(``super().__init__(config, "name")``) is a template: its subclasses are the passes.

Each is named by the identity the runtime guard checks: torch's own name inside torch,
``module:qualname`` anywhere else (for an instance, its class); an observer or pattern pass
outside torch is ``module:name`` (or ``module:variable`` when unnamed), ``module`` being the
code that builds and applies it (lite_compiler.custom_passes.applied_identity computes the same).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from lint_rules.examples import Example
from lint_rules.findings import Finding
from lint_rules.index import (MAX_ALIASES, MAX_ANCESTORS, Index, Unresolved, Vocabulary, is_config_module,
                              real_module, text_of)
from lint_rules.rule import IndexRule
from lite_guard.hints import one_line, pass_hint
from lite_guard.identity import is_qualified, is_torch_module, qualified_name
from lite_guard.registry import SHIPPED_DIR
from lite_guard.stages import guess_stage

_IMPORTS = ("from torch._inductor.custom_graph_pass import CustomGraphPass\n"
            "from torch._inductor.pattern_matcher import PatternMatcherPass\n"
            "from torch.fx.passes.graph_transform_observer import GraphTransformObserver\n"
            "from torch._inductor import config\n")
_M = "graph pass '{}' ({}) is not in any registry; register it: "


def _msg(name: str, form: str, stage: str, kind: str) -> str:
    return _M.format(name, form) + f'[[pass]] name = "{name}", stage = "{stage}", lite = "never",' \
        f' kind = "{kind}"'


class UnregisteredPass(IndexRule):
    CODE = "LG001"
    NAME = "unregistered-pass"
    DESCRIPTION = "graph pass that no registry names"
    HELP = ("A pass class, an observer or pattern pass, or a value installed into an Inductor or"
            " functorch custom-pass hook has no registry entry. Add the [[pass]] entry the message"
            " gives (its name is the identity the runtime guard checks) and say why it is or is"
            " not safe in lite mode.")
    MESSAGE = "graph pass '{name}' ({form}) is not in any registry; register it: {hint}"
    OUT_OF_RANGE = ("graph pass '{name}' ({form}) is registered only for torch \"{spec}\""
                    " ({origin}:{line}: '{entry}'), not for this tree's torch {version}, so it is"
                    " unregistered here; widen that entry's torch range if the pass is the"
                    " same in this release")

    VALID = [
        Example(_IMPORTS + 'GraphTransformObserver(gm, "remove_noop_ops").apply_graph_pass(f)',
                path="torch/_inductor/fx_passes/post_grad.py"),
        Example(_IMPORTS + 'p = PatternMatcherPass(pass_name="registered_pass")',
                path="torch/_inductor/fx_passes/example.py"),
        Example(_IMPORTS + 'class RegisteredGraphPass(CustomGraphPass):\n'
                '    def __call__(self, g):\n        pass\n    def uuid(self):\n        return 1'),
        Example(_IMPORTS + 'class Abstract(CustomGraphPass):\n    def uuid(self):\n        return 1'),
        Example('class NotAPass(SomethingElse):\n    def __call__(self, g):\n        pass'),
        Example(_IMPORTS + 'config.post_grad_custom_pre_pass = None'),
        Example(_IMPORTS + 'def registered_pass(g):\n    pass\n'
                'config.post_grad_custom_post_pass = registered_pass'),
        Example(_IMPORTS + 'class C:\n    def f(self, x):\n'
                '        self.post_grad_custom_post_pass = compute_detail(x)'),
        Example(_IMPORTS + 'config.post_grad_custom_post_pass = []'),
        Example(_IMPORTS + 'x = PatternMatcherPass()  # lite-guard: ignore[LG001]'),
        Example(_IMPORTS + 'x = PatternMatcherPass()  # noqa: LG001'),
        Example('class PatternMatcherPass:\n    pass\nx = PatternMatcherPass()'),  # not Inductor's
    ]
    INVALID = [
        # Outside torch an observed pass is qualified by the module that applies it (the runtime
        # guard names it so too), so it can never borrow the permission of a torch pass.
        Example(_IMPORTS + 'GraphTransformObserver(gm, "fuse_everything").apply_graph_pass(f)',
                line=5, message=_msg("example:fuse_everything", "GraphTransformObserver",
                                     "post_grad", "observer")),
        Example(_IMPORTS + 'GraphTransformObserver(gm, "remove_noop_ops").apply_graph_pass(f)',
                line=5, message=_msg("example:remove_noop_ops", "GraphTransformObserver",
                                     "post_grad", "observer")),
        Example(_IMPORTS + 'with GraphTransformObserver(gm, passname="fuse_everything"):\n    pass',
                path="torch/_inductor/fx_passes/post_grad.py",
                line=5, message=_msg("fuse_everything", "GraphTransformObserver", "post_grad",
                                     "observer")),
        Example(_IMPORTS + 'my_patterns = PatternMatcherPass()',
                line=5, message=_msg("example:my_patterns", "PatternMatcherPass without a name,"
                                     " known here by its variable; the runtime guard sees no"
                                     " name: give it one", "post_grad", "pattern")),
        Example(_IMPORTS + 'from torch._inductor.pattern_matcher import PatternMatcherPass as PMP\n'
                'class Fusion:\n    def __init__(self):\n        self.patterns = PMP()',
                line=8, message=_msg("example:Fusion.patterns", "PatternMatcherPass without a"
                                     " name, known here by its variable; the runtime guard sees"
                                     " no name: give it one", "post_grad", "pattern")),
        Example(_IMPORTS + 'NAME = "my_fusion"\np = PatternMatcherPass(pass_name=NAME)',
                line=6, message=_msg("example:my_fusion", "PatternMatcherPass", "post_grad",
                                     "pattern")),
        Example(_IMPORTS + 'class Fusion:\n    pass_name = "rms_fusion"\n    def __init__(self):\n'
                '        self.p = PatternMatcherPass(pass_name=self.pass_name)',
                line=8, message=_msg("example:rms_fusion", "PatternMatcherPass", "post_grad",
                                     "pattern")),
        Example(_IMPORTS + 'def make(name):\n    return PatternMatcherPass(pass_name=name)',
                line=6, message=_msg("example:make.name", "PatternMatcherPass; its name 'name' is"
                                     " not a constant, so it is known by its owner", "post_grad",
                                     "pattern")),
        Example(_IMPORTS + 'with GraphTransformObserver(gm, f"my_pass_{i}"):\n    pass',
                line=5, message=_msg("example:my_pass_*", "GraphTransformObserver", "post_grad",
                                     "observer")),
        Example(_IMPORTS + 'class MyPass(CustomGraphPass):\n    def __call__(self, g):\n'
                '        pass\n    def uuid(self):\n        return None',
                line=5, message=_msg("example:MyPass", "class deriving from CustomGraphPass",
                                     "post_grad", "class")),
        Example(_IMPORTS + 'import torch\nclass Base(torch._inductor.custom_graph_pass.CustomGraphPass):'
                '\n    def uuid(self):\n        return None\nclass Leaf(Base):\n'
                '    def __call__(self, g):\n        pass',
                line=9, message=_msg("example:Leaf", "class deriving from CustomGraphPass",
                                     "post_grad", "class")),
        Example(_IMPORTS + 'def my_pass(g):\n    pass\nconfig.joint_custom_post_pass = my_pass',
                line=7, message=_msg("example:my_pass", "installed in joint_custom_post_pass",
                                     "joint_graph", "function")),
        Example(_IMPORTS + 'def my_pass(g):\n    pass\n'
                'with config.patch(post_grad_custom_post_pass=my_pass):\n    pass',
                line=7, message=_msg("example:my_pass", "installed in post_grad_custom_post_pass",
                                     "post_grad", "function")),
        Example(_IMPORTS + 'def my_pass(g):\n    pass\n'
                'with config.patch({"joint_custom_pre_pass": my_pass}):\n    pass',
                line=7, message=_msg("example:my_pass", "installed in joint_custom_pre_pass",
                                     "joint_graph", "function")),
        Example(_IMPORTS + 'def fx_graph_cse(g):\n    pass\n'
                'torch.compile(fn, options={"post_grad_custom_post_pass": fx_graph_cse})',
                line=7, message=_msg("example:fx_graph_cse", "installed in"
                                     " post_grad_custom_post_pass", "post_grad", "function")),
        Example(_IMPORTS + 'def registered_pass(g):\n    pass\ndef my_pass(g):\n    pass\n'
                'config.post_grad_custom_post_pass = [registered_pass, my_pass]',
                line=9, message=_msg("example:my_pass", "installed in post_grad_custom_post_pass",
                                     "post_grad", "function")),
        Example(_IMPORTS + 'from mylib.passes import strip_mask as pass_fn\n'
                'inductor_config = {}\ninductor_config["post_grad_custom_post_pass"] = pass_fn',
                line=7, message=_msg("mylib.passes:strip_mask", "installed in"
                                     " post_grad_custom_post_pass", "post_grad", "function")),
        Example(_IMPORTS + 'def my_pass(g):\n    pass\ndef configure(inductor_config):\n'
                '    PASS_KEY = "post_grad_custom_post_pass"\n    inductor_config[PASS_KEY] = my_pass',
                line=9, message=_msg("example:my_pass", "installed in post_grad_custom_post_pass",
                                     "post_grad", "function")),
        # A factory's result is what it returns: an instance, named by its class.
        Example(_IMPORTS + 'class Strip:\n    def __call__(self, g):\n        return g\n'
                'def make_pass():\n    return Strip()\nconfig.post_grad_custom_post_pass = make_pass()',
                line=10, message=_msg("example:Strip", "installed in post_grad_custom_post_pass",
                                      "post_grad", "class")),
        # functools.partial(f, ...) is f (the runtime guard unwraps it the same way).
        Example(_IMPORTS + 'import functools\ndef my_pass(g, scale):\n    pass\n'
                'config.post_grad_custom_post_pass = functools.partial(my_pass, scale=2)',
                line=8, message=_msg("example:my_pass", "installed in post_grad_custom_post_pass",
                                     "post_grad", "function")),
        # A config the registry's inventory classifies as a custom hook, dict-valued.
        Example(_IMPORTS + 'def spyre_pass(g):\n    pass\n'
                'config.custom_backend_passes["spyre"] = spyre_pass',
                line=7, message=_msg("example:spyre_pass", "installed in custom_backend_passes",
                                     "post_grad", "function")),
        # What flows into a registry pass argument is a pass (a custom AOTAutograd partitioner);
        # a compiler argument's value compiles the graph: reported only where it rewrites it.
        Example(_IMPORTS + 'from torch._dynamo.backends.common import aot_autograd\n'
                'def part(joint, inputs, **kw):\n    return joint\n'
                'def fw(gm, inputs):\n    return gm.forward\n'
                'backend = aot_autograd(fw_compiler=fw, partition_fn=part)',
                line=10, message=_msg("example:part", "handed to aot_autograd(partition_fn=...)",
                                      "aot", "function")),
        # A partitioner stored into the keywords a caller passes on to AOTAutograd (DeepCompile's
        # patched AotAutograd.__init__); a lowering written into torch's global table.
        Example(_IMPORTS + 'def part(joint, inputs, **kw):\n    return joint\n'
                'def rewrite(kwargs):\n    kwargs["partition_fn"] = part',
                line=8, message=_msg("example:part", "stored as kwargs['partition_fn'], the keywords"
                                     " aot_autograd(partition_fn=...) is given", "aot", "function")),
        Example(_IMPORTS + 'from torch._inductor.lowering import make_fallback\n'
                'make_fallback(torch.ops.aten.cummax)',
                line=6, message=_msg("example:make_fallback(torch.ops.aten.cummax)",
                                     "calls make_fallback(torch.ops.aten.cummax), a change of"
                                     " torch's global table: every later compile lowers or"
                                     " decomposes that op so, lite regions included, and no hook"
                                     " sees it", "lowering", "function")),
        # A project's own pass pipeline (tt-torch's): a module-level function threading a graph
        # through two rewrites of the tree, graphs by the walk of their nodes they rewrite
        Example(_IMPORTS + 'def drop_casts(gm):\n    for node in gm.graph.nodes:\n'
                '        node.target = node.target\n    gm.graph.eliminate_dead_code()\n'
                'def fold(gm):\n    for node in gm.graph.nodes:\n'
                '        gm.graph.erase_node(node)\n    return gm\n'
                'def pipeline(module, inputs):\n    gm = trace(module)\n    gm = drop_casts(gm)\n'
                '    gm = fold(gm)\n    return gm',
                expect=tuple((line, _msg(
                    f"example:{name}", f"function taking an FX graph (walks gm.graph.nodes),"
                    f" rewrites it (calls {how}()) and the pipeline example:pipeline, threading a"
                    " graph through the tree's rewrites (g = f(g)), runs it with 1 other rewrite:"
                    " a pass of that pipeline, which no hook sees", "post_grad", "function"))
                    for line, name, how in ((5, "drop_casts", "gm.graph.eliminate_dead_code"),
                                            (9, "fold", "gm.graph.erase_node")))),
        Example(_IMPORTS + 'def install(p):\n    setattr(config, "post_grad_custom_post_pass", p)',
                line=6, message=_msg("example:install.p", "installed in post_grad_custom_post_pass;"
                                     " the value 'p' cannot be resolved statically, register what"
                                     " flows in", "post_grad", "function")),
    ]

    @classmethod
    def triggers(cls, registry: Any) -> tuple[bytes, ...]:
        # Every file is summarized for the index, but a file with none of these bytes cannot
        # hold a site of this rule, so its summary is light (lint_rules.index). All registry data:
        # base class names, naming keywords (pass_name=), hook keys.
        vocab = Vocabulary.from_registry(registry)
        names = [n.rsplit(":", 1)[-1].rsplit(".", 1)[-1] for n in vocab.bases]
        # (the words of pass / compiler arguments, partition_fn= or PassManager, matter outside
        # torch only: Vocabulary.may_hand_arguments, not here, so torch's own files stay light)
        return tuple(n.encode() for n in (*names, *vocab.name_keywords, *vocab.hooks) if n)

    @classmethod
    def check(cls, index: Index, registry: Any) -> tuple[list[Finding], set[str]]:
        return _Check(index, registry).run()


class _Check:
    def __init__(self, index: Index, registry: Any) -> None:
        self.index, self.registry = index, registry
        self.findings: list[Finding] = []
        self.names: set[str] = set()
        self.classes: set[str] = set()  # identities of pass classes found at their definition
        self.reported: set[tuple[str, int, str, str]] = set()
        self.templates: set[str] = set()  # pass classes whose subclasses name their pass
        self.compilers: dict[tuple[str, str], str] = {}  # (module, function) -> where it is given

    def run(self) -> tuple[list[Finding], set[str]]:
        for module, summary in self.index.modules.items():
            self._classes(module, summary)
        for module, summary in self.index.modules.items():
            for site in summary["sites"]:
                if site["t"] == "ctor":
                    self._constructor(module, site)
                elif site["t"] == "hook":
                    self._hook(module, site)
                elif site["t"] == "reg":
                    self._registration(module, site)
                elif site["t"] == "dyn":
                    self._store(module, site)
                elif site["t"] == "patch":
                    self._patch(module, site)
                elif site["t"] == "arg":
                    self._argument(module, site)
        self._listed_with_passes()
        self._graph_functions()
        self._compiled_rewrites()
        self._pipelines()
        self._producers()
        self._registered_rewriting_classes()
        self._run_by_runners()
        self._interface_implementations()
        # A base read from disk outside the linted paths may build the pass whose name a linted
        # subclass passes to super().__init__: reported at the subclass, never at the base.
        for module, summary in list(self.index.siblings.items()):
            for site in summary["sites"]:
                if site["t"] == "ctor":
                    self._constructor(module, site, outside=True)
        self._ask_for_subclasses_of_siblings()
        self._too_deep()
        # vLLM's VllmFusionPatternMatcherPass(config, pass_name): never a pass of its own.
        self.findings = [f for f in self.findings
                         if not (f.name in self.templates and f.name in self.classes)]
        return self.findings, self.names

    def _graph_functions(self) -> None:
        """Outside torch, a module-level function whose first parameter is an FX graph is a pass
        when the tree hands it on as a value (a pass list, a registry, ``register(f)``,
        ``partial(f)``) or registers it with a decorator of its own: whatever receives it runs it
        on graphs. Called only is a helper of some other pass, and is not reported. A function
        already installed in a hook is reported there."""
        index = self.index
        targets: dict[str, list[tuple[str, str]]] = {}
        for module, summary in index.modules.items():
            for name in summary.get("graph_fns") or {}:
                targets.setdefault(name, []).append((module, name))
        if not targets:
            return
        handed: dict[tuple[str, str], str] = {}  # (module, function) -> where it is handed on
        stubs = []
        for module, summary in index.modules.items():
            values = summary.get("handed")
            if values is None:
                if type(summary) is not dict:
                    stubs.append((module, summary))
                continue
            for leaf, defined in targets.items():
                if leaf not in values:
                    continue
                for text in values.get(leaf, ()):
                    if text.startswith("from:"):  # imported inside a function
                        key, text = _imported_inside(module, summary, text), leaf
                    else:
                        ref = index.resolve_name(module, "", text, "")
                        key = (real_module(ref[1]), ref[2]) if ref[0] == "func" \
                            and isinstance(ref[2], str) else None
                    owners = (summary.get("handed_in") or {}).get(leaf)
                    if owners and all(index.identity(module, o) in self.classes for o in owners):
                        # handed on only by the code of a class reported as a pass (torch_mcpu's
                        # uuid() hashing its steps' source): part of that pass, which the guard
                        # sees run; not a pass of its own
                        continue
                    for target in defined:
                        if key == (real_module(target[0]), target[1]) and target not in handed:
                            handed[target] = f"handed on as '{text}' in {real_module(module)}"
        # A registry of the tree hands what its decorator keeps a graph; one that never names
        # it (MQBench's deploy_qparams_*, which edit an ONNX file) does nothing to the graph:
        # not a pass. A no-op body is (the guard sees it run).
        decorated = {(module, name): self._registering_decorator(module, entry[3])
                     if not (len(entry) > 5 and entry[5]) else ""
                     for module, summary in index.modules.items()
                     for name, entry in (summary.get("graph_fns") or {}).items()}
        # A graph function not yet seen handed on may be handed on in a file not parsed yet: ask
        # the stubs of its own top-level package (a project hands on its own passes) for its
        # name; one that holds it is parsed and the index built again (prefilter demand).
        open_names: dict[str, set[bytes]] = {}
        for (module, name), by_decorator in decorated.items():
            if not by_decorator and (module, name) not in handed and ".<locals>." not in name:
                open_names.setdefault(real_module(module).split(".", 1)[0], set()).add(
                    name.encode("utf-8", "surrogateescape"))
        for module, summary in stubs if open_names else ():
            words = open_names.get(real_module(module).split(".", 1)[0])
            if words:
                summary["handed"].ask_words(frozenset(words))
        for module, summary in index.modules.items():
            for name, (line, col, evidence, *_) in (summary.get("graph_fns") or {}).items():
                # the decorator first: it is known without the files that hand the function on
                where = decorated[(module, name)] or handed.get((module, name))
                identity = index.identity(module, name)
                if not where and identity not in self.names:
                    where = self._unclaimed_rewrite(module, name)
                if not where or identity in self.names:
                    continue
                self._found(module, line, col, identity,
                            f"function taking an FX graph ({evidence}), {where}", "function",
                            guess_stage(real_module(module), name))

    def _unclaimed_rewrite(self, module: str, name: str) -> str:
        """A graph function that rewrites its graph (itself, or through a function of the tree
        it hands the graph to, three calls deep) when nothing in the linted paths calls it,
        imports it or hands it on: what installs it is outside them (DeepSpeed's
        ``compile/passes`` linted alone), or it is an entry of its package's API that its users
        run (ColossalAI's split passes, the package linted whole); the lint cannot see that it
        is not a pass, so it is reported by its effect. One its package's ``__init__`` re-exports
        is that API's pass even when the tree also calls it; a closure a factory returns is
        handed to the factory's caller. Not reported: a compiler (``backend=f``), a step some
        function calls, a function decorated by one of the tree (its decorator installs it, in
        view). Says why it is a pass, or ""."""
        index = self.index
        package = real_module(module).split(".", 1)[0]
        if (module, name) in self.compilers:
            return ""
        for decorator in (index.modules[module].get("graph_fns") or {})[name][3]:
            ref = index.expr_ref(module, "", decorator[1] if decorator[0] == "call" else decorator, "")
            if ref[0] in ("func", "value", "class", "instance") and isinstance(ref[1], str) \
                    and index.in_tree(ref[1]):
                return ""  # @register_memory_policy("full"): what installs it is in view
        target = f"{real_module(module)}:{name}"
        # A package's __init__ importing it exports it (ColossalAI's fx.passes): the package's
        # API, run on graphs its users hand it, whoever else in the tree calls it.
        exporter = next((m for m, summary in index.modules.items() if type(summary) is dict
                         and summary.get("package") and m != module
                         and target in summary["imports"].values()), None)
        for summary in () if exporter else index.modules.values():
            if type(summary) is not dict:
                if name in summary["called"]:  # a stub: asks its file for the word
                    return ""
            elif target in summary["imports"].values() or (
                    name in (summary.get("called") or ()) and self._calls_it(summary, module, name)):
                return ""
        if ".<locals>." in name:
            factory = name.split(".<locals>.", 1)[0]
            why = (f"and its factory {index.identity(module, factory)} returns it: a transform"
                   " built for whoever calls the factory")
        elif exporter:
            why = (f"and its package {real_module(exporter)} exports it: an entry of that API,"
                   " run on the graphs its users hand it")
        elif index.in_tree(package):
            why = ("and nothing in the linted paths calls it or hands it on: an entry of its"
                   f" package {package}'s API, or installed from outside the linted paths")
        else:
            why = ("and nothing in the linted paths calls it or hands it on: what installs it is"
                   f" outside them (its package {package} is not linted whole)")
        how = self._how_rewritten(module, name)
        return f"rewrites it ({how}) {why}" if how else ""

    def _how_rewritten(self, module: str, name: str) -> str:
        """How a graph function rewrites its graph: itself (``calls gm.graph.erase_node()``),
        through a function of the tree it hands the graph to (three calls deep), or by running
        a pass class of the tree on it; "" when it does not."""
        index = self.index
        seen: set[tuple[str, str]] = set()
        todo = [(module, name, 0)]
        while todo:
            at, qualname, depth = todo.pop()
            if (at, qualname) in seen or depth > 3:
                continue
            seen.add((at, qualname))
            summary = index.modules.get(at) or {}
            entry = (summary.get("graph_fns") or {}).get(qualname)
            helper = (summary.get("rewriters") or {}).get(qualname)
            rewrite, callees = (entry[4][0], entry[4][1]) if entry is not None and len(entry) > 4 \
                else (helper[0] if helper else "", [])
            if rewrite:
                how = _calls(rewrite)
                return how if depth == 0 else f"through {index.identity(at, qualname)}, which {how}"
            for callee in callees:
                ref = index.expr_ref(at, qualname, callee, "")
                if ref[0] == "func" and isinstance(ref[2], str) and index.in_tree(ref[1]):
                    todo.append((ref[1], ref[2], depth + 1))
                elif ref[0] == "class" and isinstance(ref[2], str) \
                        and index.identity(ref[1], ref[2]) in self.classes:
                    # remove_asserts(ep): RemoveAssertsTransform()(ep.graph_module), a pass
                    # class of the tree run on the graph it is handed
                    how = f"runs the pass {index.identity(ref[1], ref[2])} on it"
                    return how if depth == 0 else f"through {index.identity(at, qualname)}, which {how}"
        return ""

    def _pipelines(self) -> None:
        """A module-level function threading one graph through two or more graph functions of
        the tree that rewrite it (``gm = bypass_cast(gm); gm = fold(gm)``: tt-torch's pass pipeline, run by
        its backend) is a pass pipeline of the project's own: each of those rewrites is a pass
        of it, which no hook sees, reported where it is defined. Not when the function is a pass
        itself (MASE's ``quantize_transform_pass``, threading its graph through its steps) or a
        graph function that rewrites the graph it is handed, nor for a callee that only reads,
        or that is reported already. A method (a test case's ``m = prepare(m); m = convert(m)``)
        is not read: a project's pipeline is a function of its package."""
        index = self.index
        for module, summary in list(index.modules.items()):
            for qualname, calls in (summary.get("pipelines") or {}).items():
                pipeline = index.identity(module, qualname)
                if pipeline in self.names or (
                        qualname in (summary.get("graph_fns") or {})
                        and self._how_rewritten(module, qualname)):
                    # a pass itself, or a graph function rewriting the graph it is handed
                    # (torchao's convert_pt2e, an entry of its API): what it threads its
                    # graph through are its steps
                    continue
                rewrites = {}
                for callee, _, _ in calls:
                    ref = index.expr_ref(module, qualname, callee, "")
                    if ref[0] != "func" or not isinstance(ref[2], str) or not index.in_tree(ref[1]):
                        continue
                    entry = ((index.modules.get(ref[1]) or {}).get("graph_fns") or {}).get(ref[2])
                    how = self._how_rewritten(ref[1], ref[2]) if entry is not None else ""
                    if how:
                        rewrites[(ref[1], ref[2])] = (entry, how)
                if len(rewrites) < 2:
                    continue
                for (at, name), (entry, how) in rewrites.items():
                    identity = index.identity(at, name)
                    if identity in self.names:
                        continue
                    self._found(at, entry[0], entry[1], identity,
                                f"function taking an FX graph ({entry[2]}), rewrites it ({how}) and"
                                f" the pipeline {pipeline}, threading a graph through the tree's"
                                f" rewrites (g = f(g)), runs it with {len(rewrites) - 1} other"
                                f" rewrite{'s' if len(rewrites) > 2 else ''}: a pass of that"
                                " pipeline, which no hook sees", "function",
                                guess_stage(real_module(at), name))

    def _producers(self) -> None:
        """A function annotated to return an FX graph that it builds itself (no parameter is a
        graph: it traces or exports a module; experimental-experiment's ``CustomTracer.trace``
        returning ``torch.fx.Graph``, AIMET's ``prepare_model`` returning the GraphModule it
        traced) runs each rewrite of the tree it hands that graph to on every graph it produces:
        a pass of that producer, which no hook sees, reported where it is defined. The rewrite
        is a graph function of the tree (``_how_rewritten``) or a method of the producer's own
        class (``self.remove_inplace(graph)``, ``cls.fold(graph)``) that rewrites the graph it
        takes. A call that only reads, or a producer that is a pass itself, adds nothing."""
        index = self.index
        for module, summary in list(index.modules.items()):
            for qualname, calls in (summary.get("producers") or {}).items():
                producer = index.identity(module, qualname)
                if producer in self.names:
                    continue
                owner = qualname.rpartition(".")[0]
                klass = owner if owner in summary["classes"] else ""
                for callee, _, _ in calls:
                    found = self._produced_rewrite(module, qualname, klass, callee)
                    if found is None:
                        continue
                    at, name, (line, col, evidence), how = found
                    identity = index.identity(at, name)
                    if identity in self.names:
                        continue
                    traced = (summary.get("traced") or {}).get(qualname)
                    builds = f"which builds a graph itself ({traced})" if traced else \
                        "which returns a graph it builds itself"
                    self._found(at, line, col, identity,
                                f"function taking an FX graph ({evidence}), rewrites it ({how})"
                                f" and the graph producer {producer}, {builds}, runs it on each"
                                " graph it builds: a pass of that producer, which no hook sees",
                                "function", guess_stage(real_module(at), name))

    def _produced_rewrite(self, module: str, qualname: str, klass: str, callee: list
                          ) -> tuple[str, str, tuple, str] | None:
        """(module, qualname, (line, col, evidence), how) of the rewrite a producer's call
        runs: a method of its own class (or an in-tree ancestor) for ``self.m`` / ``cls.m``,
        else the function of the tree the callee resolves to; None if it does not rewrite."""
        index = self.index
        head, _, method = callee[1].partition(".") if callee[0] == "n" else ("", "", "")
        if klass and head in ("self", "cls") and method and "." not in method:
            for ref in [("class", module, klass), *index.ancestors(module, klass)[0]]:
                info = index.class_info(ref[1], ref[2]) if ref[0] == "class" else None
                if info is None or not isinstance(ref[2], str) or not index.in_tree(ref[1]):
                    continue
                entry = (info.get("graph_effects") or {}).get(method)
                if entry is not None and entry[3] and entry[2] \
                        and method not in info["abstract"]:
                    return (ref[1], f"{ref[2]}.{method}", (entry[0], entry[1], entry[2]),
                            _calls(entry[3]))
                if method in info["methods"]:
                    return None  # the nearest definition does not rewrite
            return None
        ref = index.expr_ref(module, qualname, callee, klass)
        if ref[0] != "func" or not isinstance(ref[2], str) or not index.in_tree(ref[1]):
            return None
        found = self._rewrite_of(ref[1], ref[2])
        return (ref[1], ref[2], *found) if found else None

    def _calls_it(self, summary: dict, module: str, name: str) -> bool:
        """Whether a parsed module calling ``name`` may call the function of that name in
        ``module``: not when the name resolves there to another module's function (ColossalAI's
        two ``solution_annotation_pass``), a word alone answering yes."""
        ref = self.index.resolve_name(summary["module"], "", name, "")
        return not (ref[0] == "func" and isinstance(ref[1], str) and ref[1] != module
                    and self.index.in_tree(ref[1]))

    # ---- values handed to a pass or compiler argument ---------------------------------------
    def _argument_rows(self, module: str, site: dict) -> tuple[str, tuple]:
        """The registry rows (role, keyword, position) of the callable a site calls, by what it
        resolves to (``aot_autograd`` through imports and aliases, ``pm.add_pass`` through the
        class of ``pm``), and that callable's display name."""
        index = self.index
        if site.get("kwdict"):  # kwargs["partition_fn"] = p: each callable taking that keyword
            found = {name: tuple(r for r in rows if r[1] == site["kwdict"])
                     for name, rows in index.vocab.arguments.items()}
            found = {name: rows for name, rows in found.items() if rows}
            roles = {row[0] for rows in found.values() for row in rows}
            if len(roles) != 1:
                return "", ()
            names = sorted(name.rsplit(":", 1)[-1] for name in found)
            return " / ".join(names), next(iter(found.values()))
        ref = index.expr_ref(module, site["scope"], site["callee"], site["class"])
        dotted = _ref_dotted(ref)
        callee = site["callee"]
        if dotted is None and callee[0] == "n" and "." in callee[1]:
            # pm.add_pass(p), pm = PassManager(...): the method of the class pm is an instance of
            head, _, attr = callee[1].rpartition(".")
            for value in index.values(module, site["scope"], ["n", head], site["class"]):
                if not isinstance(value, Unresolved) and value[0] == "instance":
                    dotted = f"{_ref_dotted(('ext', value[1], value[2]))}.{attr}"
                    break
        for name, rows in index.vocab.arguments.items():
            if name.replace(":", ".") == dotted:
                return name, rows
        return "", ()

    def _argument(self, module: str, site: dict) -> None:
        """``aot_autograd(partition_fn=p)``, ``PassManager([p])``, ``pm.add_pass(p)``: what flows
        into a registry ``pass_argument`` runs on the FX graph, a pass, reported here (a class
        or function, named by its identity; one the lint cannot resolve, by the owner and the
        text). What flows into a ``compiler_argument`` (``backend=``, ``fw_compiler=``,
        ``inner_compile=``, ``@register_backend``) compiles the graph: kept for
        ``_compiled_rewrites``."""
        index = self.index
        row_name, rows = self._argument_rows(module, site)
        callee = row_name.rsplit(":", 1)[-1]
        for role, keyword, position, stage in rows:
            given = site["kw"].get(keyword) if keyword else None
            key = keyword
            if given is None and 0 <= position < len(site["args"]):
                given, key = site["args"][position], str(position)
            if given is None and site.get("decorated") and position == 0:
                # @register_backend def b: b is compiler_fn (the argument it takes first). A def
                # decorated by torch.compile is the model's code, not a backend.
                given = ["n", site["decorated"]]
            if given is None:
                continue
            line, col = site["pos"].get(key, [site["line"], site["col"]]) \
                if not site.get("decorated") else (site["line"], site["col"])
            values = list(index.values(module, site["scope"], given, site["class"]))
            if role == "compiler_argument":
                for value in values:
                    if isinstance(value, Unresolved):
                        continue
                    if value[0] == "func":
                        self.compilers.setdefault((value[1], value[2]),
                                                  f"{callee}({keyword or position}=...)")
                    elif value[0] == "instance" and isinstance(value[2], str) \
                            and index.in_tree(value[1]):
                        # an instance of a class of the tree: its __call__ compiles
                        self.compilers.setdefault((value[1], f"{value[2]}.__call__"),
                                                  f"{callee}({keyword or position}=...)")
                continue
            form = f"handed to {callee}({keyword or position}=...)"
            if site.get("kwdict"):  # kwargs["partition_fn"] = p, kwargs a caller passes on
                form = f"stored as {site['callee'][1]}, the keywords {callee}({keyword}=...) is given"
            stage = stage or guess_stage(row_name.partition(":")[0])
            for value in values:
                if isinstance(value, Unresolved):
                    owner = _owner(site)
                    name = qualified_name(real_module(module),
                                          f"{owner}.{value.text}" if owner else value.text)
                    self._found(module, line, col, name, f"{form}; the value '{value.text}' cannot"
                                " be resolved statically, register what flows in", "function", stage)
                    continue
                if value[0] in ("str", "glob"):
                    continue
                name = index.ref_identity(value)
                if name is None:
                    continue
                if name in self.classes:
                    self.names.add(name)
                    continue
                kind = "class" if value[0] in ("class", "instance") else "function"
                self._found(module, line, col, name, form, kind, stage)

    def _compiled_rewrites(self) -> None:
        """A compiler (a function handed to a ``compiler_argument``: a torch.compile backend,
        an ``inner_compile=`` adaptor, an AOTAutograd ``fw_compiler``) compiles the graph it is
        given: not a pass. But a graph function it calls with that graph which rewrites it
        (TensorRT-LLM's ``recover_pass(gm)``), or the compiler's own rewriting of it, is a
        pass that no hook sees: reported where the rewriting function is defined."""
        index = self.index
        instances: set[tuple[str, str]] = set()
        for (module, qualname), installed in list(self.compilers.items()):
            effects = (index.modules.get(module) or {}).get("graph_effects") or {}
            entry = effects.get(qualname)
            if entry is None and qualname.endswith(".__call__"):  # a compiler instance's class
                info = index.class_info(module, qualname.rsplit(".", 1)[0])
                entry = ((info or {}).get("graph_effects") or {}).get("__call__")
                instances.add((module, qualname))  # what it calls is followed, no more
            if entry is None:
                continue
            line, col, _, rewrite, calls = entry[:5]
            compiler = index.identity(module, qualname)
            if rewrite and (module, qualname) not in instances:
                self._found(module, line, col, compiler,
                            f"compiler given to {installed} that rewrites the graph it compiles"
                            f" ({_calls(rewrite)})", "function",
                            guess_stage(real_module(module), qualname))
            for callee, _, _ in calls:
                ref = index.expr_ref(module, qualname, callee, "")
                if ref[0] != "func" or not index.in_tree(ref[1]) or not isinstance(ref[2], str):
                    continue
                target = (index.modules.get(ref[1]) or {}).get("graph_effects", {}).get(ref[2])
                name = index.identity(ref[1], ref[2])
                if target is None or name in self.names:
                    continue  # not a graph function; or found already (another compiler, a hook)
                if target[3]:
                    self._found(ref[1], target[0], target[1], name,
                                f"function rewriting an FX graph ({_calls(target[3])}), called with"
                                f" the graph by the compiler '{compiler}' given to {installed}",
                                "function", guess_stage(real_module(ref[1]), ref[2]))
                else:
                    self._compiler_pipeline(ref[1], ref[2], target, compiler, installed)

    def _compiler_pipeline(self, module: str, qualname: str, entry: list, compiler: str,
                           installed: str) -> None:
        """A function a compiler calls with its graph that does not rewrite it itself but hands
        it to rewrites of the tree (kernl's ``dynamo_backend_ofi(gm)``: ``normalize_operators(gm);
        remove_dropout(gm); ...``, run by the compiler it gives ``torchdynamo.optimize``): with
        two or more such rewrites it is the compiler's pass pipeline, and each rewrite it runs
        is a pass (itself, or through a function of the tree it hands the graph to: kernl's
        ``fuse_attention_pattern_1(gm)`` through its ``replace_pattern``), which no hook sees;
        with one, it is that rewrite's wrapper, the pass itself."""
        index = self.index
        steps: dict[tuple[str, str], tuple[list, str]] = {}
        for callee, _, _ in entry[4]:
            ref = index.expr_ref(module, qualname, callee, "")
            if ref[0] != "func" or not index.in_tree(ref[1]) or not isinstance(ref[2], str) \
                    or (ref[1], ref[2]) in steps or (ref[1], ref[2]) == (module, qualname):
                continue
            found = self._rewrite_of(ref[1], ref[2])
            if found is not None:
                steps[(ref[1], ref[2])] = found
        pipeline = index.identity(module, qualname)
        if len(steps) == 1:
            (at, name), ((line, col, evidence), how) = next(iter(steps.items()))
            steps = {(module, qualname): ((entry[0], entry[1], entry[2]),
                                          f"through {index.identity(at, name)}, which {how}")}
        for (at, name), ((line, col, evidence), how) in steps.items():
            identity = index.identity(at, name)
            if identity in self.names:
                continue
            why = (f"called with the graph by the compiler '{compiler}' given to {installed}"
                   if (at, name) == (module, qualname) else
                   f"and the pipeline {pipeline}, which the compiler '{compiler}' given to"
                   f" {installed} calls with its graph, runs it with {len(steps) - 1} other"
                   f" rewrite{'s' if len(steps) > 2 else ''}: a pass of that pipeline, which no"
                   " hook sees")
            self._found(at, line, col, identity,
                        f"function taking an FX graph ({evidence or 'called with it'}), rewrites"
                        f" it ({how}) {why}", "function", guess_stage(real_module(at), name))

    def _rewrite_of(self, module: str, qualname: str) -> tuple[tuple, str] | None:
        """((line, col, evidence), how) of a function of the tree that rewrites the graph it is
        handed, itself or through the tree's functions (``_how_rewritten``); None if it does
        not."""
        summary = self.index.modules.get(module) or {}
        entry = (summary.get("graph_fns") or {}).get(qualname)
        if entry is not None:
            how = self._how_rewritten(module, qualname)
            return ((entry[0], entry[1], entry[2]), how) if how else None
        effects = (summary.get("graph_effects") or {}).get(qualname)
        if effects is not None and effects[3]:
            return (effects[0], effects[1], effects[2]), _calls(effects[3])
        return None

    def _rewriting_method(self, module: str, qualname: str, only: str = "",
                          annotated: bool = False) -> tuple[str, str] | None:
        """(method, member it calls) of the first method of this class, or of an in-tree
        ancestor, that takes an FX graph (after ``self``) and rewrites it; None if none does.
        ``only``: that method alone (the one a runner calls). ``annotated``: its graph
        parameter not annotated as another type (an ONNX model, ``model: onnx_ir.Model``, has a
        ``model.graph`` used like an FX one; brevitas's ``GraphModule`` re-exported by a module
        outside the tree is a graph type by its name, and the method's use of it)."""
        index = self.index
        for ref in [("class", module, qualname), *index.ancestors(module, qualname)[0]]:
            info = index.class_info(ref[1], ref[2]) if ref[0] == "class" else None
            if info is None:
                continue
            for method, entry in (info.get("graph_effects") or {}).items():
                if (not only or method == only) and entry[3] and entry[2] \
                        and method not in info["abstract"] \
                        and (not annotated or entry[2].startswith("annotated") or len(entry) < 7
                             or not entry[6] or entry[6] in index.vocab.graph_names):
                    return method, entry[3]
            if only and only in info["methods"]:
                return None  # the nearest definition of that method does not rewrite
        return None

    def _registered_rewriting_classes(self) -> None:
        """``@TransformRegistry.register("fuse_gemms") class FuseGemms(BaseTransform)`` whose
        ``_apply(self, gm, ...)`` rewrites the graph (TensorRT-LLM auto_deploy): the decorator
        is the tree's own and hands back what it is given, so it keeps the class in a registry
        that a runner instantiates and applies; a class that rewrites an FX graph, kept so, is
        a pass (its base and its ``__call__`` signature notwithstanding)."""
        index = self.index
        for module, summary in index.modules.items():
            if is_torch_module(real_module(module)):
                continue
            for qualname, klass in summary["classes"].items():
                if not klass.get("decorators"):
                    continue
                name = index.identity(module, qualname, _registered_as(klass))
                if name in self.classes or index.identity(module, qualname) in self.classes:
                    continue
                where = self._registering_decorator(module, klass["decorators"])
                found = self._rewriting_method(module, qualname) if where else None
                if found is None or not index.is_concrete(module, qualname, called=False):
                    continue
                self.classes.add(name)
                self._found(module, klass["line"], klass["col"], name,
                            f"class {where}, whose {found[0]} rewrites an FX graph"
                            f" ({_calls(found[1])})", "class", guess_stage(real_module(module), qualname))

    def _interface_implementations(self) -> None:
        """``class MergeBatchNorm(UntilFixedPointGraphTransform)`` implementing the abstract
        ``is_converged(self, graph_model: GraphModule)`` its in-tree base declares, by rewriting
        that graph (brevitas's graph transforms): the base is the tree's own transform
        interface, whatever it is called, and what implements it with a rewrite of an FX graph
        is a pass (its own method or one inherited from a concrete ancestor, the nearest
        definition deciding)."""
        index = self.index
        for module, summary in index.modules.items():
            if is_torch_module(real_module(module)):
                continue
            for qualname, klass in summary["classes"].items():
                if not klass["bases"]:
                    continue
                name = index.identity(module, qualname)
                if name in self.classes:
                    continue
                declared = []
                for ref in index.ancestors(module, qualname)[0]:
                    info = index.class_info(ref[1], ref[2]) if ref[0] == "class" else None
                    if info is not None and index.in_tree(ref[1]):
                        declared += [(m, ref[2]) for m in info["abstract"] if m not in declared]
                for method, base in declared:
                    found = self._rewriting_method(module, qualname, method, annotated=True)
                    if found is None or not index.is_concrete(module, qualname):
                        continue
                    self.classes.add(name)
                    self._found(module, klass["line"], klass["col"], name,
                                f"class implementing {base}.{method}, an abstract method of a base"
                                f" of the tree, with a rewrite of an FX graph ({_calls(found[1])})",
                                "class", guess_stage(real_module(module), qualname))
                    break

    def _run_by_runners(self) -> None:
        """``for t in self.transforms: t.run(gm)`` in a function or method that takes an FX
        graph: each element is an instance whose ``run`` is called with the graph; when that
        method rewrites it, its class is a pass (reported at the class)."""
        index = self.index
        for module, summary in index.modules.items():
            if is_torch_module(real_module(module)):
                continue
            owners = [("", name, entry) for name, entry in (summary.get("graph_effects") or {}).items()]
            owners += [(qualname, f"{qualname}.{method}", entry)
                       for qualname, klass in summary["classes"].items()
                       for method, entry in (klass.get("graph_effects") or {}).items()]
            for klass, scope, entry in owners:
                for callee, _, _ in entry[4]:
                    if callee[0] != "each":
                        continue
                    for value in index.values(module, scope, callee[1], klass):
                        if isinstance(value, Unresolved) or value[0] not in ("instance", "class") \
                                or not index.in_tree(value[1]):
                            continue
                        found = self._rewriting_method(value[1], value[2], callee[2])
                        name = index.identity(value[1], value[2])
                        info = index.class_info(value[1], value[2])
                        if found is None or info is None or name in self.classes:
                            continue
                        self.classes.add(name)
                        self._found(value[1], info["line"], info["col"], name,
                                    f"class whose {found[0]} rewrites an FX graph (calls"
                                    f" {found[1]}()), called with the graph by"
                                    f" '{index.identity(module, scope)}'", "class",
                                    guess_stage(real_module(value[1]), value[2]))

    def _registering_decorator(self, module: str, decorators: list) -> str:
        """``@_aten_lowering_pass`` / ``@register("x")``: a decorator the tree defines that
        hands back the function it is given (so it registers it; a wrapper returns a new
        function, and ``functools.wraps`` or ``torch.no_grad`` are not the tree's)."""
        for decorator in decorators:
            callee = decorator[1] if decorator[0] == "call" else decorator
            if callee[0] != "n":
                continue
            ref = self.index.resolve_name(module, "", callee[1], "")
            if ref[0] == "func" and self.index.in_tree(ref[1]) and isinstance(ref[2], str) \
                    and ref[2] in (self.index.modules.get(ref[1], {}).get("registrars") or ()):
                return f"registered by its decorator @{callee[1]}"
        return ""

    def _ask_for_subclasses_of_siblings(self) -> None:
        """A pass base read from disk outside the linted paths (Index.siblings) is not part of
        the prefilter's closure, so a linted file that only names it may be a stub: asking every
        module whether it defines a class of that name makes such a stub parsed, and the index
        is built again (lint_rules.prefilter's demand). A parsed file answers for free."""
        index = self.index
        for module, summary in list(index.siblings.items()):
            for qualname in list(summary["classes"]):
                if "." in qualname or not (index.pass_base(module, qualname)
                                           or self._graph_evidence(module, qualname)):
                    continue
                for tree_summary in index.modules.values():
                    qualname in tree_summary["classes"]  # noqa: B015 (the question is the point)

    def _too_deep(self) -> None:
        """A class hierarchy deeper than the index reads (``MAX_ANCESTORS``: only hostile input
        has one) is one LG900 per file, at its first such class: not checked, never skipped."""
        for module, name in self.index.too_long.items():
            if module in self.index.paths:
                self.findings.append(Finding(
                    self.index.paths[module], 1, 1, "LG900",
                    f"name '{name}' is an alias or re-export more than {MAX_ALIASES} deep; it was not"
                    " followed further, so a class or pass named through it was not checked"
                    " (shorten the chain)"))
        for module, qualname in self.index.too_deep.items():
            if module not in self.index.paths:
                continue  # a module read from outside the linted paths: never reported on
            klass = self.index.class_info(module, qualname) or {}
            self.findings.append(Finding(
                self.index.paths[module], klass.get("line", 1), klass.get("col", 1), "LG900",
                f"class '{qualname}' has more than {MAX_ANCESTORS} ancestors; its hierarchy was"
                " not read further, so it and its subclasses were not checked (shorten the chain)"))

    # ---- pass classes --------------------------------------------------------------------
    def _classes(self, module: str, summary: dict) -> None:
        index = self.index
        torch = is_torch_module(real_module(module))
        for qualname, klass in summary["classes"].items():
            if klass["bases"] and index.ancestry_cut(module, qualname):
                continue  # its hierarchy is too deep to read: one LG900 for the file (_too_deep)
            if not torch and ("graph_call" in klass or klass["bases"]):
                self._graph_callable(module, qualname, klass)
            if not klass["bases"]:
                continue
            base = index.pass_base(module, qualname)
            if base is None and not torch and ["?", "*"] in klass["bases"] \
                    and "__call__" in klass["methods"]:
                # class P(*BASES): its bases cannot be read, and it is callable: reported, not
                # skipped (BASES may hold a pass base).
                self._found(module, klass["line"], klass["col"], index.identity(module, qualname),
                            "callable class whose bases are starred ('*...'), which cannot be"
                            " resolved statically; if one is a pass base it is a pass: write the"
                            " bases out", "class", guess_stage(real_module(module), qualname))
                continue
            picked = self._picked_base(module, klass) if base is None and not torch \
                and "__call__" in klass["methods"] else None
            if picked is not None:
                # class P(BASES[i]): an item of a variable the index cannot pick (a computed
                # key, a container built at run time); like starred bases, reported.
                self._found(module, klass["line"], klass["col"], index.identity(module, qualname),
                            f"callable class whose base '{picked}' is picked from a variable at run"
                            " time, which cannot be resolved statically; if it is a pass base it is"
                            " a pass: name the base directly", "class",
                            guess_stage(real_module(module), qualname))
                continue
            if base is None or index.base_entry(("class", module, qualname)) is not None:
                continue
            if not index.is_concrete(module, qualname):
                continue  # an abstract base of passes, not a pass
            if self._base_of_passes(module, qualname):
                continue
            name = index.identity(module, qualname, _registered_as(klass))
            self.classes.add(name)
            form = f"class deriving from {_short(base)}"
            if klass.get("built_by"):  # P = type("P", (CustomGraphPass,), {...})
                form += f", built by {klass['built_by']}"
            self._found(module, klass["line"], klass["col"], name, form, "class",
                        guess_stage(real_module(module), qualname))

    def _picked_base(self, module: str, klass: dict) -> str | None:
        """The text of a base written as an item of a variable (``BASES[i]``) that resolves to
        no class, else None (``Generic[T]``, ``Base[int]``: a subscripted class, a base)."""
        for written in klass["bases"]:
            if written[0] != "sub" or written[1][0] != "n":
                continue
            if self.index.expr_ref(module, klass["scope"], written[1])[0] == "value" \
                    and self.index.expr_ref(module, klass["scope"], written)[0] != "class":
                return f"{written[1][1]}[...]"
        return None

    def _listed_with_passes(self) -> None:
        """A class of the tree whose base cannot be resolved, listed in one pass list with two
        or more of the tree's passes (XNNPACK's ``XNNPACKRemoveCloneOpsTransform``, deriving
        from a transform of a module not on disk, in ``[XNNPACKRemoveCloneOpsTransform,
        ConvertToLinearPass, ...]``): whatever runs the list runs it as a pass; what its base
        is cannot be read, so it is reported, not skipped."""
        index = self.index
        for module, summary in index.modules.items():
            if type(summary) is not dict:
                continue
            for line, names in summary.get("lists") or ():
                refs = [index.resolve_name(module, "", name, "") for name in names]
                classes = [(r[1], r[2]) for r in refs if r[0] == "class" and isinstance(r[2], str)]
                passes = [index.identity(*c) for c in classes if index.identity(*c) in self.classes]
                if len(passes) < 2:
                    continue
                for owner, qualname in classes:
                    name = index.identity(owner, qualname)
                    unresolved = index.ancestors(owner, qualname)[1]
                    klass = index.class_info(owner, qualname)
                    if name in self.names or not unresolved or owner not in index.paths \
                            or klass is None or is_torch_module(real_module(owner)):
                        continue
                    self.classes.add(name)
                    self._found(owner, klass["line"], klass["col"], name,
                                f"class listed with the passes {passes[0]} and {passes[1]} in"
                                f" {real_module(module)}:{line}, run as they are; its base"
                                f" '{unresolved[0]}' cannot be resolved", "class",
                                guess_stage(real_module(owner), qualname))

    def _base_of_passes(self, module: str, qualname: str) -> bool:
        """A concrete pass class that classes of the tree derive from and that overrides none of
        its ancestors' methods (``XNNPACKPass(ExportPass)``: an ``__init__`` keeping the
        exported program, a property): run as it is, it is its base's pass; it is the tree's
        base of its passes, which are reported. A class overriding something, or that nothing
        derives from (a base configured by its ``__init__``), is a pass."""
        return bool(self.index.subclasses(module, qualname)) \
            and self.index.overrides(module, qualname) == set()

    def _graph_callable(self, module: str, qualname: str, klass: dict) -> None:
        """A class no registry base makes a pass, whose instances are called with one FX graph
        (``GraphFusionPassManager.__call__(self, graph: fx.Graph)``, a pass deriving from a base
        outside the linted tree such as ``vllm...VllmInductorPass``): by its effect, a pass.
        Inside torch the pipeline roots (LG005) say which calls are passes instead."""
        index = self.index
        evidence = self._graph_evidence(module, qualname)
        entry = "__call__"
        implemented = [(m, e) for m, e in klass.get("graph_methods", {}).items()
                       if m in index.entry_methods]
        if not evidence and implemented and index.ancestors(module, qualname)[1]:
            # deriving from a base we cannot read, it implements a pass class's entry point
            # (PassBase.call) with an FX graph: a pass until the base says otherwise
            entry, evidence = implemented[0]
        if not evidence or index.pass_base(module, qualname) is not None:
            return  # not called with a graph, or a registry base decides (above)
        if not index.is_concrete(module, qualname) and index.ancestors(module, qualname)[1] == []:
            return
        name = index.identity(module, qualname)
        self.classes.add(name)
        unresolved = index.ancestors(module, qualname)[1]
        form = f"class whose {entry} takes an FX graph ({evidence})"
        if unresolved:
            form += f"; its base '{unresolved[0]}' cannot be resolved"
        self._found(module, klass["line"], klass["col"], name, form, "class",
                    guess_stage(real_module(module), qualname))

    def _graph_evidence(self, module: str, qualname: str) -> str:
        """Why instances of this class are called with one FX graph: the ``__call__`` it runs
        (its own, else the nearest in-tree ancestor's) takes one, and is not abstract."""
        for ref in [("class", module, qualname), *self.index.ancestors(module, qualname)[0]]:
            info = self.index.class_info(ref[1], ref[2]) if ref[0] == "class" else None
            if info is not None and "__call__" in info["methods"]:
                if "__call__" in info["abstract"] or "__call__" in info.get("raises", ()):
                    return ""
                evidence = info.get("graph_call", "")
                return evidence if ref[2] == qualname else \
                    f"{evidence}, inherited from {ref[2]}" if evidence else ""
        return ""

    # ---- observers and pattern passes ----------------------------------------------------
    def _constructor(self, module: str, site: dict, outside: bool = False) -> None:
        index = self.index
        scope, klass = site["scope"], site["class"]
        callee = index.expr_ref(module, scope, site["callee"], klass)
        base = index.base_entry(callee)
        if base is None and callee[0] == "class":
            base = index.pass_base(callee[1], callee[2], "pattern_pass") \
                or index.pass_base(callee[1], callee[2], "observer")
        if base is None or index.vocab.bases[base][0] == "pass_class":
            return
        if klass and index.base_entry(("class", module, klass)) is not None:
            return  # inside the base itself (PatternMatcherPass.apply observing its own name)
        role, name_arg, position = index.vocab.bases[base]
        label = _short(base)
        kind = "observer" if role == "observer" else "pattern"
        key = name_arg if name_arg in site["kw"] else str(position)
        argument = site["kw"].get(name_arg)
        if argument is None and 0 <= position < len(site["args"]):
            argument = site["args"][position]
        line, col = site["pos"].get(key, [site["line"], site["col"]]) if argument is not None \
            else (site["line"], site["col"])
        if outside:
            if argument is not None:
                self._passed_in(module, site, argument, label, kind, guess_stage(real_module(module)))
            return
        values = index.strings(module, scope, argument, klass) if argument is not None else []
        torch = is_torch_module(real_module(module))
        stage = guess_stage(real_module(module))
        if not values:  # no name: known by the variable it is kept in
            self._unnamed(module, site, label, kind, stage)
            return
        for value in values:
            if isinstance(value, Unresolved):
                if self._passed_in(module, site, argument, label, kind, stage):
                    continue  # named by the subclasses that pass the name in
                owner = _owner(site)
                name = qualified_name(real_module(module), f"{owner}.{value.text}" if owner else value.text)
                form = (f"{label}; its name '{value.text}' is not a constant, so it is known by its"
                        " owner")
                self._found(module, line, col, name, form, kind, stage)
                continue
            # Outside torch a name is qualified by the module that builds (and applies) the pass,
            # as the runtime guard names it: it can never borrow a torch pass's permission.
            name = value[1] if torch else qualified_name(real_module(module), value[1])
            if value[0] == "glob":
                self.names.add(name)
                if name.strip("*") and not self._glob_registered(name):
                    self._report(module, line, col, name, label, kind, stage)
            else:
                self._found(module, line, col, name, label, kind, stage)

    def _passed_in(self, module: str, site: dict, argument: Any, label: str, kind: str,
                   stage: str, owner: tuple[str, str] | None = None, depth: int = 0) -> bool:
        """``PatternMatcherPass(pass_name=pass_name)`` in ``Base.__init__(self, config,
        pass_name)``: each subclass's ``super().__init__(config, "its_name")`` names one pass
        (reported there, qualified by the module that builds it). False when none does."""
        index = self.index
        klass = owner or (module, site["class"])
        info = index.class_info(*klass) if klass[1] else None
        scope = site["scope"] if owner is None else f"{klass[1]}.__init__"
        if info is None or argument is None or argument[0] != "n" or depth > 4 \
                or scope != f"{klass[1]}.__init__" or argument[1] not in info.get("init", ()):
            return False
        position = info["init"].index(argument[1])
        found = False
        for sub_module, sub in index.subclasses(*klass):
            sub_info = index.class_info(sub_module, sub)
            call = sub_info.get("super_init")
            if call is None:  # inherits __init__: its own subclasses pass the name
                found = self._passed_in(module, site, argument, label, kind, stage,
                                        (sub_module, sub), depth + 1) or found
                continue
            args, keywords, positions, line, col = call
            key = argument[1] if argument[1] in keywords else str(position)
            passed = keywords.get(argument[1]) or (args[position] if position < len(args) else None)
            if passed is None:
                continue
            if passed[0] == "n" and passed[1] in sub_info.get("init", ()):
                found = self._passed_in(module, site, passed, label, kind, stage,
                                        (sub_module, sub), depth + 1) or found
                continue
            at_line, at_col = positions.get(key, [line, col])
            for value in index.strings(sub_module, f"{sub}.__init__", passed, sub):
                if isinstance(value, Unresolved):
                    continue
                name = qualified_name(real_module(module), value[1])
                found = True
                self._found(sub_module, at_line, at_col, name,
                            f"{label} built by {klass[1]}.__init__ with the name passed here",
                            kind, stage)
        if found:  # a class that cannot run without a name its subclasses give is a template:
            self.templates.add(index.identity(*klass))  # they are the passes, not it
        return found

    def _unnamed(self, module: str, site: dict, label: str, kind: str, stage: str) -> None:
        target = site.get("target") or ""
        var = target.rsplit(".", 1)[-1]
        if is_torch_module(real_module(module)):
            # Torch's unnamed pattern passes are registered by variable, as spelled before
            # identities were qualified: "patterns", "joint_graph.patterns", "post_grad.f.x".
            stem = real_module(module).rsplit(".", 1)[-1]
            function = site["scope"].rsplit(".", 1)[-1] if site["scope"] else ""
            spellings = [s for s in (var, f"{stem}.{var}" if var else "",
                                     f"{stem}.{function}.{var}" if var and function else "")
                         if s] or [f"{stem}.{function or '<module>'}"]
            self.names.update(spellings)
            if any(self.registry.get_pass(s) is not None for s in spellings):
                return
            name = spellings[-1] if function else spellings[0]
        else:
            if site["class"] and (target.startswith(("self.", "cls.")) or not site["scope"]):
                owner = f"{site['class']}.{var}"  # self.x = ..., or x = ... in the class body
            elif site["scope"]:
                owner = f"{site['scope']}.{var}" if var else site["scope"]
            else:
                owner = var or "<module>"
            name = qualified_name(real_module(module), owner)
        self._found(module, site["line"], site["col"], name,
                    f"{label} without a name, known here by its variable; the runtime guard sees"
                    " no name: give it one", kind, stage)

    # ---- patterns registered into torch's pattern passes ----------------------------------
    def _registration(self, module: str, site: dict) -> None:
        """``@register_freezing_graph_pattern(...)`` / ``register_replacement(..., pass_dicts)``
        outside torch, into one of torch's pattern passes: the pattern then runs under torch's
        pass name, so registering torch's pass lets it run; reported so a person reviews it.
        Inside torch these are torch's own passes' patterns; into the project's own pattern
        pass, that pass is reported where it is built."""
        if is_torch_module(real_module(module)):
            return
        index, call = self.index, site["call"]
        if call[0] == "call" and call[1][:1] == ["call"] and call[2]:
            # register_decomposition([op])(fn): the inner call registers its argument fn
            call, site = call[1], {**site, "handler": text_of(call[2][0])}
        if call[0] != "call" or call[1][:1] != ["n"]:
            return
        head, _, rest = call[1][1].partition(".")
        imported = (index.modules[module].get("imports") or {}).get(head) if rest else None
        if imported:  # lowering.register_lowering, `from torch._inductor import lowering`
            lowering = {n.replace(":", "."): n for n in index.vocab.lowerings}.get(
                f"{imported.replace(':', '.')}.{rest}")
            if lowering is not None:
                self._lowering(module, site, call, lowering)
                return
        function = index.resolve_name(module, site["scope"], call[1][1], site["class"])
        if function[0] not in ("ext", "func") or not function[2]:
            return
        name = f"{function[1]}:{function[2]}"
        if name in index.vocab.lowerings:
            self._lowering(module, site, call, name)
            return
        role, arg, position = index.vocab.bases.get(name, ("", "", -1))
        if role != "pattern_registration":
            return
        if not arg and position < 0:  # the function's own module's pattern passes
            target = f"{function[1]} (that module's own)"
        else:
            given = dict(call[3]).get(arg) if arg else None
            if given is None and 0 <= position < len(call[2]):
                given = call[2][position]
            target = self._torch_pass_dict(module, site, given)
            if target is None:
                self._unresolved_target(module, site, given, function[2])
                return
        handler = site["handler"] or _owner(site) or "<module>"
        identity = qualified_name(real_module(module), handler)
        short = function[2].rsplit(".", 1)[-1]
        self._found(module, site["line"], site["col"], identity,
                    f"a pattern registered by {short} into torch's pattern pass {target}; it runs"
                    " under that torch pass's name, which is all the runtime guard sees",
                    "pattern", guess_stage(target))

    def _lowering(self, module: str, site: dict, call: list, name: str) -> None:
        """``@register_lowering(aten.x)``, ``make_fallback(aten.y)``, ``register_decomposition``
        outside torch (a registry ``lowering_registration``): a change of torch's global tables
        that decide how Inductor lowers or decomposes an op, in every later compile (a lite
        region's too), which no hook sees; the same edit as ``lowerings[op] = f``. Named by the
        function registered, or for a fallback by the call and its op."""
        short = name.rsplit(":", 1)[-1]
        table = call[3].get("registry") or (call[2][1] if len(call[2]) > 1 else None)
        if short == "register_decomposition" and table is not None and not _text_is_torch(
                self.index.modules[module], table):
            return  # registry=own_table (torch-tensorrt): the project's own table, not torch's
        ops = text_of(call[2][0]) if call[2] else (text_of(call[3]["aten_op"])
                                                   if "aten_op" in call[3] else "?")
        if short.rsplit(".", 1)[-1] == "make_fallback" and len(call[2]) == 1 \
                and set(call[3]) <= {"warn"} and _custom_op(ops):
            # make_fallback(torch.ops.torch_ipex.conv) of a custom op, nothing else: what
            # Inductor does by itself for an op it has no lowering for (implicit_fallbacks,
            # which lite pins on); the wrapper code is the same. A layout constraint, an
            # override of a decomposition or a builtin (aten) op is a change: reported.
            return
        handler = site["handler"]
        if handler:
            identity = qualified_name(real_module(module), handler)
            what = f"registers {handler} with {short}({ops}) in torch's global table"
        else:
            owner = _owner(site)
            identity = qualified_name(real_module(module), f"{owner + '.' if owner else ''}"
                                                           f"{short}({ops})")
            what = f"calls {short}({ops}), a change of torch's global table"
        self._found(module, site["line"], site["col"], identity,
                    f"{what}: every later compile lowers or decomposes that op so, lite regions"
                    " included, and no hook sees it", "function",
                    guess_stage(name.partition(":")[0]))

    def _unresolved_target(self, module: str, site: dict, given: Any, function: str) -> None:
        """A registration whose target pattern pass the index cannot follow (a parameter, a
        call's result, ``*args``): it may be one of torch's, so it is reported, never skipped.
        A target that resolves to anything else (the project's own pattern pass, reported where
        it is built; a plain dict) needs nothing here."""
        unresolved = [v for v in self._target_values(module, site, given)
                      if isinstance(v, Unresolved)]
        if not unresolved:
            return
        if given and given[0] == "n" and (self.index.modules[module].get("param_types") or {}).get(
                f"{site['scope']}.{given[1]}"):
            # ``def register(self, pm_pass: PatternMatcherPass)``: the caller hands in a pattern
            # pass object, reported where it is built (vLLM's pattern classes). Not followed to
            # the caller: one of torch's own handed in so is the documented gap.
            return
        text = unresolved[0].text
        why = "a parameter" if given and given[0] == "n" and self.index.resolve_name(
            module, site["scope"], given[1], site["class"]) == ("unknown", "parameter") \
            else "not passed as a plain argument" if text == "<not given>" else "not a constant"
        handler = site["handler"] or _owner(site) or "<module>"
        short = function.rsplit(".", 1)[-1]
        self._found(module, site["line"], site["col"], qualified_name(real_module(module), handler),
                    f"a pattern registered by {short} into '{text}', whose pattern pass cannot be"
                    f" resolved statically ({why}); if it is one of torch's, the pattern runs under"
                    " that pass's name: register what flows in", "pattern",
                    guess_stage(real_module(module)))

    def _target_values(self, module: str, site: dict, given: Any) -> list:
        if not isinstance(given, list) or not given:
            return [Unresolved("<not given>")]
        if given[0] == "l":
            return [v for element in given[1] for v in self._target_values(module, site, element)]
        if given[0] == "sub":
            return self._target_values(module, site, given[1])
        return list(self.index.values(module, site["scope"], given, site["class"]))

    def _torch_pass_dict(self, module: str, site: dict, given: Any) -> str | None:
        """The torch pass dict a registration targets (``pass_patterns[1]``, a list of them),
        as a dotted name; None when it is not torch's (or cannot be told)."""
        if not isinstance(given, list) or not given:
            return None
        if given[0] == "l":
            for element in given[1]:
                found = self._torch_pass_dict(module, site, element)
                if found is not None:
                    return found
            return None
        if given[0] == "sub":  # pass_patterns[1]: the list of torch's pattern passes
            return self._torch_pass_dict(module, site, given[1])
        if given[0] != "n":
            return None
        ref = self.index.resolve_name(module, site["scope"], given[1], site["class"])
        if ref[0] in ("ext", "value", "func", "class", "module") and len(ref) > 1 \
                and isinstance(ref[1], str) and is_torch_module(ref[1]):
            tail = ref[2] if ref[0] != "value" else given[1].rsplit(".", 1)[-1]
            return f"{ref[1]}.{tail}" if isinstance(tail, str) and tail else ref[1]
        return None

    # ---- hooks -----------------------------------------------------------------------------
    def _hook(self, module: str, site: dict) -> None:
        index = self.index
        key = site["key"]
        hook_module, entry, stage = index.vocab.hooks[key]
        if not self._is_hook_receiver(module, site, hook_module):
            return
        scope, klass = site["scope"], site["class"]
        form = f"installed in {key}"
        for value in index.values(module, scope, site["value"], klass):
            line, col = site["line"], site["col"]
            if isinstance(value, Unresolved):
                owner = _owner(site)
                name = qualified_name(real_module(module), f"{owner}.{value.text}" if owner else value.text)
                self._found(module, line, col, name,
                            f"{form}; the value '{value.text}' cannot be resolved statically,"
                            " register what flows in", "function", stage)
                continue
            if value[0] in ("str", "glob"):  # list-valued hooks also take torch pass names
                self._found(module, line, col, value[1], form, "function", stage)
                continue
            name = index.ref_identity(value)
            if name is None:
                continue
            if name in self.classes:
                self.names.add(name)
                continue  # reported (or registered) at its class definition
            if value[0] == "instance" and index.in_tree(value[1]) \
                    and index.is_callable(value[1], value[2]) is False:
                continue  # an object torch cannot call (a sentinel such as fuzzer's DEFAULT)
            kind = "class" if value[0] in ("class", "instance") else "function"
            extra = ""
            if value[0] in ("class", "instance") and index.in_tree(value[1]):
                unresolved = index.ancestors(value[1], value[2])[1]
                if unresolved and index.pass_base(value[1], value[2]) is None:
                    extra = f"; its base '{unresolved[0]}' cannot be resolved"
            self._found(module, line, col, name, form + extra, kind, stage)

    def _patch(self, module: str, site: dict) -> None:
        """Outside torch, ``post_grad.post_grad_passes = mine`` / ``Loops.f = g`` /
        ``setattr(partitioners, "solve_min_cut", f)``: code of torch's compile pipeline (a module
        or class of a package the registry's bases, roots and hooks live in) replaced at run
        time. What replaces it runs wherever torch called the original, and no hook or registry
        entry sees it: a pass until a person registers it. Data (a number, a string, None) is
        not code; a config module's keys are LG002's."""
        index = self.index
        scope, klass = site["scope"], site["class"]
        if site["value"][0] in ("c", "s", "none"):
            return
        if site.get("foreign"):
            self._foreign_patch(module, site)
            return
        # the owner by the import that binds its first name (torch's modules are not read)
        head, _, rest = site["owner"].partition(".")
        imported = site["imported"].replace(":", ".")
        target = ".".join(filter(None, (imported, rest)))
        if not is_torch_module(target) or any(target == c or target.startswith(c + ".")
                                              for c in index.vocab.config_modules) \
                or not any(target == p or target.startswith(p + ".")
                           for p in index.vocab.pipeline_packages) \
                or is_config_module(target):
            return  # not the pipeline; or a key of a config module (torch.fx.experimental._config)
        if site["attr"].startswith("[") and _below_module(target) > 1:
            # V.graph.buffers[i] = b: an entry of an object reached at run time (a pass's own
            # work on Inductor's state), not a module-level table such as lowerings[op]
            return
        if site["attr"] and not site["attr"].startswith("[") \
                and imported_from_outside(target, site["attr"], index.vocab.pipeline_packages):
            return  # async_compile.tqdm: a name torch's module imported from outside the pipeline
        where = f"{target}{site['attr']}" if site["attr"].startswith("[") \
            else f"{target}.{site['attr']}"
        form = (f"replaces {where} at run time, a monkeypatch of torch's compile pipeline that"
                " no hook sees")
        if site.get("entries"):  # e.extra_check = f, e each entry of torch's pattern pass
            where = f"{target}.{site['attr']}"
            form = (f"sets {site['attr']} on each entry of {site['entries']} (torch's {target})"
                    " at run time, an edit of torch's compile pipeline that no hook sees")
        if not site["attr"]:  # exec(source, module.__dict__)
            where = site["scope"] or "<module>"
            form = (f"executes code into the namespace of {target} at run time (exec), redefining"
                    " torch's compile pipeline where no hook sees it")
        stage = guess_stage(target, site["attr"])
        for value in index.values(module, scope, site["value"], klass) or [Unresolved("?")]:
            line, col = site["line"], site["col"]
            if isinstance(value, Unresolved) and value.data:
                continue  # `V.graph.reason = msg + why`: arithmetic makes data, not code
            if isinstance(value, Unresolved):
                why = f"; the value '{value.text}' cannot be resolved statically, register what" \
                    " flows in" if site["attr"] else ""
                self._found(module, line, col, qualified_name(real_module(module), where),
                            form + why, "function", stage)
                continue
            if value[0] in ("str", "glob"):
                continue
            name = index.ref_identity(value)
            if name is None:
                name = qualified_name(real_module(module), where)
            kind = "class" if value[0] in ("class", "instance") else "function"
            self._found(module, line, col, name, form, kind, stage)

    def _foreign_patch(self, module: str, site: dict) -> None:
        """``vllm.compilation.backends._decompose_size_nodes = mine`` (unsloth_zoo): code of
        another project replaced at run time by a function of this tree. Which project's code
        is a compile pipeline the lint cannot tell by name; by structure, a replacement that
        rewrites the FX graph it is handed (it calls a registry ``graph_mutation`` member) is a
        graph pass running where the original ran, which no hook sees."""
        index = self.index
        head, _, rest = site["owner"].partition(".")
        target = ".".join(filter(None, (site["imported"].replace(":", "."), rest)))
        for value in index.values(module, site["scope"], site["value"], site["class"]):
            if isinstance(value, Unresolved) or value[0] != "func" or not isinstance(value[2], str):
                continue
            effects = (index.modules.get(value[1]) or {}).get("graph_effects") or {}
            entry = effects.get(value[2])
            if entry is None or not entry[3] or not entry[2]:
                continue  # not a function rewriting the graph it is handed
            self._found(module, site["line"], site["col"], index.identity(value[1], value[2]),
                        f"replaces {target}.{site['attr']} at run time with a rewrite of an FX graph"
                        f" ({_calls(entry[3])}), a monkeypatch of another project's compile"
                        " pipeline that no hook sees", "function",
                        guess_stage(real_module(value[1]), value[2]))

    def _store(self, module: str, site: dict) -> None:
        """``setattr(config, key, p)`` and the like, the key not a literal: where the index
        resolves the key (a loop over a constant tuple, another module's constant, an f-string
        of those), each hook key it may be installs ``p``. A key it cannot resolve is LG006's;
        a dict's own entries are hook sites where the dict is written."""
        index = self.index
        if site["key"][0] == "dict" or not (site.get("sink") or index.config_module(
                module, site["scope"], site["recv"], site["class"])):
            return
        for key in index.key_strings(module, site["scope"], site["key"], site["class"]):
            if not isinstance(key, Unresolved) and key[1] in index.vocab.hooks:
                self._hook(module, {**site, "t": "hook", "key": key[1], "recv": None,
                                    "line": site["vline"], "col": site["vcol"]})

    def _is_hook_receiver(self, module: str, site: dict, hook_module: str) -> bool:
        receiver = site.get("recv")
        if not receiver or receiver[0] != "n":
            return True  # dicts, patch(...), setattr: the key alone says it is the hook
        ref = self.index.resolve_name(module, site["scope"], receiver[1], site["class"])
        if ref[0] == "module":
            return ref[1] == hook_module or ref[1].endswith(".config")
        return ref[0] != "instance"  # self.post_grad_custom_post_pass is an object's own field

    def _torch_entry(self, name: str) -> bool:
        """Is ``name`` registered as one of torch's own passes (a torch name, from torch)?"""
        entry = self.registry.match_pass(name) if "*" not in name else None
        return entry is not None and not is_qualified(entry.name) \
            and (entry.source.startswith("torch/") or Path(entry.origin).parent == SHIPPED_DIR)

    # ---- reporting -----------------------------------------------------------------------
    def _glob_registered(self, pattern: str) -> bool:
        registry = self.registry
        return registry.match_pass(pattern) is not None or any(
            fnmatchcase(entry.name, pattern)
            for entry in getattr(registry, "passes_in_range", registry.passes))

    def _found(self, module: str, line: int, col: int, name: str, form: str, kind: str,
               stage: str) -> None:
        self.names.add(name)
        if self.registry.match_pass(name) is not None:
            return
        elsewhere = getattr(self.registry, "whole", self.registry).match_pass(name)
        if elsewhere is None:
            self._report(module, line, col, name, form, kind, stage)
            return
        # Registered, but for other torch releases only: the guard on this tree's torch refuses
        # it. No hint: a second entry of that name is a duplicate; the range is a person's call.
        path = self.index.paths[module]
        if (path, line, name, form) not in self.reported:
            self.reported.add((path, line, name, form))
            self.findings.append(Finding(path, line, col, UnregisteredPass.CODE,
                                         UnregisteredPass.OUT_OF_RANGE.format(
                                             name=name, form=form, spec=elsewhere.torch,
                                             entry=elsewhere.name, origin=elsewhere.origin,
                                             line=elsewhere.line, version=self.registry.version),
                                         name))

    def _report(self, module: str, line: int, col: int, name: str, form: str, kind: str,
                stage: str) -> None:
        path = self.index.paths[module]
        if (path, line, name, form) in self.reported:
            return  # [PatternMatcherPass(), PatternMatcherPass()] is one pass per variable
        self.reported.add((path, line, name, form))  # a = b = p into two hooks: two findings
        hint = pass_hint(name, stage, kind)
        message = UnregisteredPass.MESSAGE.format(name=name, form=form, hint=one_line(hint))
        self.findings.append(Finding(path, line, col, UnregisteredPass.CODE, message, name, hint))


def _imported_inside(module: str, summary: dict, text: str) -> tuple[str, str] | None:
    """(module, name) of a ``from:LEVEL:MODULE:NAME`` handed entry, relative imports resolved
    against ``module``'s package."""
    try:
        _, level, source, name = text.split(":", 3)
        level = int(level)
    except ValueError:
        return None
    if level:
        package = module if summary.get("package") else module.rpartition(".")[0]
        for _ in range(level - 1):
            package = package.rpartition(".")[0]
        source = f"{package}.{source}" if source else package
    return real_module(source), name


def _text_is_torch(summary: dict, expr: Any) -> bool:
    """Is this expression a name imported from torch (``decomposition.decompositions``)?"""
    text = text_of(expr)
    imported = (summary.get("imports") or {}).get(text.split(".", 1)[0], "")
    return text.startswith("torch.") or imported.split(".", 1)[0].split(":", 1)[0] == "torch"


def _registered_as(klass: dict) -> str | None:
    """The name a registering decorator gives a class, ``@register_fusion("batch_linear")``: in
    torch, that is the pass's torch name."""
    for decorator in klass["decorators"]:
        if decorator[0] == "call" and decorator[2] and decorator[2][0][0] == "s":
            return decorator[2][0][1]
    return None


def _ref_dotted(ref: Any) -> str | None:
    """``torch._dynamo.backends.common.aot_autograd`` for what the index resolved a callee to
    (a torch name it could not read is an ``ext`` reference), else None."""
    if not isinstance(ref, (list, tuple)) or len(ref) < 3 or not isinstance(ref[1], str):
        return None
    if ref[0] in ("ext", "func", "class", "instance", "module") and isinstance(ref[2], str):
        return f"{ref[1]}.{ref[2]}" if ref[2] else ref[1]
    return None


def _short(base: str) -> str:
    return base.rsplit(":", 1)[-1].rsplit(".", 1)[-1]


def _owner(site: dict) -> str:
    return site["scope"] or site["class"] or ""


__all__ = ["UnregisteredPass", "text_of"]


@functools.lru_cache(maxsize=512)
def imported_from_outside(module: str, name: str, packages: Iterable[str]) -> bool:
    """Is ``name`` in the installed module ``module`` only an import from outside ``packages``
    (the pipeline's packages)? ``torch._inductor.async_compile.tqdm`` is ``torch.hub``'s progress
    bar: replacing it there replaces no code of the compile pipeline. Read with ``ast``, never
    imported; a module that cannot be read, or a name it also defines, is the pipeline's."""
    from lint_rules.index import _installed_source

    path = _installed_source(module)
    if path is None:
        return False
    try:
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    origins = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            parts = module.split(".") + ([""] if path.name == "__init__.py" else [])
            base = parts[:len(parts) - node.level] if node.level else []
            source = ".".join(base + ([node.module] if node.module else []))
            origins += [source for a in node.names if (a.asname or a.name) == name]
        elif isinstance(node, ast.Import):
            origins += [a.name for a in node.names if a.asname == name]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return False
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and name in {
                t.id for t in getattr(node, "targets", [getattr(node, "target", None)])
                if isinstance(t, ast.Name)}:
            return False
    return bool(origins) and not any(o == p or o.startswith(p + ".") for o in origins for p in packages)


def _below_module(dotted: str) -> int:
    """How many names of ``dotted`` lie below the longest prefix that is an installed module
    (``torch._inductor.lowering.lowerings``: 1; ``torch._inductor.virtualized.V.graph.buffers``:
    3); the whole length when no prefix is one."""
    from lint_rules.index import _installed_source

    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        if _installed_source(".".join(parts[:end])) is not None:
            return len(parts) - end
    return len(parts)


def _calls(rewrite: str) -> str:
    """How a rewrite reads in a message: ``calls gm.graph.erase_node()`` for a member call,
    the store itself for ``stores node.target`` / ``assigns gm.graph``."""
    if rewrite.startswith(("stores ", "assigns ", "calls ", "retraces ")):
        return rewrite
    return f"calls {rewrite}" + ("" if rewrite.endswith(")") else "()")


# torch._library.utils.is_builtin's namespaces: an op of any other is a custom op
_BUILTIN_NAMESPACES = frozenset(("aten", "prim", "prims"))


def _custom_op(text: str) -> bool:
    """``torch.ops.torch_ipex.convolution_forward``: an op of a namespace torch does not build
    in (written whole, so its namespace is known)."""
    parts = text.split(".")
    return len(parts) >= 4 and parts[:2] == ["torch", "ops"] and parts[2].isidentifier() \
        and parts[2] not in _BUILTIN_NAMESPACES
