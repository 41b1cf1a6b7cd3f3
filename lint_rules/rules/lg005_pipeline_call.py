"""LG005: a call inside a registered pass pipeline that no registry entry names, and a new module
in an FX pass package.

The registry's ``[[pipeline]]`` rows name the functions that run passes in torch
(``post_grad_passes``, ``joint_graph_passes``, ``Scheduler._init``, the partitioners, ...). Every
call in such a function's own body is a step of the pipeline: whatever it calls must be named by a
registry entry, a pass or a helper (``kind = "helper"``: ``lite = "always"`` when it transforms
nothing, ``"never"`` when it does). A plain function someone adds to ``post_grad_passes`` is
therefore a finding even when no observer or pattern pass announces it.

How a call is named (the identity the registry is asked for, ``lite_guard.identity``): a callee
resolved through the index to a torch definition is its torch name (the function or method name);
one resolved outside torch is qualified (``builtins:isinstance``, ``functools:partial``); a
method of a value the index cannot follow (``gm.graph.eliminate_dead_code``) is, in torch code,
its method name (outside torch it is qualified by where it is called,
``myproj.passes:run.gm.graph.eliminate_dead_code``, so it cannot borrow a torch helper's entry).
A call made on an observer or pattern pass (``GraphTransformObserver(gm,
"x").apply_graph_pass(f)``) is covered by that pass's own name (LG001 checks it); calls inside
the lambdas handed to it run under that name too (they are not in the root's own body).

A root also runs what it hands on without calling it: a function passed as an argument
(``run_and_log("x", fold_slices, gm)``, ``pass_execution_and_save(p, ...)``), or listed in a pass
list it loops over, is a step named like a call; ``functools.partial(f, ...)(g)`` and a loop
variable over such a list are named by the function that runs; a dict display indexed by a
setting (``SOLVERS[config.solver](gm)``) runs every entry it may pick. A method taking an FX graph
called on a module-level object of a class no registry base makes a pass (``grouper.apply(g)``)
runs that object: the step is named by the object, not by the method, whose name other passes'
methods share. Calls to another root, to a class
whose ``__init__`` is a root, or to a function a registry entry hooks (the guard names the pass
there: ``memory_plan_reuse`` is ``ReuseLine``'s hook) are covered. A root or hooked driver that
runs what it finds in its module's ``globals()`` (comms' reorder driver) makes every function of
that module with the driver's own signature a pass.

The FX pass packages are the packages that hold ``pre_grad`` / ``joint_graph`` / ``post_grad``
pipeline roots and no other kind (``torch/_inductor/fx_passes``; not ``torch/_inductor``, which
holds the scheduler's too): every module there must be some registry entry's ``source``, so a
new pass file is a finding until someone registers what it does.
"""

from __future__ import annotations

import builtins
from pathlib import PurePath
from typing import Iterator, NamedTuple

from lint_rules.examples import Example
from lint_rules.findings import Finding
from lint_rules.index import Unresolved
from lint_rules.rule import IndexRule
from lite_guard.hints import pass_hint
from lite_guard.identity import is_torch_module, qualified_name


class Step(NamedTuple):
    """One step of a pipeline root: a call, or a function the root hands on (``owner`` says how)."""

    covered: bool  # named by an observer / pattern pass, or another root
    name: str  # the identity to register
    candidates: list[str]  # names that count as registering it
    home: str  # the torch module defining it, when known
    line: int
    col: int
    owner: str | None  # None for a call; "passes 'f' to 'g'" / "lists 'f'" for a value

FX_STAGES = ("pre_grad", "joint_graph", "post_grad")

