#!/usr/bin/env python3
"""List every Inductor / AOTAutograd graph pass and every config key in a torch tree.

Reads the torch sources with ``ast`` only: it never imports torch, so it can scan any
checkout or unpacked wheel (``--torch-root``), not just the installed one.

It has no vocabulary of its own: what a pass is comes from the registry and the lint (issue 16):
the ``[[base]]`` rows say which classes are observers, pattern passes and pass bases (and which
argument names an observer's pass), the custom-hook entries say which config keys install user
passes, the ``[[pipeline]]`` rows say which functions run passes (their calls are read with the
lint's own index and named by LG005's rule), ``lint_rules.config_keys`` says what a config key
is, ``lint_rules.versions`` which torch a tree is, and ``lint_rules.command.TORCH_TREES`` which
directories hold passes.

What it finds (each a *candidate* with name, kind, source file and line):

* ``observer``    names given to a registry observer (``GraphTransformObserver(gm, "name")``),
                  f-strings and ``"a" + b`` resolved where possible (runtime parts become ``*``),
                  names bound by loops over module-level lists, and call sites of thin wrappers
                  that forward a parameter as the name (``utils.pass_execution_and_save``).
* ``pattern``     registry pattern passes (``PatternMatcherPass(pass_name=...)``), else named by
                  the variable / attribute / list they are stored in; ``@register_fusion("name")``.
* ``class``       subclasses (transitively) of a registry ``pass_class`` base.
* ``custom_hook`` config keys that the registry's custom-hook entries name.
* ``function``    every call inside a registry pipeline root, named as LG005 names it.
* configs         every key of torch/_inductor/config.py and torch/_functorch/config.py, with its
                  type; ``--config-inventory`` prints entries for the keys no registry classifies,
                  each with a PROPOSED kind (tools/config_inventory.py) for a person to review.

Modes:
    (default)          print a TOML skeleton of pass candidates missing from the registry
    --all              print a TOML skeleton of every pass candidate
    --list             print the candidates as a table (``--json`` for JSON)
    --config-inventory print [[config]] entries (kind PROPOSED) for keys no registry classifies
    --check            exit 1 and list candidates and config keys missing from the registries, and
                       registry entries (for this torch version) that the tree no longer has;
                       exit 0 when in sync
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import sysconfig
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))  # run from a checkout, too

from lint_rules.command import TORCH_TREES  # noqa: E402  (the directories that hold passes)
from lint_rules.config_keys import CONFIG_MODULES, config_keys  # noqa: E402
from lint_rules.versions import matches, version_of_torch_dir  # noqa: E402
from lite_guard.registry import Registry, RegistryError, shipped_registry_files  # noqa: E402
from lite_guard.stages import guess_stage  # noqa: E402

DEFAULT_REGISTRY = REPO_ROOT / "lite_guard" / "registries" / "torch_inductor.toml"


@dataclass(frozen=True)
class Vocabulary:
    """What the registry says a pass looks like, as short class names for this ast scan."""

    observers: dict[str, tuple[str, int]]  # class name -> (name keyword, name position)
    patterns: dict[str, tuple[str, int]]
    pass_bases: frozenset[str]
    base_modules: frozenset[str]  # "torch/_inductor/custom_graph_pass.py": the interfaces
    hook_keys: dict[str, str]  # config key -> stage of its custom_hook entry
    roots: tuple[tuple[str, str], ...]  # (module:qualname, stage)

    @classmethod
    def from_registry(cls, registry: Registry) -> "Vocabulary":
        observers, patterns, bases, modules = {}, {}, set(), set()
        for base in registry.bases:
            if base.role in ("pattern_registration", "graph_type", "graph_mutation",
                             "graph_store", "graph_rewrite", "graph_producer", "pass_argument", "compiler_argument",
                             "lowering_registration"):
                # a registration adds patterns to a pattern pass, defines none (LG001, outside
                # torch); a graph type is what a pass is handed (checked by graph_type_problems)
                continue
            module, _, qualname = base.name.partition(":")
            leaf = qualname.rsplit(".", 1)[-1]
            modules.add(module.replace(".", "/") + ".py")
            if base.role == "observer":
                observers[leaf] = (base.name_arg, base.name_position)
            elif base.role == "pattern_pass":
                patterns[leaf] = (base.name_arg, base.name_position)
            else:
                bases.add(leaf)
        hooks = {e.hook.rpartition(":")[2]: e.stage for e in registry.custom_hooks() if e.hook}
        roots = tuple((p.root, p.stage) for p in registry.pipelines)
        return cls(observers, patterns, frozenset(bases), frozenset(modules), hooks, roots)


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
    missing_roots: list[str] = field(default_factory=list)  # pipeline roots the tree lacks
    registry: Registry | None = field(default=None, repr=False)
    vocab: Vocabulary | None = field(default=None, repr=False)

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
    """torch/version.py, else the checkout's version.txt (the lint's own reading)."""
    return version_of_torch_dir(root) or "unknown"


def stage_for(source: str, name: str = "") -> str:
    return guess_stage(source, name)  # the one stage heuristic (lite_guard.stages)


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


def scan(torch_root: Path, registry: Registry) -> ScanResult:
    torch_root = torch_root.resolve()
    site = torch_root.parent
    vocab = Vocabulary.from_registry(registry)
    result = ScanResult(str(torch_root), read_torch_version(torch_root), registry=registry,
                        vocab=vocab)
    # Parse only files that mention a vocabulary name (parsing everything triples the time);
    # the pipeline roots are read through the lint's index below.
    interesting = re.compile("|".join(re.escape(n) for n in (
        *vocab.observers, *vocab.patterns, *vocab.pass_bases, "register_fusion")) or "^$")
    modules: list[_Module] = []
    for sub in TORCH_TREES:
        base = torch_root / sub
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(site).as_posix()
            text = path.read_text(encoding="utf-8", errors="replace")
            result.defined_names[rel] = _defined(text)
            if not interesting.search(text):
                continue
            try:
                modules.append(_Module(path, rel))
            except SyntaxError as exc:  # pragma: no cover - broken tree
                result.unresolved.append(f"{rel}: syntax error {exc}")
    _scan_observers(modules, result, vocab)
    _scan_pattern_passes(modules, result, vocab)
    _scan_custom_pass_classes(modules, result, vocab)
    _scan_pipelines(torch_root, result)
    _scan_configs(torch_root, site, result, vocab)
    return result


def _name_arg(call: ast.Call, keyword: str, position: int) -> ast.AST | None:
    """The argument that names the pass: the base row's keyword, else its position."""
    for kw in call.keywords:
        if kw.arg == keyword:
            return kw.value
    return call.args[position] if 0 <= position < len(call.args) else None


