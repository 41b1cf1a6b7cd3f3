#!/usr/bin/env python3
"""List every Inductor / AOTAutograd graph pass and pass-gating config in a torch tree.

Reads the torch sources with ``ast`` only: it never imports torch, so it can scan any
checkout or unpacked wheel (``--torch-root``), not just the installed one.

What it finds (each a *candidate* with name, kind, source file and line):

* ``observer``    every name given to ``GraphTransformObserver(gm, "name", ...)`` (positional or
                  ``pass_name=``), including f-strings and ``"a" + b`` (unresolvable parts become
                  ``*``), names bound by ``for x in LIST`` / ``enumerate(LIST)`` over a module-level
                  list literal, constants assigned to the variable in the same function, and call
                  sites of thin wrappers that forward a parameter as the pass name
                  (e.g. ``utils.pass_execution_and_save``).
* ``pattern``     every ``PatternMatcherPass(...)`` instance: its ``pass_name=`` (resolved through
                  module-level name lists), else the variable / attribute / list it is stored in,
                  qualified ``module_stem.var`` (or ``module_stem.function.var``) when not unique;
                  plus every group-batch fusion registered with ``@register_fusion("name")``.
* ``class``       every subclass (transitively) of CustomGraphPass / CustomGraphModulePass /
                  CustomSchedulerPass / CustomPartitionerFn outside the interface module.
* ``custom_hook`` config keys that install user passes (``*custom*pass*``, ``custom_partitioner_fn``).
* ``scheduler``   reorder/sink/raise functions in the scheduler-level modules and every callee
                  whose result replaces ``self.nodes`` (or that runs as a statement) in
                  ``Scheduler._init``.
* ``config``      keys of torch/_inductor/config.py and torch/_functorch/config.py (nested classes
                  written dotted, e.g. ``triton.reorder_for_reducing_graph_partitions``) whose name
                  says they gate a pass, reorder, fusion, DCE, buffer reuse, layout/padding,
                  freezing, decomposition or numerics; ``CONFIG_NOT_GATING`` lists the matches
                  that were reviewed and are only tuning knobs / debug flags.

Modes:
    (default)  print a TOML skeleton of candidates missing from the registry
    --all      print a TOML skeleton of every candidate
    --list     print the candidates as a table (``--json`` for JSON)
    --check    exit 1 and list candidates missing from the registry and registry entries (for
               this torch version) that no longer exist in the tree; exit 0 when in sync
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import sysconfig
import time
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_REGISTRY = REPO_ROOT / "lite_guard" / "registries" / "torch_inductor.toml"

# Directories (relative to the torch package) that are walked for passes.
SCAN_DIRS = ("_inductor", "_functorch", "fx/passes")
CONFIG_FILES = {"inductor": "_inductor/config.py", "functorch": "_functorch/config.py"}
# Modules whose reorder_*/sink_*/raise_* functions are scheduler-level passes.
SCHEDULER_MODULES = ("_inductor/scheduler.py", "_inductor/comms.py", "_inductor/memory.py")
SCHEDULER_FUNC = re.compile(r"^(reorder|sink|raise|maybe_reorder)_")
OBSERVER_CLASSES = {"GraphTransformObserver", "GraphTransformObserverBase"}
PATTERN_PASS_CLASSES = {"PatternMatcherPass", "PatternMatcherPassBase"}
CUSTOM_PASS_BASES = {"CustomGraphPass", "CustomGraphModulePass", "CustomSchedulerPass",
                     "CustomPartitionerFn", "CustomInferenceAwareGraphPass"}
CUSTOM_PASS_INTERFACE_MODULE = "_inductor/custom_graph_pass.py"
CUSTOM_HOOK_KEY = re.compile(r"(custom.*pass|custom_partitioner_fn)$")

# Which config keys gate a pass: one list, shared with the lint rules so both agree.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout, too
from lint_rules.inductor_names import CONFIG_GATING, CONFIG_NOT_GATING  # noqa: E402


@dataclass
class Candidate:
    name: str
    kind: str
    source: str
    line: int
    stage: str = ""
    module: str = ""  # config candidates: inductor | functorch
    default: str = ""  # config candidates: default value expression
    note: str = ""


@dataclass
class ScanResult:
    torch_root: str
    torch_version: str
    candidates: dict[str, Candidate] = field(default_factory=dict)
    configs: dict[tuple[str, str], Candidate] = field(default_factory=dict)
    all_config_keys: dict[str, set[str]] = field(default_factory=dict)
    defined_names: dict[str, set[str]] = field(default_factory=dict)  # source -> defs/classes
    string_names: set[str] = field(default_factory=set)
    unresolved: list[str] = field(default_factory=list)

    def add(self, cand: Candidate) -> None:
        previous = self.candidates.get(cand.name)
        if previous is None:
            self.candidates[cand.name] = cand
        elif cand.kind != previous.kind and cand.kind not in previous.note:
            # same name used by several mechanisms (e.g. an observer named like its pattern pass)
            previous.note = (previous.note + f"; also {cand.kind} at {cand.source}:{cand.line}").lstrip("; ")


# ---------------------------------------------------------------------------------------------
def find_torch_root() -> Path:
    site = Path(sysconfig.get_paths()["purelib"])
    root = site / "torch"
    if not root.is_dir():
        raise SystemExit(f"no torch package under {site}; pass --torch-root PATH")
    return root


def read_torch_version(root: Path) -> str:
    version_file = root / "version.py"
    if version_file.exists():
        match = re.search(r"__version__\s*=\s*['\"]([^'\"]+)['\"]", version_file.read_text())
        if match:
            return match.group(1)
    return "unknown"


def stage_for(source: str, name: str = "") -> str:
    s = source
    if "/_functorch/" in s or s.startswith("torch/_functorch"):
        return "aot"
    if s.endswith(("pre_grad.py", "split_cat.py", "efficient_conv_bn_eval.py", "misc_patterns.py")):
        return "pre_grad"
    if s.endswith(("joint_graph.py", "replace_random.py", "pad_mm.py", "fuse_attention.py",
                   "binary_folding.py", "freezing_patterns.py", "auto_chunker/__init__.py")):
        return "joint_graph"
    if "/fx_passes/" in s or s.endswith("pattern_matcher.py"):
        return "post_grad"
    if s.endswith(("scheduler.py", "comms.py", "memory.py")):
        return "scheduler"
    if "/codegen/" in s:
        return "codegen"
    return "lowering"


def _const_str(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _call_name(func: ast.AST) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


class _Module:
    """One parsed file plus the lookups the resolvers need."""

    def __init__(self, path: Path, rel: str):
        self.path, self.rel = path, rel
        self.stem = path.stem if path.stem != "__init__" else path.parent.name
        self.tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        self.parents: dict[ast.AST, ast.AST] = {}
        for parent in ast.walk(self.tree):
            for child in ast.iter_child_nodes(parent):
                self.parents[child] = parent
        # module-level list/tuple literals of strings
        self.str_lists: dict[str, list[str]] = {}
        self.list_lens: dict[str, int] = {}
        for stmt in self.tree.body:
            targets, value = _assign_parts(stmt)
            if isinstance(value, (ast.List, ast.Tuple)):
                for t in targets:
                    if isinstance(t, ast.Name):
                        self.list_lens[t.id] = len(value.elts)
                        strs = [_const_str(e) for e in value.elts]
                        if strs and all(s is not None for s in strs):
                            self.str_lists[t.id] = strs  # type: ignore[assignment]

    def enclosing(self, node: ast.AST, kinds=(ast.FunctionDef, ast.AsyncFunctionDef)):
        cur = self.parents.get(node)
        while cur is not None and not isinstance(cur, kinds):
            cur = self.parents.get(cur)
        return cur


def _assign_parts(stmt: ast.AST) -> tuple[list[ast.AST], ast.AST | None]:
    if isinstance(stmt, ast.Assign):
        return list(stmt.targets), stmt.value
    if isinstance(stmt, ast.AnnAssign):
        return [stmt.target], stmt.value
    return [], None


# ---- name resolution for observer / pattern names --------------------------------------------
def _loop_binding(mod: _Module, node: ast.AST, var: str) -> ast.For | None:
    cur = mod.parents.get(node)
    while cur is not None:
        if isinstance(cur, (ast.For, ast.comprehension)):
            tgt = cur.target
            names = [tgt] if isinstance(tgt, ast.Name) else list(getattr(tgt, "elts", []))
            if any(isinstance(n, ast.Name) and n.id == var for n in names):
                return cur  # type: ignore[return-value]
        cur = mod.parents.get(cur)
    return None


def _resolve_var(mod: _Module, node: ast.AST, var: str, depth: int = 0) -> tuple[list[str] | None, str]:
    """Values a Name can take at `node`: a list of strings, or None (+ a note) if unknown."""
    loop = _loop_binding(mod, node, var)
    if loop is not None:
        it = loop.iter
        is_index = False
        if isinstance(it, ast.Call) and _call_name(it.func) == "enumerate" and it.args:
            tgt = loop.target
            if isinstance(tgt, ast.Tuple) and isinstance(tgt.elts[0], ast.Name) and tgt.elts[0].id == var:
                is_index = True
            it = it.args[0]
        if isinstance(it, ast.Name):
            if is_index and it.id in mod.list_lens:
                return [str(i) for i in range(mod.list_lens[it.id])], ""
            if not is_index and it.id in mod.str_lists:
                return list(mod.str_lists[it.id]), ""
        return None, f"loop over {ast.unparse(it)}"
    func = mod.enclosing(node)
    if func is not None:
        params = [a.arg for a in func.args.args + func.args.kwonlyargs + func.args.posonlyargs]
        if var in params:
            return None, f"parameter {var!r} of {func.name}"
        values: list[str] = []
        notes: list[str] = []
        for sub in ast.walk(func):
            targets, value = _assign_parts(sub)
            if any(isinstance(t, ast.Name) and t.id == var for t in targets) and value is not None \
                    and depth < 3:
                vals, note = _resolve_str_expr(mod, sub, value, depth + 1)
                values += vals
                notes.append(note)
        if values:
            return values, "; ".join(n for n in notes if n)
    return None, f"unresolved {var!r}"


def _resolve_str_expr(mod: _Module, node: ast.AST, expr: ast.AST, depth: int = 0) -> tuple[list[str], str]:
    """Possible strings of an expression; unresolvable parts become '*'."""
    s = _const_str(expr)
    if s is not None:
        return [s], ""
    if isinstance(expr, ast.Name):
        values, note = _resolve_var(mod, node, expr.id, depth)
        return (values, note) if values is not None else (["*"], note)
    if isinstance(expr, ast.JoinedStr):
        parts: list[list[str]] = []
        notes = []
        for v in expr.values:
            if isinstance(v, ast.Constant):
                parts.append([str(v.value)])
            elif isinstance(v, ast.FormattedValue):
                vals, note = _resolve_str_expr(mod, node, v.value, depth)
                parts.append(vals)
                notes.append(note)
        out = [""]
        for p in parts:
            out = [a + b for a in out for b in p]
        return out, "; ".join(n for n in notes if n)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        left, ln = _resolve_str_expr(mod, node, expr.left, depth)
        right, rn = _resolve_str_expr(mod, node, expr.right, depth)
        return [a + b for a in left for b in right], "; ".join(n for n in (ln, rn) if n)
    if isinstance(expr, ast.IfExp):
        a, an = _resolve_str_expr(mod, node, expr.body, depth)
        b, bn = _resolve_str_expr(mod, node, expr.orelse, depth)
        return a + b, "; ".join(n for n in (an, bn) if n)
    return ["*"], f"unresolved expression {ast.unparse(expr)}"


def _collapse_star(name: str) -> str:
    return re.sub(r"\*+", "*", name)


# ---- the scanner -------------------------------------------------------------------------------
_DEF_RE = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)|^(\w+)\s*(?::[^=\n]*)?=(?!=)", re.M)


def _defined(text: str) -> set[str]:
    """Functions, classes (any depth) and module-level assignments of a source file."""
    return {a or b for a, b in _DEF_RE.findall(text)}


_INTERESTING = re.compile(r"GraphTransformObserver|PatternMatcherPass|register_fusion|class \w+\([^)]*Custom"
                          r"|pass_execution_and_save")


def scan(torch_root: Path) -> ScanResult:
    torch_root = torch_root.resolve()
    site = torch_root.parent
    result = ScanResult(str(torch_root), read_torch_version(torch_root))
    modules: list[_Module] = []
    for sub in SCAN_DIRS:
        base = torch_root / sub
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(site).as_posix()
            text = path.read_text(encoding="utf-8", errors="replace")
            result.defined_names[rel] = _defined(text)
            # parse only files that can hold a candidate (parsing everything triples the time)
            if not (rel.endswith(SCHEDULER_MODULES) or _INTERESTING.search(text)):
                continue
            try:
                modules.append(_Module(path, rel))
            except SyntaxError as exc:  # pragma: no cover - broken tree
                result.unresolved.append(f"{rel}: syntax error {exc}")
    _scan_observers(modules, result)
    _scan_pattern_passes(modules, result)
    _scan_custom_pass_classes(modules, result)
    _scan_scheduler(modules, result)
    _scan_configs(torch_root, site, result)
    return result


def _observer_name_arg(call: ast.Call) -> ast.AST | None:
    for kw in call.keywords:
        if kw.arg == "pass_name":
            return kw.value
    return call.args[1] if len(call.args) >= 2 else None


def _scan_observers(modules: list[_Module], result: ScanResult) -> None:
    wrappers: dict[str, int] = {}  # function name -> index of the parameter used as the pass name
    sites: list[tuple[_Module, ast.Call, ast.AST]] = []
    for mod in modules:
        if mod.rel.endswith("graph_transform_observer.py"):
            continue
        for node in ast.walk(mod.tree):
            if isinstance(node, ast.Call) and _call_name(node.func) in OBSERVER_CLASSES:
                arg = _observer_name_arg(node)
                if arg is not None:
                    sites.append((mod, node, arg))
    for mod, call, arg in sites:
        names, note = _resolve_str_expr(mod, call, arg)
        func = mod.enclosing(call)
        if isinstance(arg, ast.Name) and func is not None and note.startswith("parameter"):
            params = [a.arg for a in func.args.posonlyargs + func.args.args]
            if arg.id in params:
                wrappers[func.name] = params.index(arg.id)
                continue
        if note.startswith("loop over config."):
            # names come from a config dict (e.g. post_grad_fusion_options); those passes are
            # PatternMatcherPass instances named the same way, found by _scan_pattern_passes.
            result.unresolved.append(f"{mod.rel}:{call.lineno}: observer name from {note} (covered by pattern names)")
            continue
        if note.startswith("assigned in"):
            names = [n for n in names]  # constant fallbacks (e.g. "pattern_matcher")
        for name in names:
            name = _collapse_star(name)
            if name == "*":
                result.unresolved.append(f"{mod.rel}:{call.lineno}: observer name {ast.unparse(arg)} ({note})")
                continue
            result.add(Candidate(name, "observer", mod.rel, call.lineno, stage_for(mod.rel, name),
                                 note=note if "*" in name else ""))
    # one level of wrappers: f(..., "name") where f forwards that parameter as the pass name
    for mod in modules:
        for node in ast.walk(mod.tree):
            if isinstance(node, ast.Call) and _call_name(node.func) in wrappers:
                idx = wrappers[_call_name(node.func)]
                if idx < len(node.args):
                    names, note = _resolve_str_expr(mod, node, node.args[idx])
                    for name in names:
                        name = _collapse_star(name)
                        if name != "*":
                            result.add(Candidate(name, "observer", mod.rel, node.lineno,
                                                 stage_for(mod.rel, name),
                                                 note=f"via {_call_name(node.func)}"))


def _scan_pattern_passes(modules: list[_Module], result: ScanResult) -> None:
    found: list[tuple[_Module, ast.Call, str, str, str]] = []  # mod, call, var, func, explicit
    for mod in modules:
        for node in ast.walk(mod.tree):
            if not (isinstance(node, ast.Call) and _call_name(node.func) in PATTERN_PASS_CLASSES):
                continue
            if mod.rel.endswith("pattern_matcher.py"):
                continue  # isinstance checks / class definition site
            explicit = next((kw.value for kw in node.keywords if kw.arg == "pass_name"), None)
            if explicit is None and node.args:
                explicit = node.args[0]
            if explicit is not None:
                names, note = _resolve_str_expr(mod, node, explicit)
                for name in names:
                    if name != "*":
                        result.add(Candidate(name, "pattern", mod.rel, node.lineno,
                                             stage_for(mod.rel, name)))
                    else:
                        result.unresolved.append(f"{mod.rel}:{node.lineno}: pattern pass_name {note}")
                continue
            # unnamed: the variable / attribute / list it is stored in
            var = ""
            parent = mod.parents.get(node)
            if isinstance(parent, (ast.List, ast.Tuple)):
                parent = mod.parents.get(parent)
            if isinstance(parent, ast.Call) and _call_name(parent.func) == "append" \
                    and isinstance(parent.func, ast.Attribute):
                var = ast.unparse(parent.func.value).split(".")[-1]
            else:
                targets, _ = _assign_parts(parent) if parent is not None else ([], None)
                for t in targets:
                    if isinstance(t, ast.Name):
                        var = t.id
                    elif isinstance(t, ast.Attribute):
                        var = t.attr
            if not var:
                result.unresolved.append(f"{mod.rel}:{node.lineno}: PatternMatcherPass() not stored in a name")
                continue
            func = mod.enclosing(node)
            found.append((mod, node, var, func.name if func is not None else "", ""))
    # qualify: var alone if unique across modules, else module_stem.var, else module_stem.func.var
    by_var: dict[str, set[str]] = {}
    by_mod_var: dict[tuple[str, str], set[str]] = {}
    for mod, _, var, func, _ in found:
        by_var.setdefault(var, set()).add(mod.rel)
        by_mod_var.setdefault((mod.rel, var), set()).add(func)
    for mod, node, var, func, _ in found:
        if len(by_var[var]) == 1 and len(by_mod_var[(mod.rel, var)]) == 1:
            name = var
        elif len(by_mod_var[(mod.rel, var)]) == 1:
            name = f"{mod.stem}.{var}"
        else:
            name = f"{mod.stem}.{func}.{var}" if func else f"{mod.stem}.{var}"
        if name not in result.candidates:
            result.add(Candidate(name, "pattern", mod.rel, node.lineno, stage_for(mod.rel, name),
                                 note="unnamed PatternMatcherPass (observed as 'pattern_matcher')"))
    # group-batch fusions: @register_fusion("name", pre_grad=...)
    for mod in modules:
        for node in ast.walk(mod.tree):
            if not isinstance(node, ast.ClassDef):
                continue
            for deco in node.decorator_list:
                if isinstance(deco, ast.Call) and _call_name(deco.func) == "register_fusion" and deco.args:
                    name = _const_str(deco.args[0])
                    if name is None:
                        continue
                    pre = True
                    for kw in deco.keywords:
                        if kw.arg == "pre_grad" and isinstance(kw.value, ast.Constant):
                            pre = bool(kw.value.value)
                    result.add(Candidate(name, "class", mod.rel, node.lineno,
                                         "pre_grad" if pre else "post_grad",
                                         note=f"group-batch fusion {node.name}"))


def _scan_custom_pass_classes(modules: list[_Module], result: ScanResult) -> None:
    classes: dict[str, tuple[_Module, ast.ClassDef]] = {}
    bases: dict[str, set[str]] = {}
    for mod in modules:
        for node in ast.walk(mod.tree):
            if isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, (mod, node))
                bases.setdefault(node.name, set()).update(_call_name(b) for b in node.bases)
    derived = set(CUSTOM_PASS_BASES)
    changed = True
    while changed:
        changed = False
        for cls, bs in bases.items():
            if cls not in derived and bs & derived:
                derived.add(cls)
                changed = True
    for cls in sorted(derived):
        if cls not in classes:
            continue
        mod, node = classes[cls]
        if mod.rel.endswith(CUSTOM_PASS_INTERFACE_MODULE):
            continue
        result.add(Candidate(cls, "class", mod.rel, node.lineno, stage_for(mod.rel, cls),
                             note="custom pass subclass"))


def _scan_scheduler(modules: list[_Module], result: ScanResult) -> None:
    for mod in modules:
        if not mod.rel.endswith(SCHEDULER_MODULES):
            continue
        for node in ast.walk(mod.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and SCHEDULER_FUNC.match(node.name):
                if node.name == "reorder_loops_by_dep_pair":
                    continue  # loop-order helper of a node, not a graph-level pass
                result.add(Candidate(node.name, "scheduler", mod.rel, node.lineno, "scheduler"))
        if not mod.rel.endswith("_inductor/scheduler.py"):
            continue
        for cls in mod.tree.body:
            if not (isinstance(cls, ast.ClassDef) and cls.name == "Scheduler"):
                continue
            init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "_init"), None)
            if init is None:
                continue
            for node in ast.walk(init):
                call = None
                targets, value = _assign_parts(node)
                if any(ast.unparse(t) == "self.nodes" for t in targets) and isinstance(value, ast.Call):
                    call = value
                elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                    call = node.value
                if call is None:
                    continue
                func = call.func
                owner = ast.unparse(func.value) if isinstance(func, ast.Attribute) else ""
                name = _call_name(func)
                if not name or owner in ("config", "metrics", "V.debug", "V.graph") or name in (
                        "sorted", "list", "__init__", "add_row", "update", "log_ir_pre_fusion",
                        "log_ir_post_fusion", "shutdown_instance", "debug_draw_graph", "graph_diagram",
                        "insert_memory_check_nodes", "prune_deps", "schedule", "trace_structured",
                        "super"):
                    continue
                if owner.startswith("torch.") or owner.endswith("get_metric_table"):
                    continue
                result.add(Candidate(name, "scheduler", mod.rel, call.lineno, "scheduler",
                                     note="step of Scheduler._init"))


def _config_keys(path: Path) -> list[tuple[str, int, str, str]]:
    """(dotted key, line, default source, annotation source) for every config assignment."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: list[tuple[str, int, str, str]] = []

    def walk(body, prefix):
        for node in body:
            if isinstance(node, ast.ClassDef):
                walk(node.body, prefix + node.name + ".")
            elif isinstance(node, ast.If):
                walk(node.body, prefix)
                walk(node.orelse, prefix)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets, value = _assign_parts(node)
                ann = ast.unparse(node.annotation) if isinstance(node, ast.AnnAssign) else ""
                for t in targets:
                    if isinstance(t, ast.Name) and not (prefix == "" and t.id.startswith("__")):
                        out.append((prefix + t.id, node.lineno,
                                    ast.unparse(value) if value is not None else "", ann))

    walk(tree.body, "")
    return out