_REGISTRY = """
[[base]]
name = "torch.fx.passes.graph_transform_observer:GraphTransformObserver"
role = "observer"
name_arg = "passname"
name_position = 1

[[pipeline]]
root = "torch._inductor.fx_passes.post_grad:post_grad_passes"
stage = "post_grad"
why = "runs the post-grad passes"

[[pass]]
name = "remove_noop_ops"
stage = "post_grad"
lite = "never"
source = "torch/_inductor/fx_passes/post_grad.py"
why = "removes no-op ops"

[[pass]]
name = "lazy_init"
stage = "post_grad"
kind = "helper"
lite = "always"
source = "torch/_inductor/fx_passes/post_grad.py"
why = "registers the pattern tables once; transforms nothing"
"""
_PATH = "torch/_inductor/fx_passes/post_grad.py"
_PARTIAL = """
[[pass]]
name = "functools:partial"
stage = "post_grad"
kind = "helper"
lite = "always"
why = "wraps a function; the wrapped function is the step"
"""
_GETATTR = """
[[pass]]
name = "builtins:getattr"
stage = "post_grad"
kind = "helper"
lite = "always"
why = "reads an attribute; what it returns, when called, is the step"
"""
_APPLY = """
[[base]]
name = "torch.fx.graph:Graph"
role = "graph_type"
members = ["nodes"]

[[pass]]
name = "apply"
stage = "post_grad"
kind = "helper"
lite = "never"
why = "a pattern pass's apply"
"""
_RUN_ALL = """
[[pipeline]]
root = "torch._inductor.fx_passes.post_grad:run_all"
stage = "post_grad"
why = "a root that runs another root"
"""
_HINT = ('[[pass]] name = "{0}", stage = "post_grad", lite = "never", kind = "helper", source ='
         ' "torch/_inductor/fx_passes/post_grad.py"')
# A project's own pipeline; torch's helper named eliminate_dead_code must not cover its calls.
_USER_ROOT = """
[[pipeline]]
root = "myproj.passes:run"
stage = "post_grad"
why = "the project's pass manager"

[[pass]]
name = "eliminate_dead_code"
stage = "aot"
kind = "helper"
lite = "always"
source = "torch/_functorch/partitioners.py"
why = "torch.fx DCE inside the partitioners, as under aot_eager"
"""