def _scan_observers(modules: list[_Module], result: ScanResult, vocab: Vocabulary) -> None:
    wrappers: dict[str, int] = {}  # function name -> index of the parameter used as the pass name
    sites: list[tuple[_Module, ast.Call, ast.AST]] = []
    for mod in modules:
        if mod.rel.endswith("graph_transform_observer.py"):
            continue
        for node in ast.walk(mod.tree):
            if isinstance(node, ast.Call) and _call_name(node.func) in vocab.observers:
                arg = _name_arg(node, *vocab.observers[_call_name(node.func)])
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


def _scan_pattern_passes(modules: list[_Module], result: ScanResult, vocab: Vocabulary) -> None:
    found: list[tuple[_Module, ast.Call, str, str, str]] = []  # mod, call, var, func, explicit
    for mod in modules:
        for node in ast.walk(mod.tree):
            if not (isinstance(node, ast.Call) and _call_name(node.func) in vocab.patterns):
                continue
            if mod.rel in vocab.base_modules:
                continue  # isinstance checks / class definition site
            explicit = _name_arg(node, *vocab.patterns[_call_name(node.func)])
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


def _scan_custom_pass_classes(modules: list[_Module], result: ScanResult, vocab: Vocabulary) -> None:
    classes: dict[str, tuple[_Module, ast.ClassDef]] = {}
    bases: dict[str, set[str]] = {}
    for mod in modules:
        for node in ast.walk(mod.tree):
            if isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, (mod, node))
                bases.setdefault(node.name, set()).update(_call_name(b) for b in node.bases)
    derived = set(vocab.pass_bases)
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
        if mod.rel in vocab.base_modules or _abstract(node):
            continue  # the interfaces themselves, and abstract bases (no pass until subclassed)
        result.add(Candidate(cls, "class", mod.rel, node.lineno, stage_for(mod.rel, cls),
                             note="custom pass subclass"))