def _scan_configs(torch_root: Path, site: Path, result: ScanResult) -> None:
    for module, rel in CONFIG_FILES.items():
        path = torch_root / rel
        if not path.exists():
            continue
        source = path.relative_to(site).as_posix()
        keys = _config_keys(path)
        result.all_config_keys[module] = {k for k, *_ in keys}
        for key, line, default, ann in keys:
            leaf = key.rsplit(".", 1)[-1]
            if key.startswith("_") and key not in ("_fuse_ddp_communication", "_micro_pipeline_tp",
                                                   "_pre_fusion_custom_pass", "_post_fusion_custom_pass"):
                continue
            if CUSTOM_HOOK_KEY.search(leaf):
                result.add(Candidate(key, "custom_hook", source, line, _hook_stage(key, module),
                                     note=f"{module} config hook"))
                continue
            if key in CONFIG_NOT_GATING or f"{module}:{key}" in CONFIG_NOT_GATING \
                    or not CONFIG_GATING.search(key):
                continue
            result.configs[(module, key)] = Candidate(key, "config", source, line, module=module,
                                                      default=default)


def _hook_stage(key: str, module: str) -> str:
    if module == "functorch" or key == "custom_partitioner_fn":
        return "aot"
    if key.startswith("pre_grad"):
        return "pre_grad"
    if key.startswith("joint"):
        return "joint_graph"
    if key.startswith("post_grad"):
        return "post_grad"
    return "scheduler"