class UnregisteredPipelineCall(IndexRule):
    CODE = "LG005"
    NAME = "unregistered-pipeline-call"
    DESCRIPTION = "call inside a pass pipeline, or module of an FX pass package, that no registry entry names"
    HELP = ("Register the callee: a pass entry if it transforms the graph, else kind = \"helper\""
            " with lite = \"always\" and a why saying it transforms nothing.")
    MESSAGE = ("'{root}' calls '{name}', which no registry entry names; a step of a pass pipeline"
               " must be registered: {hint}")
    REF_MESSAGE = ("'{root}' {owner}: '{name}' runs as a step of the pipeline and no registry"
                   " entry names it; register it: {hint}")
    LOOKUP_MESSAGE = ("'{name}' has the signature of the passes '{driver}' looks up by name in its"
                      " module (globals()[name]), so a config list can run it, and no registry"
                      " entry names it; register it: {hint}")
    UNNAMED_MESSAGE = ("this file is where pipeline root '{root}' lives, but it was read as module"
                       " '{module}' (no __init__.py above it?), so the root's calls cannot be"
                       " checked; lint the tree with its package's __init__.py files")
    MODULE_MESSAGE = ("module '{module}' is in the FX pass package '{package}' and no registry entry"
                      " names it as its source; register the passes it defines (or its helpers)")

    VALID = [
        Example("def lazy_init():\n    pass\n\ndef remove_noop_ops(g):\n    pass\n\n"
                "def post_grad_passes(gm):\n    lazy_init()\n    remove_noop_ops(gm.graph)\n"
                "    GraphTransformObserver(gm, 'remove_noop_ops').apply_graph_pass(remove_noop_ops)\n",
                path=_PATH, registry=_REGISTRY),
        Example("def post_grad_passes(gm):\n    GraphTransformObserver(gm, 'x').apply_graph_pass("
                "lambda g: rewrite(g))\n", path=_PATH, registry=_REGISTRY),  # named by its observer
        Example("def other(gm):\n    rewrite(gm)\n", path=_PATH, registry=_REGISTRY),  # not a root
        # a loop over registered passes: the loop variable is the functions it takes
        Example("def remove_noop_ops(g):\n    pass\n\ndef post_grad_passes(gm):\n"
                "    for p in (remove_noop_ops,):\n        p(gm.graph)\n",
                path=_PATH, registry=_REGISTRY),
        # a method of a module-level object that takes no graph keeps its method's name
        # (V.set_fake_mode(m): registered by that name)
        Example("class Handler:\n    def apply(self, mode):\n        pass\n\nV = Handler()\n\n"
                "def post_grad_passes(gm):\n    V.apply(None)\n", path=_PATH,
                registry=_REGISTRY + _APPLY),
        # another root is checked as a root, not registered as a step
        Example("def post_grad_passes(gm):\n    pass\n\ndef run_all(gm):\n    post_grad_passes(gm)\n",
                path=_PATH, registry=_REGISTRY + _RUN_ALL),
    ]
    INVALID = [
        Example("def post_grad_passes(gm):\n    drop_dead_nodes(gm.graph)\n", path=_PATH,
                registry=_REGISTRY, line=2,
                message="'torch._inductor.fx_passes.post_grad:post_grad_passes' calls"
                " 'drop_dead_nodes', which no registry"
                " entry names; a step of a pass pipeline must be registered: [[pass]] name ="
                ' "drop_dead_nodes", stage = "post_grad", lite = "never", kind = "helper", source ='
                ' "torch/_inductor/fx_passes/post_grad.py"'),
        Example("def post_grad_passes(gm):\n    gm.graph.eliminate_dead_code()\n", path=_PATH,
                registry=_REGISTRY, line=2,
                message="'torch._inductor.fx_passes.post_grad:post_grad_passes' calls"
                " 'eliminate_dead_code', which no registry"
                " entry names; a step of a pass pipeline must be registered: [[pass]] name ="
                ' "eliminate_dead_code", stage = "post_grad", lite = "never", kind = "helper", source ='
                ' "torch/_inductor/fx_passes/post_grad.py"'),
        Example("from .fuse import fuse_rope_v3\n\ndef post_grad_passes(gm):\n"
                "    if True:\n        fuse_rope_v3(gm)\n", path=_PATH, registry=_REGISTRY, line=5,
                message="'torch._inductor.fx_passes.post_grad:post_grad_passes' calls"
                " 'fuse_rope_v3', which no registry"
                " entry names; a step of a pass pipeline must be registered: [[pass]] name ="
                ' "fuse_rope_v3", stage = "post_grad", lite = "never", kind = "helper", source ='
                ' "torch/_inductor/fx_passes/fuse.py"'),
        Example("def run(gm):\n    gm.graph.eliminate_dead_code()\n", path="myproj/passes.py",
                registry=_REGISTRY + _USER_ROOT, line=2,
                message="'myproj.passes:run' calls 'myproj.passes:run.gm.graph.eliminate_dead_code',"
                " which no registry entry names; a step of a pass pipeline must be registered:"
                ' [[pass]] name = "myproj.passes:run.gm.graph.eliminate_dead_code", stage ='
                ' "post_grad", lite = "never", kind = "helper", source = "myproj/passes.py"'),
        # a function handed to a helper runs as a step (run_and_log("x", fn, gm))
        Example("def lazy_init(g=None):\n    pass\n\ndef fold_slices(g):\n    pass\n\n"
                "def post_grad_passes(gm):\n    lazy_init(fold_slices)\n", path=_PATH,
                registry=_REGISTRY, line=8,
                message="'torch._inductor.fx_passes.post_grad:post_grad_passes' passes 'fold_slices'"
                " to 'lazy_init': 'fold_slices' runs as a step of the pipeline and no registry entry"
                " names it; register it: " + _HINT.format("fold_slices")),
        # a pass list the root loops over: named once, at the list
        Example("def remove_noop_ops(g):\n    pass\n\ndef fold_a(g):\n    pass\n\n"
                "def post_grad_passes(gm):\n    for p in (remove_noop_ops, fold_a):\n"
                "        p(gm.graph)\n", path=_PATH, registry=_REGISTRY, line=8,
                message="'torch._inductor.fx_passes.post_grad:post_grad_passes' lists 'fold_a':"
                " 'fold_a' runs as a step of the pipeline and no registry entry names it; register"
                " it: " + _HINT.format("fold_a")),
        # functools.partial(f, ...)(graph): f runs
        Example("import functools\n\ndef fuse_int8(g, x):\n    pass\n\ndef post_grad_passes(gm):\n"
                "    functools.partial(fuse_int8, x=1)(gm.graph)\n", path=_PATH,
                registry=_REGISTRY + _PARTIAL, line=7,
                message="'torch._inductor.fx_passes.post_grad:post_grad_passes' calls 'fuse_int8',"
                " which no registry entry names; a step of a pass pipeline must be registered: "
                + _HINT.format("fuse_int8")),
        # a dict display indexed in the root: the function the entry holds runs (round 6)
        Example("def dedup(g):\n    pass\n\nEXTRA = {'dedup': dedup}\n\n"
                "def post_grad_passes(gm):\n    EXTRA['dedup'](gm.graph)\n", path=_PATH,
                registry=_REGISTRY, line=7,
                message="'torch._inductor.fx_passes.post_grad:post_grad_passes' calls 'dedup',"
                " which no registry entry names; a step of a pass pipeline must be registered: "
                + _HINT.format("dedup")),
        # getattr(module, name)() over a tuple of names: each attribute named runs (round 6)
        Example("import sys\n\n\n\n\ndef post_grad_passes(gm):\n"
                "    for name in ('late_step',):\n        getattr(sys, name)(gm.graph)\n",
                path=_PATH, registry=_REGISTRY + _GETATTR, line=8,
                message="'torch._inductor.fx_passes.post_grad:post_grad_passes' calls"
                " 'sys:late_step', which no registry entry names; a step of a pass pipeline must"
                " be registered: " + _HINT.format("sys:late_step")),
        # ... and a name that cannot be read is reported as written, never skipped
        Example("def post_grad_passes(gm, name):\n    getattr(gm, name)()\n", path=_PATH,
                registry=_REGISTRY + _GETATTR, line=2,
                message="'torch._inductor.fx_passes.post_grad:post_grad_passes' calls"
                " 'getattr(gm, name)', which no registry entry names; a step of a pass pipeline"
                " must be registered: " + _HINT.format("getattr(gm, name)")),
        # a module-level object of a class no base makes a pass, applied to the graph: the
        # object is the step ('apply', a pattern pass's registered method, cannot cover it)
        Example("class Grouper:\n    def apply(self, graph: torch.fx.Graph):\n        pass\n\n"
                "grouper = Grouper()\n\ndef apply(g):\n    pass\n\n"
                "def post_grad_passes(gm):\n    grouper.apply(gm.graph)\n", path=_PATH,
                registry=_REGISTRY + _APPLY, line=11,
                message="'torch._inductor.fx_passes.post_grad:post_grad_passes' calls 'grouper',"
                " which no registry entry names; a step of a pass pipeline must be registered: "
                + _HINT.format("grouper")),
        # a dict display indexed by a setting: every entry may be picked, each runs
        Example("from torch._inductor import config\n\ndef solve_a(m):\n    pass\n\n"
                "def solve_b(m):\n    pass\n\nSOLVERS = {'a': solve_a, 'b': solve_b}\n\n"
                "def post_grad_passes(gm):\n    SOLVERS[config.solver](gm)\n", path=_PATH,
                registry=_REGISTRY,
                expect=tuple((12, "'torch._inductor.fx_passes.post_grad:post_grad_passes' calls"
                              f" '{name}', which no registry entry names; a step of a pass"
                              " pipeline must be registered: " + _HINT.format(name))
                             for name in ("solve_a", "solve_b"))),
        Example("def rewrite(gm):\n    pass\n", path="torch/_inductor/fx_passes/new_rewrite.py",
                registry=_REGISTRY, line=1,
                message="module 'torch/_inductor/fx_passes/new_rewrite.py' is in the FX pass package"
                " 'torch/_inductor/fx_passes' and no registry entry names it as its source; register"
                " the passes it defines (or its helpers)"),
    ]

    @classmethod
    def check(cls, index, registry) -> tuple[list[Finding], set[str]]:
        findings: list[Finding] = []
        seen: set[str] = set()  # names called in a pipeline: present in the tree (for LG003)
        roots = checked_elsewhere(registry)
        for pipeline in registry.pipelines:
            module, _, qualname = pipeline.root.partition(":")
            summary = index.modules.get(module)
            if summary is None:
                findings += cls._misnamed(index, pipeline.root, module)
                continue  # the root's module is not part of this lint
            named: set[str] = set()  # one finding per step of a root, at its first line
            for step in sorted(cls.steps(index, module, qualname, roots),
                               key=lambda s: (s.line, s.col, s.owner is not None)):
                seen.update(step.candidates)
                if step.covered or any(_registered(registry, c) for c in step.candidates) \
                        or step.name in named:
                    continue
                named.add(step.name)
                hint = pass_hint(step.name, pipeline.stage, "helper",
                                 source=_source(index, step.home or module))
                message = cls.MESSAGE if step.owner is None else cls.REF_MESSAGE
                findings.append(Finding(index.paths[module], step.line, step.col, cls.CODE,
                                        message.format(root=pipeline.root, name=step.name,
                                                       owner=step.owner or "", hint=_one_line(hint)),
                                        step.name, hint))
        for step in lookup_steps(index, registry):
            seen.add(step.name)
            if _registered(registry, step.name):
                continue
            hint = pass_hint(step.name, step.stage, "function", source=_source(index, step.module))
            findings.append(Finding(index.paths[step.module], step.line, step.col, cls.CODE,
                                    cls.LOOKUP_MESSAGE.format(driver=step.driver, name=step.name,
                                                              hint=_one_line(hint)),
                                    step.name, hint))
        findings += cls._new_modules(index, registry)
        return findings, seen

    @classmethod
    def steps(cls, index, module: str, qualname: str, roots: set[str] | frozenset[str] = frozenset()
              ) -> Iterator["Step"]:
        """Every step of one pipeline root, named as the registry is asked for it: each call in
        its own body, and each function it hands on without calling it (an argument,
        ``run_and_log("x", fn, gm)``; an element of a pass list it loops over). Shared with the
        scanner, so both name a step the same way."""
        summary = index.modules[module]
        owner = qualname.rpartition(".")[0]
        klass = owner if owner in summary["classes"] else ""
        for callee, line, col in summary["calls"].get(qualname, []):
            for covered, name, candidates, home in cls._callee_names(index, module, qualname,
                                                                      klass, callee, roots):
                yield Step(covered, name, candidates, home, line, col, None)
        for expr, line, col, given_to in summary.get("refs", {}).get(qualname, []):
            ref = index.expr_ref(module, qualname, expr, klass)
            if ref[0] != "func":
                continue  # a value, a class (isinstance), a module, or outside the tree
            if given_to is not None and given_to[0] == "none":
                given_to = None  # an element of a list / tuple display
            covered = (given_to is not None and _on_named_pass(index, given_to)) \
                or _is_root(index, ref, roots)
            identity = index.identity(ref[1], ref[2])
            home = ref[1] if is_torch_module(ref[1]) else ""
            to = f"passes '{_text(expr)}' to '{_text(given_to)}'" if given_to is not None \
                else f"lists '{_text(expr)}'"
            yield Step(covered, identity, [identity, qualified_name(ref[1], ref[2])], home,
                       line, col, to)

    @classmethod
    def _callee_names(cls, index, module: str, scope: str, klass: str, callee: list,
                      roots) -> list[tuple[bool, str, list[str], str]]:
        if callee[0] == "call" and _is_partial_call(callee):
            callee = callee[2][0]  # functools.partial(f, ...)(g): f runs
        if callee[0] == "call" and callee[1] == ["n", "getattr"] and len(callee[2]) >= 2 \
                and "getattr" not in index.modules[module]["imports"]:
            # getattr(self, name)(): the attribute each string ``name`` may be runs (a loop over
            # a tuple of method names); a name that cannot be read is reported as written
            obj, names = callee[2][0], index.strings(module, scope, callee[2][1], klass)
            if names and all(not isinstance(n, Unresolved) and n[0] == "str" for n in names) \
                    and obj[0] == "n":
                return [cls._name(index, module, scope, klass, ["n", f"{obj[1]}.{n[1]}"])
                        for n in names]
            text = f"getattr({_text(obj)}, {_text(callee[2][1])})"
            return [(False, text, [text], "")]
        if callee[0] == "sub":
            # PASSES["dedup"](g), PASSES a dict display: the function that entry holds runs
            made = index.values(module, scope, callee, klass)
            if made and all(not isinstance(v, Unresolved) and v[0] == "func" for v in made):
                return [(_is_root(index, v, roots), index.identity(v[1], v[2]),
                         [index.identity(v[1], v[2]), qualified_name(v[1], v[2])],
                         v[1] if is_torch_module(v[1]) else "") for v in made]
        while callee[0] == "call":
            callee = callee[1]  # make_pass()(g): named by the factory
        if callee[0] == "n":
            ref = index.expr_ref(module, scope, callee, klass)
            if _is_root(index, ref, roots):
                return [(True, "", [], "")]  # another root: checked as a root itself
            if ref[0] == "value":
                # A local bound to functions (``for p in (a, b): p(g)``): those functions run.
                made = [v for v in index.values(module, scope, callee, klass)]
                if made and all(not isinstance(v, Unresolved) and v[0] == "func"
                                and "<lambda>" not in v[2] for v in made):
                    return [(_is_root(index, v, roots), index.identity(v[1], v[2]),
                             [index.identity(v[1], v[2]), qualified_name(v[1], v[2])],
                             v[1] if is_torch_module(v[1]) else "") for v in made]
        return [cls._name(index, module, scope, klass, callee)]

    @classmethod
    def _name(cls, index, module: str, scope: str, klass: str, callee: list
              ) -> tuple[bool, str, list[str], str]:
        """(covered by an observer/pattern pass, the name to register, names that count, the
        torch module that defines the callee when known)."""
        if _on_named_pass(index, callee):
            return True, "", [], ""
        if callee[0] == "sub":  # OrderedSet[str](): the subscripted class is what is called
            callee = callee[1]
        text = _text(callee)
        leaf = text.rsplit(".", 1)[-1]
        ref = index.expr_ref(module, scope, callee, klass) if callee[0] in ("n", "sub") \
            else ("unknown", text)
        if ref[0] in ("unknown", "value") and callee[0] == "n" and "." in callee[1]:
            obj = _pass_object(index, module, scope, klass, *callee[1].rsplit(".", 1))
            if obj is not None:
                return (False, *obj)
        if ref[0] in ("class", "func", "instance") and ref[0] != "instance":
            identity = index.identity(ref[1], ref[2])
            home = ref[1] if is_torch_module(ref[1]) else ""
            return False, identity, [identity, qualified_name(ref[1], ref[2])], home
        if ref[0] == "ext" and ref[2]:
            identity = index.ref_identity(ref)
            if identity and not is_torch_module(ref[1]):
                return False, identity, [identity], ""
            return False, leaf, [leaf] + ([identity] if identity else []), ref[1]
        if "." not in text and hasattr(builtins, text):
            name = qualified_name("builtins", text)  # not defined or imported here: Python's own
            return False, name, [name], ""
        if not is_torch_module(module):
            # Outside torch a method of a value we cannot follow is named where it is called,
            # so it can never borrow the entry of a torch helper that shares its method name.
            name = qualified_name(module, f"{scope}.{text}")
            return False, name, [name], ""
        return False, leaf, [leaf, text], ""

    @classmethod
    def _misnamed(cls, index, root: str, module: str) -> list[Finding]:
        """The root's file is in the tree under another module name: say so, never skip it."""
        stem = module.rpartition(".")[2]
        tail = "/" + module.replace(".", "/") + ".py"
        return [Finding(path, 1, 1, cls.CODE, cls.UNNAMED_MESSAGE.format(root=root, module=name),
                        root)
                for name, path in index.paths.items()
                if name.endswith(stem) and name != module  # cheap test first: 3,000 modules
                and PurePath(path).as_posix().endswith(tail)]

    @classmethod
    def _new_modules(cls, index, registry) -> list[Finding]:
        packages = fx_pass_packages(registry)
        sources = {entry.source for entry in getattr(registry, "passes_in_range", registry.passes)
                   if entry.source}
        findings = []
        for module, path in sorted(index.paths.items()):
            package = next((p for p in packages if module.startswith(p + ".")), None)
            if package is None:
                continue
            source = _source(index, module)
            # A module directly in the package needs an entry of its own; one in a subpackage
            # (auto_chunker/, serialized_patterns/) is covered by an entry anywhere in it.
            inner = module[len(package) + 1:].split(".")
            if len(inner) > 1 or path.endswith("__init__.py"):
                prefix = "/".join([*package.split("."), inner[0]]) + "/"
                if any(s.startswith(prefix) for s in sources):
                    continue
            elif source in sources:
                continue
            findings.append(Finding(path, 1, 1, cls.CODE, cls.MODULE_MESSAGE.format(
                module=source, package=package.replace(".", "/")), source))
        return findings