def _abstract(node: ast.ClassDef) -> bool:
    """A class that leaves ``__call__`` abstract (or raising NotImplementedError)."""
    for item in node.body:
        if isinstance(item, ast.FunctionDef) and item.name == "__call__":
            decorated = any(_call_name(d) == "abstractmethod" for d in item.decorator_list)
            body = [b for b in item.body if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))]
            raises = len(body) == 1 and isinstance(body[0], ast.Raise)
            return decorated or raises
    return False


def _scan_pipelines(torch_root: Path, result: ScanResult) -> None:
    """Every call inside a registry pipeline root, named exactly as LG005 names it (the lint's
    index and rule, not a copy of them)."""
    from lint_rules.index import Index, module_name, summarize
    from lint_rules.rules.lg005_pipeline_call import (UnregisteredPipelineCall, checked_elsewhere,
                                                   lookup_steps)

    registry = result.registry
    vocab = _lint_vocabulary(registry)
    # The roots' modules, and the hooked drivers' (a driver may run passes by name: LG005).
    wanted = {name.partition(":")[0] for name in checked_elsewhere(registry)}
    summaries = []
    for sub in TORCH_TREES:
        for path in sorted((torch_root / sub).rglob("*.py")) if (torch_root / sub).is_dir() else ():
            module = module_name(path)
            if module not in wanted:
                continue  # callees imported from elsewhere are named by their imported name
            try:
                summary = summarize(path.read_bytes(), module, path.name == "__init__.py", vocab)
                summaries.append((str(path), summary))
            except (SyntaxError, ValueError, RecursionError) as exc:
                result.unresolved.append(f"{path}: {exc}")
    index = Index(summaries, vocab, external=False)
    site = torch_root.parent
    for root, stage in result.vocab.roots:
        module, _, qualname = root.partition(":")
        if module not in wanted or module not in index.modules:
            continue
        if qualname not in index.modules[module]["calls"]:
            result.missing_roots.append(root)
            continue
        rel = Path(index.paths[module]).resolve().relative_to(site).as_posix()
        roots = checked_elsewhere(registry)
        for step in UnregisteredPipelineCall.steps(index, module, qualname, roots):
            if step.covered or not step.name:
                continue
            how = f"called in {root}" if step.owner is None else f"{root} {step.owner}"
            result.add(Candidate(step.name, "function", rel, step.line, stage, note=how))


    for step in lookup_steps(index, registry):
        rel = Path(index.paths[step.module]).resolve().relative_to(site).as_posix()
        result.add(Candidate(step.name, "function", rel, step.line, step.stage,
                             note=f"run by name by {step.driver}"))


def _lint_vocabulary(registry: Registry):
    from lint_rules.index import Vocabulary as LintVocabulary

    return LintVocabulary.from_registry(registry)