# ---- registry comparison ----------------------------------------------------------------------
def load_registry(path: Path) -> dict:
    with open(path, "rb") as fh:
        return tomllib.load(fh)


def _version_matches(spec: str, version: str) -> bool:
    if not spec:
        return True
    try:
        from packaging.specifiers import SpecifierSet
        from packaging.version import Version
    except ImportError:  # pragma: no cover - packaging ships with the venv
        return True
    release = Version(version).release if version != "unknown" else None
    if release is None:
        return True
    return Version(".".join(map(str, release))) in SpecifierSet(spec)


def _entry_exists(entry: dict, result: ScanResult) -> bool:
    name, kind = entry["name"], entry.get("kind", "function")
    if name in result.candidates:
        return True
    if kind in ("custom_hook", "config"):
        return any(name in keys for keys in result.all_config_keys.values())
    source = entry.get("source", "")
    leaf = name.rsplit(".", 1)[-1]
    if source:
        if source not in result.defined_names:  # outside SCAN_DIRS, e.g. torch/fx/experimental
            path = Path(result.torch_root).parent / source
            result.defined_names[source] = _defined(path.read_text(encoding="utf-8")) if path.exists() else set()
        return leaf in result.defined_names[source]
    return any(leaf in names for names in result.defined_names.values())