def fx_pass_packages(registry) -> set[str]:
    """torch packages that hold FX-stage pipeline roots and no other kind
    (torch._inductor.fx_passes; not torch._inductor, which also holds the scheduler's)."""
    def package(pipeline) -> str:
        return pipeline.root.partition(":")[0].rpartition(".")[0]

    fx = {package(p) for p in registry.pipelines if p.stage in FX_STAGES}
    # torch's only: a project that declares its own pipeline registers its passes, but is not
    # asked to give every module of its package a registry source.
    return {p for p in fx - {package(p) for p in registry.pipelines if p.stage not in FX_STAGES}
            if is_torch_module(p)}


def _registered(registry, name: str) -> bool:
    return bool(name) and registry.match_pass(name) is not None


class LookupStep(NamedTuple):
    driver: str
    stage: str
    module: str
    name: str
    line: int
    col: int


def lookup_steps(index, registry) -> list[LookupStep]:
    """Passes run by name: a pipeline root or hooked driver that calls what it finds in its own
    module's ``globals()`` (comms.reorder_compute_and_comm_for_overlap runs each name of
    reorder_for_compute_comm_overlap_passes so) can run every module-level function of that module
    with the driver's own signature (``(snodes: list[BaseSchedulerNode]) ->
    list[BaseSchedulerNode]``): each is a pass. Only files whose text calls ``globals()`` are read."""
    import ast

    stages = {p.root: p.stage for p in registry.pipelines}
    stages.update({e.hook: e.stage for e in registry.passes if getattr(e, "hook", None)})
    steps: list[LookupStep] = []
    by_module: dict[str, list[str]] = {}
    for driver in sorted(stages):
        module, _, qualname = driver.partition(":")
        if module in index.paths and "." not in qualname:
            by_module.setdefault(module, []).append(qualname)
    for module, drivers in by_module.items():
        try:
            data = open(index.paths[module], "rb").read()
        except OSError:
            continue
        if b"globals()" not in data:
            continue
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError, RecursionError):
            continue  # LG900 reports a file that does not parse
        functions = {n.name: n for n in tree.body
                     if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        for qualname in drivers:
            driver = functions.get(qualname)
            if driver is None or not any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                                         and n.func.id == "globals" for n in ast.walk(driver)):
                continue
            shape = _signature(driver)
            for name, function in functions.items():
                if name != qualname and _signature(function) == shape:
                    steps.append(LookupStep(f"{module}:{qualname}", stages[f"{module}:{qualname}"],
                                            module, name, function.lineno, function.col_offset + 5))
    return steps