def _scan_configs(torch_root: Path, site: Path, result: ScanResult, vocab: Vocabulary) -> None:
    for module, (package, name) in CONFIG_MODULES.items():
        path = torch_root / package / name
        if not path.exists():
            continue
        source = path.relative_to(site).as_posix()
        keys = config_keys(path.read_text(encoding="utf-8"))
        result.all_config_keys[module] = {k.key for k in keys}
        for key in keys:
            if key.key in vocab.hook_keys:  # a key that installs user passes is a pass too
                result.add(Candidate(key.key, "custom_hook", source, key.line,
                                     vocab.hook_keys[key.key], note=f"{module} config hook"))
            result.configs[(module, key.key)] = Candidate(key.key, "config", source, key.line,
                                                          module=module, default=key.default,
                                                          note=key.type)


# ---- registry comparison ----------------------------------------------------------------------
def _entry_exists(entry, result: ScanResult) -> bool:
    name, kind = entry.name, entry.kind
    if name in result.candidates:
        return True
    if kind in ("custom_hook", "config"):
        return any(name in keys for keys in result.all_config_keys.values())
    leaf = name.rsplit(".", 1)[-1]
    if ":" in name:  # a qualified identity (module:Owner.attr): its owner must still be defined
        leaf = name.split(":", 1)[1].split(".", 1)[0]
    if kind == "helper" and not (entry.source and entry.source in result.defined_names
                                 and leaf in result.defined_names[entry.source]):
        return False  # a helper exists when a pipeline root calls it (a candidate above)
    if entry.source:
        if entry.source not in result.defined_names:  # outside the scanned trees
            path = Path(result.torch_root).parent / entry.source
            if not path.exists():
                result.unresolved.append(f"{entry.name}: source {entry.source} is not in this tree;"
                                         " not checked")
                return True  # reported as unresolved above, never silently counted as stale
            result.defined_names[entry.source] = _defined(path.read_text(encoding="utf-8"))
        return leaf in result.defined_names[entry.source]
    return any(leaf in names for names in result.defined_names.values())


def _describes_torch(entry) -> bool:
    """Entries the scan can judge: torch's own (a torch source, or no source at all)."""
    return not entry.source or entry.source.startswith("torch/")


def module_functions(path: Path) -> set[str]:
    """The functions a module of torch's source defines at its top level."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return set()
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def class_members(path: Path, qualname: str) -> set[str] | None:
    """The attributes a class of torch's source defines: methods and properties, class-level
    names, and ``self.x = ...`` in its methods (None when the class is not there)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    scope: list[ast.stmt] = tree.body
    klass = None
    for part in qualname.split("."):
        klass = next((n for n in scope if isinstance(n, ast.ClassDef) and n.name == part), None)
        if klass is None:
            return None
        scope = klass.body
    members: set[str] = set()
    for node in klass.body:  # type: ignore[union-attr]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            members.add(node.name)
            for inner in ast.walk(node):
                if isinstance(inner, ast.Attribute) and isinstance(inner.ctx, ast.Store) \
                        and isinstance(inner.value, ast.Name) and inner.value.id == "self":
                    members.add(inner.attr)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            members.add(node.target.id)
        elif isinstance(node, ast.Assign):
            members.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return members


def graph_type_problems(root: Path, registry: Registry, version: str | None,
                        unresolved: list[str] | None = None) -> list[str]:
    """Each ``[[base]] role = "graph_type"`` row names a class of torch's source, and each of
    its ``members`` is defined there (the lint takes them as evidence that a ``__call__`` is
    handed an FX graph: a member torch dropped would be evidence of nothing); each
    ``graph_rewrite`` row names a function its module defines."""
    problems = []
    for base in registry.bases:
        if base.role not in ("graph_type", "graph_mutation", "graph_store", "graph_rewrite",
                             "graph_producer") \
                or not _judged(base.torch, version):
            continue
        module, _, qualname = base.name.partition(":")
        parts = module.split(".")
        if parts[0] != "torch":
            continue
        stem = root.joinpath(*parts[1:])
        path = stem / "__init__.py" if stem.is_dir() else stem.with_suffix(".py")
        if not path.is_file():  # a tree of the pass packages only
            if unresolved is not None:
                unresolved.append(f"{base.name}: source {path.relative_to(root.parent)} is not in"
                                  " this tree; not checked")
            continue
        if base.role in ("graph_rewrite", "graph_producer") and "." not in qualname:
            if qualname not in module_functions(path):  # a function of the module: defined there
                problems.append(f"{base.role} {base.name!r}: function not found in {path}")
            continue
        if base.role == "graph_producer":  # a method of a class of the module (Tracer.trace)
            owner, _, method = qualname.rpartition(".")
            if method not in (class_members(path, owner) or ()):
                problems.append(f"graph_producer {base.name!r}: method not found in {path}")
            continue
        members = class_members(path, qualname)
        if members is None:
            problems.append(f"graph_type {base.name!r}: class not found in {path}")
            continue
        problems += [f"graph_type {base.name!r}: member {m!r} not defined by the class"
                     for m in base.members if m not in members]
    return problems