def compare(result: ScanResult, registry: dict, extra: list[dict] = ()) -> tuple[list[str], list[str]]:
    """(missing from registry, registered but gone from the tree) for this torch version.

    ``extra`` registries (the other shipped files) count as registering a tree name, but only
    ``registry`` itself is checked for stale entries: the others may hold names that are not
    torch's (e.g. the lite compiler's own guard hooks).
    """
    passes = registry.get("pass", [])
    configs = registry.get("config", [])
    version = result.torch_version
    reg_names = {p["name"]: p for p in passes}
    reg_keys = {(c.get("module", "inductor"), c["key"]): c for c in configs}
    for other in extra:
        for p in other.get("pass", []):
            reg_names.setdefault(p["name"], p)
        for c in other.get("config", []):
            reg_keys.setdefault((c.get("module", "inductor"), c["key"]), c)
    own_keys = {(c.get("module", "inductor"), c["key"]): c for c in configs}
    missing, stale = [], []
    for name, cand in sorted(result.candidates.items()):
        entry = reg_names.get(name)
        if entry is None:
            missing.append(f"pass {name!r} ({cand.kind}, {cand.source}:{cand.line})")
        elif not _version_matches(entry.get("torch", ""), version):
            missing.append(f"pass {name!r} is registered with torch = {entry['torch']!r}, which"
                           f" excludes {version}, but exists in the tree ({cand.source}:{cand.line})")
    for (module, key), cand in sorted(result.configs.items()):
        if (module, key) in reg_keys:
            continue
        # a gating key may be registered as a pass-level custom hook / config-kind pass instead
        if key in reg_names:
            continue
        missing.append(f"config {module}:{key} ({cand.source}:{cand.line}, default {cand.default})")
    for entry in passes:
        if not _version_matches(entry.get("torch", ""), version):
            continue
        if not _entry_exists(entry, result):
            stale.append(f"pass {entry['name']!r} ({entry.get('kind', 'function')}, "
                         f"{entry.get('source', '?')}) not found in the tree")
    for (module, key), entry in own_keys.items():
        if not _version_matches(entry.get("torch", ""), version):
            continue
        if key not in result.all_config_keys.get(module, set()):
            stale.append(f"config {module}:{key} not found in torch/{CONFIG_FILES[module]}")
    return missing, stale