def _signature(function) -> tuple:
    """(required parameters, the first one's annotation, the return annotation), as written."""
    import ast

    params = [*function.args.posonlyargs, *function.args.args]
    first = params[0].annotation if params else None
    return (len(params) - len(function.args.defaults),
            ast.unparse(first) if first is not None else None,
            ast.unparse(function.returns) if function.returns is not None else None)


def checked_elsewhere(registry) -> set[str]:
    """Definitions a pipeline may call without an entry of their own: the other pipeline roots
    (their own steps are checked) and the functions registry entries hook (the guard intercepts
    the pass there, under that entry's name: memory_plan_reuse is ReuseLine's hook)."""
    hooks = {entry.hook for entry in registry.passes if getattr(entry, "hook", None)}
    return {p.root for p in registry.pipelines} | {h for h in hooks if ":" in h}


def _is_root(index, ref, roots) -> bool:
    """Is this definition a pipeline root or a hooked function (checked elsewhere)?"""
    if ref[0] not in ("func", "class") or not roots:
        return False
    from lint_rules.index import real_module

    name = f"{real_module(ref[1])}:{ref[2]}"
    # Constructing a class whose __init__ is a root (Scheduler(...)) runs that root.
    return name in roots or (ref[0] == "class" and f"{name}.__init__" in roots)