def compare(result: ScanResult, registry: Registry) -> tuple[list[str], list[str]]:
    """(missing from the registries, registered but gone from the tree) for this torch version."""
    version = None if result.torch_version == "unknown" else result.torch_version
    missing, stale = [], []
    for name, cand in sorted(result.candidates.items()):
        entry = registry.match_pass(name)
        if entry is None:
            missing.append(f"pass {name!r} ({cand.kind}, {cand.source}:{cand.line})")
        elif not matches(entry.torch, version):
            missing.append(f"pass {name!r} is registered with torch = {entry.torch!r}, which"
                           f" excludes {version}, but exists in the tree ({cand.source}:{cand.line})")
    for (module, key), cand in sorted(result.configs.items()):
        entry = registry.get_config(key, module)
        if entry is None:
            missing.append(f"config {module}:{key} ({cand.source}:{cand.line}, type {cand.note},"
                           f" default {cand.default[:60]})")
        elif not matches(entry.torch, version):
            missing.append(f"config {module}:{key} is registered with torch = {entry.torch!r},"
                           f" which excludes {version}, but exists in the tree")
    stale += graph_type_problems(Path(result.torch_root), registry, version, result.unresolved)
    ranges = {p.root: p.torch for p in registry.pipelines}
    for root in result.missing_roots:
        if _judged(ranges.get(root, ""), version):  # a root ranged out of this release is not stale
            stale.append(f"pipeline {root} not found in the tree")
    for entry in registry.passes:
        if not _describes_torch(entry) or not _judged(entry.torch, version):
            continue
        if not _entry_exists(entry, result):
            stale.append(f"pass {entry.name!r} ({entry.kind}, {entry.source or '?'}) not found in the tree")
    for entry in registry.configs:
        if not _judged(entry.torch, version) or entry.module not in result.all_config_keys:
            continue
        if entry.key not in result.all_config_keys[entry.module]:
            stale.append(f"config {entry.module}:{entry.key} not found in torch/"
                         f"{'/'.join(CONFIG_MODULES[entry.module])}")
    return missing, stale


def _judged(spec: str, version: str | None) -> bool:
    return not spec if version is None else matches(spec, version)


# ---- output -----------------------------------------------------------------------------------
def _toml_str(s: str) -> str:
    return json.dumps(s)


def skeleton(result: ScanResult, registry: Registry | None, everything: bool) -> str:
    lines = [f"# candidates from {result.torch_root} (torch {result.torch_version})",
             "# review every TODO: lite flag, gated_by, torch range and why", ""]
    for name, cand in sorted(result.candidates.items(), key=lambda kv: (kv[1].stage, kv[0])):
        if not everything and registry is not None and registry.match_pass(name) is not None:
            continue
        kind = "helper" if cand.kind == "function" and cand.note.startswith("called in") else cand.kind
        lines += ["[[pass]]", f"name = {_toml_str(name)}", f"stage = {_toml_str(cand.stage or 'post_grad')}",
                  'lite = "never"  # TODO', f"kind = {_toml_str(kind)}",
                  f"source = {_toml_str(cand.source)}", "gated_by = []  # TODO",
                  f"why = {_toml_str('TODO' + (': ' + cand.note if cand.note else ''))}", ""]
    return "\n".join(lines)