# ---- output -----------------------------------------------------------------------------------
def _toml_str(s: str) -> str:
    return json.dumps(s)


def skeleton(result: ScanResult, registry: dict | None, everything: bool) -> str:
    reg_names = {p["name"] for p in (registry or {}).get("pass", [])}
    reg_keys = {(c.get("module", "inductor"), c["key"]) for c in (registry or {}).get("config", [])}
    lines = [f"# candidates from {result.torch_root} (torch {result.torch_version})",
             "# review every TODO: lite flag, gated_by, torch range and why", ""]
    for name, cand in sorted(result.candidates.items(), key=lambda kv: (kv[1].stage, kv[0])):
        if not everything and name in reg_names:
            continue
        lines += ["[[pass]]", f"name = {_toml_str(name)}", f"stage = {_toml_str(cand.stage or 'post_grad')}",
                  'lite = "never"  # TODO', f"kind = {_toml_str(cand.kind)}",
                  f"source = {_toml_str(cand.source)}", "gated_by = []  # TODO",
                  f"why = {_toml_str('TODO' + (': ' + cand.note if cand.note else ''))}", ""]
    for (module, key), cand in sorted(result.configs.items()):
        if not everything and ((module, key) in reg_keys or key in reg_names):
            continue
        lines += ["[[config]]", f"key = {_toml_str(key)}", f"module = {_toml_str(module)}",
                  'kind = "pass_gate"  # TODO', f"lite_value = false  # TODO (default: {cand.default})",
                  'why = "TODO"', ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--torch-root", type=Path, help="torch package dir (default: installed)")
    parser.add_argument("--registry", type=Path, default=DEFAULT_REGISTRY,
                        help="registry checked both ways (default: the shipped torch_inductor.toml)")
    parser.add_argument("--also", type=Path, action="append", default=None, metavar="PATH",
                        help="other registry whose names count as registered (repeatable;"
                             " default: the other shipped registries next to --registry)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 if tree and registry differ")
    mode.add_argument("--list", action="store_true", help="print the candidates")
    mode.add_argument("--all", action="store_true", help="TOML skeleton of every candidate")
    parser.add_argument("--json", action="store_true", help="with --list: JSON output")
    parser.add_argument("-v", "--verbose", action="store_true", help="also print unresolved sites")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    root = args.torch_root or find_torch_root()
    if not (root / "_inductor").is_dir():
        print(f"error: {root} is not a torch package (no _inductor/)", file=sys.stderr)
        return 2
    result = scan(root)
    elapsed = time.perf_counter() - start

    registry = None
    extra: list[dict] = []
    also = args.also
    if also is None:
        also = [p for p in sorted(args.registry.parent.glob("*.toml"))
                if p.resolve() != args.registry.resolve()]
    try:
        if args.registry.exists():
            registry = load_registry(args.registry)
        extra = [load_registry(p) for p in also]
    except (tomllib.TOMLDecodeError, OSError) as exc:
        print(f"error: cannot read registry: {exc}", file=sys.stderr)
        return 2
    if registry is not None:
        # names registered by the other registries are not missing either
        merged = {"pass": list(registry.get("pass", [])), "config": list(registry.get("config", []))}
        for other in extra:
            merged["pass"] += other.get("pass", [])
            merged["config"] += other.get("config", [])
    else:
        merged = None

    if args.list:
        if args.json:
            print(json.dumps({
                "torch_root": result.torch_root, "torch_version": result.torch_version,
                "passes": [asdict(c) for c in result.candidates.values()],
                "configs": [asdict(c) for c in result.configs.values()],
                "unresolved": result.unresolved,
            }, indent=1))
        else:
            for name, c in sorted(result.candidates.items(), key=lambda kv: (kv[1].kind, kv[0])):
                print(f"{c.kind:12} {c.stage:11} {name:60} {c.source}:{c.line}  {c.note}")
            for (module, key), c in sorted(result.configs.items()):
                print(f"{'config':12} {module:11} {key:60} {c.source}:{c.line}  default={c.default}")
        if args.verbose:
            print("\n".join("unresolved: " + u for u in result.unresolved), file=sys.stderr)
        print(f"# {len(result.candidates)} passes, {len(result.configs)} configs in {elapsed:.2f}s",
              file=sys.stderr)
        return 0

    if args.check:
        if registry is None:
            print(f"error: registry {args.registry} does not exist", file=sys.stderr)
            return 2
        missing, stale = compare(result, registry, extra)
        for m in missing:
            print(f"not in registry: {m}")
        for s in stale:
            print(f"not in tree:     {s}")
        if args.verbose:
            print("\n".join("unresolved: " + u for u in result.unresolved), file=sys.stderr)
        status = "in sync" if not (missing or stale) else f"{len(missing)} missing, {len(stale)} stale"
        print(f"# torch {result.torch_version}: {len(result.candidates)} passes, "
              f"{len(result.configs)} configs scanned in {elapsed:.2f}s; registry {status}",
              file=sys.stderr)
        return 1 if (missing or stale) else 0

    print(skeleton(result, merged, everything=args.all))
    return 0


if __name__ == "__main__":
    sys.exit(main())