# Registry base roles whose instances are passes LG001 names itself (an observer, a pattern pass,
# a pass class): a method called on one of them is covered by that pass's own name.
_NAMED_ROLES = ("observer", "pattern_pass", "pass_class")


def _pass_object(index, module: str, scope: str, klass: str, receiver: str, method: str
                 ) -> tuple[str, list[str], str] | None:
    """``norm_fusion_pass.apply(g)`` in a root, ``norm_fusion_pass`` a module-level object of a
    class of the tree that no registry base makes a pass, ``apply`` a method of that class taking
    one FX graph: the root runs that object as a pass, so the step is the object, named as pass
    objects are (its variable: the identity, its qualified name), never by the method, whose name
    (``apply``) other passes' methods share. (name, candidates, torch home) or None when the
    receiver is not such an object (``V.set_fake_mode(m)``: no graph goes in)."""
    ref = index.expr_ref(module, scope, ["n", receiver], klass)
    if ref[0] != "value" or ref[2] != "":
        return None  # a local (an updater made in the root) or anything but a module-level object
    made = index.values(module, scope, ["n", receiver], klass)
    if not made or any(isinstance(v, Unresolved) or v[0] != "instance"
                       or index.class_info(v[1], v[2]) is None for v in made):
        return None
    if any(index.pass_base(v[1], v[2], role) for v in made for role in _NAMED_ROLES):
        return None
    if not all(_takes_graph(index, v[1], v[2], method) for v in made):
        return None
    assigns = index.modules[ref[1]]["assigns"].get("", {})
    variable = next((name for name, binding in assigns.items() if binding is ref[3]), None)
    if variable is None:
        return None
    identity = index.identity(ref[1], variable)
    from lint_rules.index import real_module

    return identity, [identity, qualified_name(real_module(ref[1]), variable)], \
        ref[1] if is_torch_module(ref[1]) else ""