def config_inventory(result: ScanResult, registry: Registry | None) -> str:
    """[[config]] entries for the keys no registry classifies, each kind PROPOSED (to review)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from config_inventory import FORCED_KINDS, scan_versions

    entries = scan_versions({result.torch_version: Path(result.torch_root)})
    lines = [f"# config keys of {result.torch_root} (torch {result.torch_version}) that no registry"
             " classifies.", "# Every kind below is a PROPOSAL from the key's name: read the key in"
             " torch's config.py, then", "# confirm or change kind, lite_value (forced kinds:"
             " torch's default unless lite mode needs another), region and why.", ""]
    for entry in entries:
        if registry is not None and registry.get_config(entry.key, entry.module) is not None:
            continue
        lines += ["[[config]]", f"key = {_toml_str(entry.key)}", f"module = {_toml_str(entry.module)}",
                  f"kind = {_toml_str(entry.proposal)}  # {entry.reason}", f"type = {_toml_str(entry.type)}"]
        if entry.proposal in FORCED_KINDS:
            value = entry.literal_default
            lines.append(f"lite_value = {json.dumps(value)}  # PROPOSED: torch's default"
                         if value is not None else f"# lite_value = ?  (default: {entry.default[:60]})")
        lines += [f"why = {_toml_str('TODO: ' + entry.comment[:120])}", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--torch-root", type=Path, help="torch package dir (default: installed)")
    parser.add_argument("--registry", type=Path, action="append", default=None, metavar="PATH",
                        help="registry files to check against (repeatable; default: every shipped"
                             " registry)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 if tree and registry differ")
    mode.add_argument("--list", action="store_true", help="print the candidates")
    mode.add_argument("--all", action="store_true", help="TOML skeleton of every candidate")
    mode.add_argument("--config-inventory", action="store_true",
                      help="[[config]] entries, kind PROPOSED, for keys no registry classifies")
    parser.add_argument("--json", action="store_true", help="with --list: JSON output")
    parser.add_argument("-v", "--verbose", action="store_true", help="also print unresolved sites")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    root = args.torch_root or find_torch_root()
    if not (root / "_inductor").is_dir():
        print(f"error: {root} is not a torch package (no _inductor/)", file=sys.stderr)
        return 2
    try:
        registry = Registry.from_files(args.registry or shipped_registry_files())
    except RegistryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    result = scan(root, registry)
    elapsed = time.perf_counter() - start

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
                print(f"{'config':12} {module:11} {key:60} {c.source}:{c.line}  type={c.note}")
        if args.verbose:
            print("\n".join("unresolved: " + u for u in result.unresolved), file=sys.stderr)
        print(f"# {len(result.candidates)} passes, {len(result.configs)} config keys in {elapsed:.2f}s",
              file=sys.stderr)
        return 0

    if args.check:
        missing, stale = compare(result, registry)
        for m in missing:
            print(f"not in registry: {m}")
        for s in stale:
            print(f"not in tree:     {s}")
        for u in result.unresolved if args.verbose else [u for u in result.unresolved if "not checked" in u]:
            print(f"unresolved:      {u}", file=sys.stderr)
        status = "in sync" if not (missing or stale) else f"{len(missing)} missing, {len(stale)} stale"
        print(f"# torch {result.torch_version}: {len(result.candidates)} passes, "
              f"{len(result.configs)} config keys scanned in {elapsed:.2f}s; registry {status}",
              file=sys.stderr)
        return 1 if (missing or stale) else 0

    if args.config_inventory:
        print(config_inventory(result, registry))
        return 0
    print(skeleton(result, registry, everything=args.all))
    return 0


if __name__ == "__main__":
    sys.exit(main())