def _takes_graph(index, module: str, qualname: str, method: str) -> bool:
    """Does this class (or a class it derives from) define ``method`` taking one FX graph?"""
    chain = [("class", module, qualname), *index.ancestors(module, qualname)[0]]
    return any(method in (index.class_info(r[1], r[2]) or {}).get("takes_graph", ())
               for r in chain if r[0] == "class")


def _is_partial_call(expr: list) -> bool:
    return expr[0] == "call" and expr[1][0] == "n" and bool(expr[2]) \
        and expr[1][1].rsplit(".", 1)[-1] == "partial"


def _on_named_pass(index, callee: list) -> bool:
    """Is this call made on (or is it) an observer / pattern-pass construction?"""
    roles = index.vocab.short_names
    node = callee
    while node and node[0] in ("a", "call", "n"):
        if node[0] == "n":
            parts = node[1].split(".")
            return any(p in roles for p in parts[:-1]) or parts[-1] in roles
        if node[0] == "call" and _text(node[1]).rsplit(".", 1)[-1] in roles:
            return True
        node = node[1]
    return False


def _source(index, module: str) -> str:
    """The registry ``source`` spelling of a module: ``torch/_inductor/fx_passes/x.py``."""
    path = index.paths.get(module, "")
    relative = module.replace(".", "/")
    suffix = "/__init__.py" if path.endswith("__init__.py") else ".py"
    return relative + suffix


def _text(expr: list) -> str:
    from lint_rules.index import text_of

    return text_of(expr)


def _one_line(hint: str) -> str:
    from lite_guard.hints import one_line

    return one_line(hint)
