"""The whole-tree semantic index: what every linted module defines, imports and hands to Inductor.

Two halves, so the expensive half is cached per file and runs in worker processes:

* ``summarize`` reads ONE file (stdlib ``ast``) into a small JSON-able summary: its dotted module
  name, its imports (``as`` aliases, relative imports), its classes (bases as written, methods,
  which are abstract, attributes), module constants, the calls that construct an observer or a
  pattern pass, every place a value is installed into an Inductor/functorch custom-pass hook, and
  the calls made inside registered pipeline roots.
* ``Index`` joins the summaries of the whole tree and resolves names across files: aliases,
  ``from .. import``, re-exports through ``__init__``, variables, ``self.attr``, module constants,
  loop variables over constant lists. Class ancestry is resolved through all of it, through
  the installed packages that define the registry's base classes, and through the modules of a
  linted package that are on disk outside the linted paths (all read, never imported).

Why ``ast`` and not libcst for the index: every file of the tree needs a summary (a pass's base
class may live in a file that mentions no pass at all), and on this machine libcst parses about
0.6 MB/s against ast's 7 MB/s: torch's tree alone would take 20 s cold. libcst is still used for
the rules that need a concrete syntax tree (config modules, ``lite_mode_options``).

The vocabulary (which classes are pass bases, observers, pattern passes; which config keys are
hooks; which functions are pipeline roots) comes from the registry, never from this file.

A summary, the unit that is cached (expressions are small lists: ``["n", "a.b"]`` a dotted name,
``["s", "x"]`` a string, ``["g", "x_*"]`` an f-string, ``["call", callee, args, kwargs]``,
``["l", [...]]`` a list/tuple/set, ``["d", [[k, v], ...]]``, ``["k", element, binds]`` a
comprehension, ``["lambda", scope]``, ``["sub", value, key]``, ``["?", what]`` anything else)::

    module, package      dotted name; whether it is a package's __init__
    imports, stars       local name -> "module" or "module:name"; star-imported modules
    alternatives         names imported two ways (if/else, try/except) -> the other targets
    classes              qualname -> line, col, bases, methods, abstract, attrs, decorators, scope
    assigns              scope ("" = module, else a function qualname) -> name -> expression
    sites                observer / pattern-pass calls ("ctor"), hook installs ("hook") and
                         pattern registrations ("reg": the call, the decorated handler)
    calls                pipeline root qualname -> the calls in its body (LG005)
    returns              function qualname -> names / constructors it returns (factories)
    producers            function qualname annotated to return an FX graph it builds -> the
                         calls it hands that graph to (LG001: the rewrites among them)
    suppress             line -> text of its lite-guard / noqa comment (a real comment token)
"""

from __future__ import annotations

import ast
import bisect
import builtins
import collections
import functools
import importlib.util
import os
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any, Iterable, Iterator

from lite_guard.identity import is_torch_module, pass_identity, qualified_name

SUMMARY_VERSION = 25  # bump when the summary's shape changes (it is part of the cache key)
_MAX_DEPTH = 24  # expression nesting kept in a summary; deeper is "?" (hostile input stays small)
MAX_ANCESTORS = 200  # classes read up one class's hierarchy; deeper is hostile, an LG900
MAX_ALIASES = 48  # aliases / re-exports followed for one name; longer is hostile, an LG900
# A "lite-guard" / "noqa" word after a '#'. Not r"#.*(lite-guard|noqa)": that retries from every
# '#' to the end of the line, so one line of 60,000 '#' took a worker's whole time budget.
_SUPPRESS_WORD = re.compile(r"lite-guard|noqa", re.I)


_OTHER_BREAKS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_PYTHON_BREAK = re.compile(r"(\r\n|\r|\n)")


def source_lines(text: str, keepends: bool = False) -> list[str]:
    """The lines of a source as Python numbers them (only \\n, \\r\\n and \\r end a line).
    ``str.splitlines`` also breaks at \\f, \\x1c, \\u2028 and others: in a hostile file each one
    would shift every later line, so a suppression comment could land on a pass's line."""
    if _OTHER_BREAKS.search(text) is None:
        return text.splitlines(keepends)
    parts = _PYTHON_BREAK.split(text)  # line, break, line, break, ..., line
    pieces, breaks = parts[0::2], parts[1::2] + [""]
    lines = [piece + end for piece, end in zip(pieces, breaks)] if keepends else pieces
    if pieces[-1] == "":  # the text ended with a break: no empty last line (as splitlines)
        lines.pop()
    return lines


def suppression_comments(lines: list[str], tree: ast.Module | None = None) -> dict[str, str]:
    """Line number -> text of every ``lite-guard`` / ``noqa`` comment, as Python's tokenizer finds
    comments: a string holding "# lite-guard: ignore[LG001]" on a pass's line is no comment, and
    silenced the pass when the line's text was searched instead. ``tree`` (the file's): only the
    top-level statements around such lines are tokenized (a statement starts outside any string),
    not the whole file, which costs about a second a megabyte."""
    text = "\n".join(lines)
    if not _SUPPRESS_WORD.search(text):  # one scan; most files have none
        return {}
    candidates = [n for n, line in enumerate(lines, 1)
                  if "#" in line and _SUPPRESS_WORD.search(line, line.index("#"))]
    comments: dict[str, str] = {}
    for first, last in _statement_spans(candidates, tree):
        readline = iter(line + "\n" for line in lines[first - 1:last]).__next__
        try:
            for token in tokenize.generate_tokens(readline):
                if token.type == tokenize.COMMENT and _SUPPRESS_WORD.search(token.string):
                    comments[str(first + token.start[0] - 1)] = token.string
        except (tokenize.TokenError, SyntaxError, StopIteration):
            pass  # the end of the span inside a bracket: every comment before it was seen
    return comments


def _statement_spans(candidates: list[int], tree: ast.Module | None) -> list[tuple[int, int]]:
    """(first, last) lines to tokenize so that every candidate line is read from a line where no
    string is open: from the start of the top-level statement holding it (and of those sharing
    its first line, ``x = 1; y = 2``) to the candidate; the whole file without a tree."""
    if not candidates:
        return []
    if tree is None or not tree.body:
        return [(1, candidates[-1])]
    starts = [(min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))]),
               node.end_lineno or node.lineno) for node in tree.body]  # decorators first
    spans: list[tuple[int, int]] = []
    for line in candidates:
        index = bisect.bisect_right(starts, (line, float("inf"))) - 1
        if index < 0 or starts[index][1] < line:  # between statements: only comments there
            spans.append((line, line))
            continue
        while index > 0 and starts[index - 1][1] >= starts[index][0]:
            index -= 1  # a statement ending on the line this one starts on
        first = starts[index][0]
        if spans and spans[-1][0] == first:
            spans[-1] = (first, line)  # one statement, several candidate lines
        else:
            spans.append((first, line))
    return spans


# ---- vocabulary ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Vocabulary:
    """What the registry says to look for, in the shape the per-file summary needs."""

    bases: dict[str, tuple[str, str, int]] = field(default_factory=dict)  # name -> (role, arg, pos)
    hooks: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # key -> (module, entry, stage)
    roots: frozenset[str] = frozenset()  # pipeline roots, "module:qualname"
    # [[base]] role = "graph_type": the FX graph classes a pass is handed -> their members a
    # pass uses (the evidence that a __call__ takes a graph; never pass vocabulary themselves)
    graph_types: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # role = "graph_mutation": class -> the members that change a graph (evidence of a rewrite)
    mutations: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # role = "pass_argument" / "compiler_argument": a callable -> its (role, argument keyword,
    # position, stage) rows: what flows into a pass argument is a pass (partition_fn=, PassManager's
    # passes); what flows into a compiler argument compiles a graph (backend=, fw_compiler=)
    arguments: dict[str, tuple[tuple[str, str, int, str], ...]] = field(default_factory=dict)
    # role = "lowering_registration": the functions that change which lowering, decomposition or
    # fallback Inductor uses for an op (register_lowering, make_fallback): read outside torch only
    lowerings: frozenset[str] = frozenset()
    # role = "graph_rewrite": torch's functions that rewrite the graph they are handed
    # (``subgraph_rewriter.replace_pattern``): evidence of a rewrite, like a graph_mutation member
    rewriters: frozenset[str] = frozenset()
    # role = "graph_store": class -> the attributes whose store changes a graph (``node.target =
    # torch.cat``, ``node.args = (...)``): evidence of a rewrite, like a graph_mutation member
    stores: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # role = "graph_producer": torch's functions building a new FX graph (``symbolic_trace``,
    # ``Tracer.trace``, ``make_fx``, ``export``): a local assigned from one holds a graph built
    producers: frozenset[str] = frozenset()

    @classmethod
    def from_registry(cls, registry: Any) -> "Vocabulary":
        bases, graph_types, mutations, arguments, lowerings = {}, {}, {}, {}, set()
        rewriters, stores, producers = set(), {}, set()
        for base in getattr(registry, "bases", ()):
            if base.role == "lowering_registration":
                lowerings.add(base.name)
                continue
            if base.role == "graph_rewrite":
                rewriters.add(base.name)
                continue
            if base.role == "graph_type":
                graph_types[base.name] = tuple(base.members)
                continue
            if base.role == "graph_mutation":
                mutations[base.name] = tuple(base.members)
                continue
            if base.role == "graph_store":
                stores[base.name] = tuple(base.members)
                continue
            if base.role == "graph_producer":
                producers.add(base.name)
                continue
            if base.role in ("pass_argument", "compiler_argument"):
                arguments[base.name] = (*arguments.get(base.name, ()), (
                    base.role, base.name_arg, base.name_position, getattr(base, "stage", "")))
                continue
            bases[base.name] = (base.role, base.name_arg, base.name_position)
        hooks = {}
        for entry in _custom_hooks(registry):
            module, _, key = entry.hook.rpartition(":")
            hooks[key.rsplit(".", 1)[-1]] = (module, entry.name, entry.stage)
        # Config keys the inventory classifies as custom hooks (their values run inside
        # Inductor: inductor_choices_class, ...), unless a [[pass]] entry above names the hook.
        from lite_guard.registry import CONFIG_MODULES
        from lite_guard.stages import guess_stage

        for config in getattr(registry, "configs", ()):
            key = config.key.rsplit(".", 1)[-1]
            if config.kind == "custom_hook" and key not in hooks:
                module = CONFIG_MODULES.get(config.module, config.module)
                hooks[key] = (module, config.key, guess_stage(module, config.key))
        roots = frozenset(p.root for p in getattr(registry, "pipelines", ()))
        return cls(bases, hooks, roots, graph_types, mutations, arguments, frozenset(lowerings),
                   frozenset(rewriters), stores, frozenset(producers))

    @functools.cached_property
    def graph_names(self) -> frozenset[str]:
        """``Graph``, ``GraphModule``: an annotation naming one says the argument is a graph."""
        return frozenset(name.rsplit(":", 1)[-1].rsplit(".", 1)[-1] for name in self.graph_types)

    @functools.cached_property
    def graph_members(self) -> frozenset[str]:
        """``nodes``, ``erase_node``, ``recompile``...: using one says the argument is a graph."""
        return frozenset(member for members in self.graph_types.values() for member in members)

    @functools.cached_property
    def rewriter_leaves(self) -> dict[str, frozenset[str]]:
        """``replace_pattern`` -> the packages its rows live in (``torch``): a call of that name
        reached from one of them rewrites the graph it is handed."""
        found: dict[str, set[str]] = {}
        for name in self.rewriters:
            found.setdefault(name.rsplit(":", 1)[-1].rsplit(".", 1)[-1], set()).add(
                name.split(".", 1)[0].split(":", 1)[0])
        return {leaf: frozenset(packages) for leaf, packages in found.items()}

    @functools.cached_property
    def graph_mutators(self) -> frozenset[str]:
        """``erase_node``, ``replace_all_uses_with``, ``recompile``...: calling one rewrites."""
        return frozenset(member for members in self.mutations.values() for member in members)

    @functools.cached_property
    def _mutator_pattern(self) -> "re.Pattern[str] | None":
        return re.compile(r"\.(?:" + "|".join(map(re.escape, sorted(self.graph_mutators)))
                          + r")\s*\(") if self.graph_mutators else None

    @functools.cached_property
    def producer_leaves(self) -> frozenset[str]:
        """``symbolic_trace``, ``trace``, ``make_fx``, ``export``: a call of that name builds a
        new FX graph (registry ``graph_producer`` rows)."""
        return frozenset(name.rsplit(":", 1)[-1].rsplit(".", 1)[-1] for name in self.producers)

    @functools.cached_property
    def producer_call(self) -> "re.Pattern[str] | None":
        """``symbolic_trace(``, ``tracer.trace(``, ``make_fx(``: a call of a producer's name,
        or of any imported alias of one (an ``import ... as`` of it); the text test before a
        file's functions are read for a graph they build."""
        if not self.producer_leaves:
            return None
        names = "|".join(map(re.escape, sorted(self.producer_leaves)))
        return re.compile(rf"\b(?:{names})\s*\(|\bimport\b[^\n]*\b(?:{names})\b")

    @functools.cached_property
    def graph_stores(self) -> frozenset[str]:
        """``target``, ``args``, ``kwargs``: storing one on a node of a graph rewrites it."""
        return frozenset(member for members in self.stores.values() for member in members)

    @functools.cached_property
    def store_pattern(self) -> "re.Pattern[str] | None":
        """``node.target =``, ``node.args +=`` (not ``==``): the text of such a store."""
        return re.compile(r"\.(?:" + "|".join(map(re.escape, sorted(self.graph_stores)))
                          + r")\s*[-+]?=(?!=)") if self.graph_stores else None

    @functools.cached_property
    def _walk_words(self) -> tuple[str, ...]:
        return tuple(f".{member}" for member in sorted(self.graph_members))

    def may_rewrite_graph(self, text: str) -> bool:
        """Does this source call a member that rewrites an FX graph (``.erase_node(``,
        ``.replace_all_uses_with(``), or store a node attribute that does (``.target =``) where
        it names a graph member it may walk (``.nodes``)? Outside torch such a file is read
        whole and parsed."""
        if self._mutator_pattern is not None and self._mutator_pattern.search(text) is not None:
            return True
        return self.store_pattern is not None and self.store_pattern.search(text) is not None \
            and any(word in text for word in self._walk_words)

    @functools.cached_property
    def argument_names(self) -> frozenset[str]:
        """Last name of every callable with a pass or compiler argument: calls (and decorators)
        of these are recorded ("arg" sites)."""
        return frozenset(name.rsplit(":", 1)[-1].rsplit(".", 1)[-1] for name in self.arguments)

    @functools.cached_property
    def argument_words(self) -> frozenset[str]:
        """Words a function handing a value to such an argument holds: the keyword, and the
        callable's last name where the argument may also be passed by position (its call may
        name an alias the file imports, so the keyword alone is enough for one function)."""
        return frozenset(word for name, rows in self.arguments.items() for _, arg, position, _ in rows
                         for word in (arg, name.rsplit(":", 1)[-1].rsplit(".", 1)[-1]
                                      if position >= 0 else "") if word) | self.lowering_names

    @functools.cached_property
    def lowering_names(self) -> frozenset[str]:
        """``register_lowering``, ``make_fallback``: calls (and decorators) of these outside
        torch are recorded ("reg" sites, LG001); their words make such a file read there."""
        return frozenset(name.rsplit(":", 1)[-1].rsplit(".", 1)[-1] for name in self.lowerings)

    @functools.cached_property
    def _argument_pattern(self) -> "re.Pattern[str] | None":
        return re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(self.argument_words)))
                          + r")\b") if self.argument_words else None

    @functools.cached_property
    def _argument_callables(self) -> dict[str, tuple[bool, tuple[str, ...], "re.Pattern[str] | None"]]:
        """Last name of each callable with a pass or compiler argument -> whether a value may
        reach it without a keyword (by position; also the def it decorates, the argument taken
        first: ``@register_backend``), its keywords, and those written as keyword arguments
        (``backend=``; a line break, a continuation or a comment may come before the ``=``)."""
        found: dict[str, tuple[bool, set[str]]] = {}
        for name, rows in self.arguments.items():
            last = name.rsplit(":", 1)[-1].rsplit(".", 1)[-1]
            bare, keywords = found.get(last, (False, set()))
            for _, arg, position, _ in rows:
                bare = bare or position >= 0
                keywords = keywords | ({arg} if arg else set())
            found[last] = (bare, keywords)
        # The keyword first, not "\b": a pattern led by a literal is searched for at C speed
        # (the word boundary before it is checked by hand). A comment ends at its line break
        # ("#[^\n]*" repeated without it would backtrack exponentially over a line of '#').
        return {last: (bare, tuple(sorted(keywords)), re.compile(
                    "(?:" + "|".join(map(re.escape, sorted(keywords))) + r")(?:\s|\\|#[^\n]*\n)*=(?!=)")
                    if keywords else None)
                for last, (bare, keywords) in found.items()}

    def may_hand_arguments(self, text: str) -> bool:
        """Might this source (outside torch) hand a value to a pass or compiler argument
        (``aot_autograd(partition_fn=p)``, ``PassManager([p])``, ``torch.compile(backend=f)``,
        ``@register_backend``)? Such a file (and each function holding one of the argument words)
        is read, not light; the prefilter parses it. The index records such a value only at a
        call (or decorator) of the callable by its last name, or by an alias the file imports
        under that name, so the file names the callable; and unless the callable takes the
        argument by position, the value is a keyword argument. A file that only mentions
        ``backend`` (an attention or a tokenizer backend) hands nothing on: most of a
        third-party tree."""
        for name, (bare, keywords, keyword_args) in self._argument_callables.items():
            if name not in text:  # substring tests first: most files hold none of these
                continue
            if not bare and (keyword_args is None or not any(k in text for k in keywords)
                             or not any(_keyword_at(text, m.start())
                                        for m in keyword_args.finditer(text))):
                continue
            if _names_callable(text, name, self._argument_packages[name]):
                return True
        # register_lowering(op)(f), make_fallback(op): a change of torch's tables, read here
        if any(name in text and _holds_word(text, name) for name in self.lowering_names):
            return True
        # kwargs["partition_fn"] = p: stored into keywords a caller hands on to the callable
        keys = self._argument_key_stores
        return keys is not None and any(k in text for k in self.argument_keywords) \
            and keys.search(text) is not None

    @functools.cached_property
    def _argument_packages(self) -> dict[str, frozenset[str]]:
        """Last name of each such callable -> the top-level packages that define one (``compile``
        -> ``torch``): ``re.compile`` names another package's function, not the callable."""
        found: dict[str, set[str]] = {}
        for name in self.arguments:
            module, _, qualname = name.partition(":")
            found.setdefault(qualname.rsplit(".", 1)[-1], set()).add(module.split(".", 1)[0])
        return {last: frozenset(tops) for last, tops in found.items()}

    @functools.cached_property
    def argument_keywords(self) -> frozenset[str]:
        """Every pass or compiler argument keyword (``partition_fn``, ``backend``)."""
        return frozenset(k for _, keywords, _ in self._argument_callables.values() for k in keywords)

    @functools.cached_property
    def _argument_key_stores(self) -> "re.Pattern[str] | None":
        """A store under an argument keyword written as a string key: ``kwargs["backend"] = f``."""
        if not self.argument_keywords:
            return None
        return re.compile(r"\[\s*(['\"])(?:" + "|".join(map(re.escape, sorted(self.argument_keywords)))
                          + r")\1\s*\]\s*=(?!=)")

    @functools.cached_property
    def compiler_keywords(self) -> frozenset[str]:
        """``backend``, ``fw_compiler``, ``inner_compile``: a value handed on under one compiles
        the graph it is given; handing a graph function on so does not make it a pass."""
        return frozenset(arg for rows in self.arguments.values() for role, arg, _, _ in rows
                         if role == "compiler_argument" and arg)

    @functools.cached_property
    def compiler_positions(self) -> dict[str, frozenset[int]]:
        """The positions a compiler is given at, by the callable's last name
        (``optimize`` -> {0}): as ``compiler_keywords``, for a compiler handed by position."""
        found: dict[str, set[int]] = {}
        for name, rows in self.arguments.items():
            for role, _, position, _ in rows:
                if role == "compiler_argument" and position is not None and position >= 0:
                    found.setdefault(name.rsplit(":", 1)[-1].rsplit(".", 1)[-1], set()).add(position)
        return {name: frozenset(at) for name, at in found.items()}

    @functools.cached_property
    def short_names(self) -> frozenset[str]:
        """Last name of every observer / pattern-pass callable: calls to these are recorded."""
        return frozenset(name.rsplit(":", 1)[-1].rsplit(".", 1)[-1]
                         for name, (role, _, _) in self.bases.items()
                         if role in ("observer", "pattern_pass"))

    @functools.cached_property
    def name_keywords(self) -> frozenset[str]:
        """Keywords that name a pass in an observer / pattern-pass call (``pass_name=``)."""
        return frozenset(arg for role, arg, _ in self.bases.values()
                         if role in ("observer", "pattern_pass") and arg)

    @functools.cached_property
    def registrations(self) -> frozenset[str]:
        """Last name of every function that registers a pattern into a pattern pass
        (``register_graph_pattern``): calls to these are recorded ("reg" sites)."""
        return frozenset(name.rsplit(":", 1)[-1].rsplit(".", 1)[-1]
                         for name, (role, _, _) in self.bases.items()
                         if role == "pattern_registration") | self.lowering_names

    @functools.cached_property
    def by_dotted(self) -> dict[str, str]:
        """``torch._inductor.custom_graph_pass.CustomGraphPass`` -> its registry name."""
        return {name.replace(":", "."): name for name in self.bases}

    @functools.cached_property
    def base_modules(self) -> frozenset[str]:
        return frozenset(name.split(":", 1)[0] for name in self.bases)

    @functools.cached_property
    def config_modules(self) -> frozenset[str]:
        """Inductor's and functorch's config modules (``torch._inductor.config``): a store into
        one under a key that cannot be resolved is reported (LG006), never skipped."""
        from lite_guard.registry import CONFIG_MODULES

        return frozenset(CONFIG_MODULES.values())

    @functools.cached_property
    def pipeline_packages(self) -> tuple[str, ...]:
        """The torch packages whose code is the compile pipeline (``torch._inductor``,
        ``torch._functorch``, ``torch.fx``): the packages of every registry base, pipeline root
        and hook. Outside torch, replacing a function or class of theirs at run time
        (``post_grad.post_grad_passes = mine``) changes what compiles: LG001 reports it."""
        modules = [name.split(":", 1)[0] for name in (*self.bases, *self.roots)]
        modules += [module for module, _, _ in self.hooks.values()]
        return tuple(sorted({".".join(m.split(".")[:2]) for m in modules if m.startswith("torch.")}))

    def may_monkeypatch(self, text: str) -> bool:
        """Might this source (outside torch) assign to an attribute of a name it imports from
        torch (``post_grad.post_grad_passes = f``, ``torch._inductor.x.y = f``,
        ``setattr(post_grad, "f", g)``)? The index reads such a file whole, the prefilter
        parses it."""
        if "torch" not in text or not self.pipeline_packages:
            return False
        return patches_pipeline(text, self.pipeline_packages) is not None \
            or iterates_pipeline(text, self.pipeline_packages)

    @functools.cached_property
    def config_packages(self) -> frozenset[str]:
        """``torch._inductor``, ``torch._functorch``: their modules reach the config module by a
        relative import (``from . import config``), so no word of the file names it."""
        return frozenset(m.rpartition(".")[0] for m in self.config_modules)

    @functools.cached_property
    def config_words(self) -> frozenset[str]:
        """The words a file must hold to name a config module from outside its package."""
        return frozenset(p.rpartition(".")[2] for p in self.config_packages)

    @functools.cached_property
    def key_fragments(self) -> frozenset[str]:
        """Pieces of a hook key that a key split into literals still shows as one word
        (``"post_grad_" + "custom_post_pass"``, ``f"{stage}_custom_post_pass"``): every run of
        two or more of its ``_``-separated parts, with or without the ``_`` beside it."""
        found = set()
        # a run that is only a stage's name (post_grad, pre_grad) says nothing of a hook: torch
        # and pass code write it everywhere
        stages = {stage for _, _, stage in self.hooks.values()}
        for key in self.hooks:
            parts = key.split("_")
            for i in range(len(parts)):
                for j in range(i + 2, len(parts) + 1):
                    run = "_".join(parts[i:j]).strip("_")
                    if run.count("_") and run != key and run not in stages:
                        found.update((run, f"_{run}", f"{run}_", f"_{run}_"))
        return frozenset(found)

    @functools.cached_property
    def fragment_pairs(self) -> tuple[str, ...]:
        """Every key fragment holds one of these: two of its parts joined, not a stage's name."""
        stages = {stage for _, _, stage in self.hooks.values()}
        pairs = set()
        for fragment in self.key_fragments:
            parts = fragment.strip("_").split("_")
            joined = ["_".join(parts[i:i + 2]) for i in range(len(parts) - 1)]
            pairs.add(next((p for p in joined if p not in stages), joined[0]))
        return tuple(sorted(pairs))

    @functools.cached_property
    def fragment_runs(self) -> tuple[str, ...]:
        """Every key fragment holds one of these: a part of six letters or more that some runs
        of two parts share (``custom``, ``fusion``), else the run itself (``post_pass``). Few,
        rare substrings: the prefilter tests them on every file."""
        runs = set(self.fragment_pairs)
        found: set[str] = set()
        while runs:
            counts = collections.Counter(p for run in runs for p in set(run.split("_"))
                                         if len(p) >= 6)
            if not counts:
                found |= runs
                break
            part = max(counts, key=lambda p: (counts[p], len(p), p))
            found.add(part)
            runs = {run for run in runs if part not in run.split("_")}
        return tuple(sorted(found))

    def may_store_dynamically(self, text: str, module: str) -> bool:
        """Might this source store into a config module under a computed or split key? It holds
        a piece of a split hook key as a word, or it writes a store form (``setattr``,
        ``__dict__``, ``patch``, ...) on a name it binds to a config module (or, inside that
        module's package, on ``config``) with a key that is not a plain literal. The index and
        the prefilter ask exactly this, so they agree on which files are read whole."""
        if not self.hooks:
            return False
        if any(part in text for part in self.fragment_runs) \
                and any(run in text for run in self.fragment_pairs) \
                and not self.key_fragments.isdisjoint(_WORD.findall(text)):
            return True
        if not any(word in text for word in STORE_WORDS):
            return False
        inside = any(module == p or module.startswith(p + ".") for p in self.config_packages)
        if not inside and not any(word in text for word in self.config_words):
            return False
        from lite_guard.identity import is_torch_module

        return _stores_into(text, lambda: _config_aliases(text, self.config_modules, inside),
                            dicts=not is_torch_module(module))

    @functools.cached_property
    def _key(self) -> str:
        return repr((sorted(self.bases.items()), sorted(self.hooks.items()), sorted(self.roots),
                     sorted(self.graph_types.items()), sorted(self.mutations.items()),
                     sorted(self.arguments.items()), sorted(self.lowerings),
                     sorted(self.rewriters)))

    def key(self) -> str:
        """A stable text of the vocabulary (part of the per-file cache key)."""
        return self._key


_IMPORT_LINE = re.compile(r"^[ \t]*(?:from[ \t]+(torch[\w.]*)[ \t]+import[ \t]+\(?([^)#\n]*)"
                          r"|import[ \t]+(torch[\w.]*)(?:[ \t]+as[ \t]+(\w+))?)", re.M)


def torch_import_heads(text: str) -> dict[str, str]:
    """The names a file's imports bind to torch or something in it -> what they name
    (``import torch``: torch; ``import torch._inductor.fx_passes.post_grad as pg``;
    ``from torch._inductor import ir``: torch._inductor.ir)."""
    heads: dict[str, str] = {}
    for match in _IMPORT_LINE.finditer(text):
        if match[3]:
            if match[4]:
                heads[match[4]] = match[3]
            else:
                heads["torch"] = "torch"
            continue
        for name in match[2].split(","):
            words = name.split()
            if words and words[0].isidentifier():
                heads[words[-1] if len(words) == 3 and words[1] == "as" else words[0]] = \
                    f"{match[1]}.{words[0]}"
    return {head: target for head, target in heads.items() if head.isidentifier()}


@functools.lru_cache(maxsize=256)
def patch_pattern(prefixes: tuple[str, ...]) -> "re.Pattern[str]":
    """An assignment to a dotted name starting with one of ``prefixes`` (regular expressions
    such as ``torch\\.(?:_inductor|fx)\\b``; group 1: the dotted target), a setattr on one
    (group 2), or a call of exec / eval. Each branch starts with literal text (a pattern
    starting with a look-behind or ``\\b`` took 2 s over transformers' 1,500 torch files)."""
    names = "|".join(prefixes)
    return re.compile(rf"((?:{names})(?:(?:\.\w+)+(?:\[[^\]\n]*\])?|\[[^\]\n]*\]))[ \t]*=(?!=)"
                      rf"|(?:setattr|patch\.object|patch\.multiple)\s*\(\s*((?:{names})[\w.]*)\s*,"
                      rf"|(?:exec|eval)\s*\(")


@functools.lru_cache(maxsize=8)
def mock_patch_pattern(packages: tuple[str, ...]) -> "re.Pattern[str]":
    """``unittest.mock.patch("torch._inductor....f", new)``: a store named by a string (group 2,
    as the setattr branch above), whatever the file imports."""
    return re.compile(r"patch\s*\(\s*(?:target\s*=\s*)?[\"']((?:"
                      + "|".join(re.escape(p) for p in packages) + r")\.[\w.]+)[\"']")


@functools.lru_cache(maxsize=8)
def _from_parent(packages: tuple[str, ...]) -> "re.Pattern[str]":
    """``from torch import fx``: a pipeline package imported by its last name."""
    return re.compile("|".join(
        rf"from[ \t]+{re.escape(p.rpartition('.')[0])}[ \t]+import[^\n]*\b{re.escape(p.rpartition('.')[2])}\b"
        for p in packages) or r"(?!)")


def patches_pipeline(text: str, packages: tuple[str, ...]) -> "re.Pattern[str] | None":
    """The pattern of the stores above for this file, when one of them stores into torch's
    compile pipeline (``packages``: ``torch._inductor`` ...), else None. Through the names the
    file imports from torch: one bound to a module in a package (``post_grad``,
    ``from torch._inductor import ir``), or to a parent of one (``torch``: then only
    ``torch._inductor...`` counts)."""
    if not any(p in text for p in packages) and _from_parent(packages).search(text) is None:
        return None  # names no pipeline package (nearly every file: one substring test each)
    found = _import_patches(text, packages)
    mock = mock_patch_pattern(packages)
    if found is None:
        return mock if mock.search(text) else None
    return _either(found, mock) if mock.search(text) else found


def iterates_pipeline(text: str, packages: tuple[str, ...]) -> bool:
    """Does this source loop over a name it imports from torch's compile pipeline (``for entry
    in pass_patterns[1].patterns.values()``)? An attribute stored on what such a loop yields
    edits torch's own objects (torch_npu's ``entry.extra_check = f``): the file is read whole."""
    if " in " not in text or (not any(p in text for p in packages)
                               and _from_parent(packages).search(text) is None):
        return False
    heads = [re.escape(head) for head, target in torch_import_heads(text).items()
             if any(target == p or target.startswith(p + ".") for p in packages)]
    return bool(heads) and re.search(r"\bin\s+(?:" + "|".join(heads) + r")\b", text) is not None


@functools.lru_cache(maxsize=64)
def _either(first: "re.Pattern[str]", second: "re.Pattern[str]") -> "re.Pattern[str]":
    return re.compile(f"{first.pattern}|{second.pattern}")


def _import_patches(text: str, packages: tuple[str, ...]) -> "re.Pattern[str] | None":
    """patches_pipeline's stores through the names the file imports from torch."""
    prefixes = []
    for head, target in torch_import_heads(text).items():
        if any(target == p or target.startswith(p + ".") for p in packages):
            prefixes.append(re.escape(head) + r"\b")
            continue
        below = sorted({p[len(target) + 1:] for p in packages if p.startswith(target + ".")})
        if below:
            prefixes.append(re.escape(head) + r"\.(?:" + "|".join(map(re.escape, below)) + r")\b")
    if not prefixes:
        return None
    pattern = patch_pattern(tuple(sorted(prefixes)))
    for match in pattern.finditer(text):
        at = match.start()
        if match[1] is not None:  # a statement's own target: only blanks (or ';') before it
            line_start = text.rfind("\n", 0, at) + 1
            before = text[line_start:at]
            if before.strip() and not before.rstrip().endswith(";"):
                continue
        elif match[2] is None and at and (text[at - 1].isalnum() or text[at - 1] in "._"):
            continue  # model.eval(), my_exec(
        return pattern
    return None


# The ways Python stores into a module under a name computed at run time: setattr(m, k, v),
# m.__setattr__(k, v), m.__dict__[k] = v, vars(m)[k] = v, and a config module's patch(k, v) /
# patch(d) / patch(**d). Language and torch-config API, not a list of passes.
_OPTIONS_DICT = re.compile(r"\boptions\s*=\s*\{")
STORE_WORDS = frozenset({"setattr", "__setattr__", "__dict__", "vars", "patch"})
_WORD = re.compile(r"\w+")


_LIT = r"""(?:[rRbBuU]?"[^"\\\n]*"|[rRbBuU]?'[^'\\\n]*')"""  # a plain one-line string literal


def _config_aliases(text: str, config_modules: frozenset[str], inside: bool) -> list[str]:
    """The names a file binds to a config module by its imports (``import torch._inductor.config
    as ic``, ``from torch._inductor import config``, ``from .. import config as c`` inside the
    package), and the dotted paths themselves (``torch._inductor.config.patch(...)``). Read
    from the import statements only (a pattern over the whole file cost 12 ms a module)."""
    names: set[str] = {dotted for dotted in config_modules if dotted in text}
    lines = iter(source_lines(text))
    for line in lines:
        if "import" not in line:
            continue
        statement = line.strip()
        if statement.startswith("from") and "(" in statement and ")" not in statement:
            for more in lines:  # from x import (a,\n b)
                statement += " " + more.strip()
                if ")" in more:
                    break
        for dotted in config_modules:
            package, _, leaf = dotted.rpartition(".")
            if statement.startswith("import") and dotted in statement:
                names.update(re.findall(rf"{re.escape(dotted)}\s+as\s+(\w+)", statement))
            elif statement.startswith("from") and leaf in statement:
                source = statement[4:].split("import", 1)[0].strip()
                if source == package or inside and not source.strip("."):
                    for alias in re.finditer(rf"\b{leaf}\b(?:\s+as\s+(\w+))?",
                                             statement.split("import", 1)[1]):
                        names.add(alias[1] or leaf)
    return sorted(names)


# After a store form's name: its opening bracket, and what must (not) follow. The receiver is
# read around each hit (str.find over the file, then a few small matches: one pattern for the
# whole store tried at every position of a large module took 4 ms).
_OPENS = {"setattr": "(", "vars": "(", "__setattr__": "(", "__dict__": "[", "patch": "("}
_AFTER = {
    "setattr": re.compile(rf"\s*\(\s*(?P<r>[\w.]+)\s*,(?!\s*{_LIT}\s*,)"),
    "vars": re.compile(rf"\s*\(\s*(?P<r>[\w.]+)\s*\)\s*\[(?!\s*{_LIT}\s*\])"),
    "__setattr__": re.compile(rf"\s*\((?!\s*{_LIT}\s*,)"),
    "__dict__": re.compile(rf"\s*\[(?!\s*{_LIT}\s*\])"),
    # patch(d) / patch(**d) / patch({k: v}) / patch(k, v): any first argument but a literal key
    # with its value, a keyword, nothing, or a dict whose first key is a literal
    "patch": re.compile(rf"\s*\((?!\s*(?:{_LIT}\s*,|\w+\s*=(?!=)|\)|\{{\s*[\"'}}]))"),
    # inside torch only a single key: patch(k, v) with k not a literal (a dict torch is handed
    # is checked where it is written; LG006)
    "patch1": re.compile(rf"\s*\((?!\s*(?:{_LIT}\s*,|\w+\s*=(?!=)|\)|\{{|\*\*))[^(),\n]*,"),
}


# after ``setattr``: not a call (the function handed on or bound: an alias, a partial), or a
# call whose first argument is starred
_SETATTR_OPAQUE = re.compile(r"(?!\s*\()|\s*\(\s*\*")


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"  # what a regular expression's \w is


def _word_at(text: str, start: int, end: int) -> bool:
    """Is ``text[start:end]`` not part of a longer word (``\b`` on both sides)?"""
    return (start == 0 or not _is_word_char(text[start - 1])) \
        and (end >= len(text) or not _is_word_char(text[end]))


def _keyword_at(text: str, start: int) -> bool:
    """May the word at ``start`` be a keyword argument's name? Not when it is part of a longer
    word, nor an attribute (``self.backend = b``: a dot before it on its line)."""
    at = start - 1
    while at >= 0 and text[at] in " \t\f":
        at -= 1
    return at < 0 or not (_is_word_char(text[at]) or text[at] == ".")


_MODULE_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w. \t,]+?)[ \t]*(?:#|;|$)", re.M)


def _imported_modules(text: str) -> dict[str, str]:
    """Names the file binds to a module by ``import a.b`` / ``import a as b`` (the statement
    form; ``from`` imports bind what they name, kept by the callers)."""
    bound: dict[str, str] = {}
    for m in _MODULE_IMPORT.finditer(text):
        for part in m.group(1).split(","):
            words = part.split()
            if len(words) == 3 and words[1] == "as":
                bound[words[2]] = words[0]
            elif len(words) == 1:
                bound[words[0].split(".", 1)[0]] = words[0].split(".", 1)[0]
    return bound


def _binds(text: str, word: str) -> bool:
    """Does the file bind ``word`` as a name (``from torch import compile``, ``... as
    compile``, ``def compile``, ``compile = ...``)? A test on the text, erring towards yes."""
    if re.search(rf"\b(?:def|class)\s+{re.escape(word)}\b|\bfor\b[^\n]*\b{re.escape(word)}\b[^\n]*\bin\b",
                 text):
        return True
    return re.search(rf"(?:\bimport\b[^\n]*|\bas\s+|^[ \t]*|,\s*)\b{re.escape(word)}\b"
                     rf"(?!\s*\()(?:\s*(?:=(?!=)|,|\)|\n|$|:))", text, re.M) is not None


def _names_callable(text: str, word: str, packages: frozenset[str]) -> bool:
    """Does the text name the callable ``word`` of one of ``packages`` (``torch.compile``)?
    An occurrence as a word counts unless it is an attribute of a name the file imports as a
    module of another package (``re.compile``, ``import regex as re``): resolved through the
    file's imports, not by the spelling of the receiver."""
    at, modules = text.find(word), None
    while at != -1:
        end = at + len(word)
        if _word_at(text, at, end):
            before = at - 1
            if before < 0 or text[before] != ".":
                # a bare name: a builtin of that name (``compile(source, path, "exec")``) unless
                # the file binds the word itself (an import, a def, an assignment)
                if hasattr(builtins, word):
                    if _binds(text, word):
                        return True
                elif _called_or_decorator(text, at, end) or _imports_name(text, word):
                    # a call or a decorator of a name the file may have by a star import;
                    # the word in prose ("to optimize the kernel") names nothing
                    return True
                at = text.find(word, at + 1)
                continue
            start = before
            while start > 0 and (_is_word_char(text[start - 1]) or text[start - 1] == "."):
                start -= 1
            root = text[start:before].split(".", 1)[0]
            if modules is None:
                modules = _imported_modules(text)
            target = modules.get(root)
            if target is not None:
                if target.split(".", 1)[0] in packages:
                    return True  # torch._dynamo.optimize, torchdynamo.optimize: the callable
            elif _called_or_decorator(text, start, end):
                # self.compile(...), a.b.optimize(...): a receiver the index may resolve; a
                # chain in prose or in an import of another package (``from scipy.optimize
                # import x``) calls nothing
                return True
        at = text.find(word, at + 1)
    return False


def _imports_name(text: str, word: str) -> bool:
    """Does an import statement name ``word`` (``from torch._dynamo import optimize as opt``:
    the index calls ``opt`` by that name)? A parameter or a keyword of that name is the file's
    own."""
    w = re.escape(word)
    return re.search(rf"\bimport\b[^\n]*\b{w}\b|\bimport\s*\([^)]*\b{w}\b", text) is not None


def _called_or_decorator(text: str, start: int, end: int) -> bool:
    """Is the name written at ``text[start:end]`` called (``(`` follows it) or a decorator
    (``@`` before it)?"""
    return re.match(r"[ \t]*\(", text[end:end + 64]) is not None \
        or text[max(0, start - 64):start].rstrip(" \t").endswith("@")


def _holds_word(text: str, word: str) -> bool:
    """``re.search(rf"\b{word}\b", text)`` for a word, by ``str.find`` (a pattern led by
    ``\b`` is tried at every position of the text: ten times slower)."""
    at = text.find(word)
    while at != -1:
        if _word_at(text, at, at + len(word)):
            return True
        at = text.find(word, at + 1)
    return False


def _receiver_before(text: str, at: int) -> str | None:
    """``config`` of ``config.patch`` (``at``: where ``patch`` starts), or None."""
    i = at - 1
    while i >= 0 and text[i] in " \t":
        i -= 1
    if i < 0 or text[i] != ".":
        return None
    i -= 1
    while i >= 0 and text[i] in " \t":
        i -= 1
    end = i + 1
    while i >= 0 and (_is_word_char(text[i]) or text[i] == ".") and end - i < 200:
        i -= 1
    return text[i + 1:end] or None


def _stores_into(text: str, receivers: Any, dicts: bool) -> bool:
    """Does ``text`` store into one of ``receivers()`` (dotted names, computed when a store
    form is first found) with a key that is not a plain literal? A literal key is a seed word
    when it is a hook key, and no hook at all otherwise."""
    wanted: set[str] | None = None
    for word, bracket in _OPENS.items():
        start = 0
        while True:
            at = text.find(word, start)
            if at < 0:
                break
            start = end = at + len(word)
            if at and _is_word_char(text[at - 1]) or end < len(text) and _is_word_char(text[end]):
                continue
            if word in ("setattr", "vars"):
                if at and text[at - 1] == ".":
                    continue
                if word == "setattr" and _SETATTR_OPAQUE.match(text, end) is not None:
                    # setattr as a value (s = setattr, partial(setattr, m)) or setattr(*args):
                    # any receiver; the file names a config module (checked by the caller)
                    if wanted is None:
                        wanted = set(receivers())
                    if wanted:
                        return True
                    continue
                after = _AFTER[word].match(text, end)
                receiver = after["r"] if after is not None else None
            else:
                receiver = _receiver_before(text, at)
                form = "patch1" if word == "patch" and not dicts else word
                if receiver is None or _AFTER[form].match(text, end) is None:
                    continue
            if receiver is None:
                continue
            if wanted is None:
                wanted = set(receivers())
            if receiver in wanted:
                return True
    return False


def _custom_hooks(registry: Any) -> list:
    if hasattr(registry, "custom_hooks"):
        return list(registry.custom_hooks())
    return []


# ---- module names ----------------------------------------------------------------------------

_PACKAGES: dict[str, tuple[str, ...]] = {}  # directory -> its dotted package (memo)


def _package_of(directory: str) -> tuple[str, ...]:
    """The dotted package a directory is: its parents count while they hold ``__init__.py``;
    a directory without one inside such a package is a namespace portion (PEP 420), as
    ``sglang/srt/`` is: Python imports ``sglang.srt.compilation.x`` from it, so that is its name.
    Up the directories first, then down (no recursion: a tree 3,000 directories deep)."""
    chain: list[tuple[str, str, bool | None]] = []  # (directory, name, has __init__.py; None: top)
    result: tuple[str, ...] = ()
    current = directory
    while True:
        if current in _PACKAGES:
            result = _PACKAGES[current]
            break
        parent, name = os.path.split(current)
        if not name or parent == current:
            break
        has_init = os.path.isfile(os.path.join(current, "__init__.py"))
        if not has_init and not name.isidentifier():
            chain.append((current, name, None))  # not a package, whatever is above it
            break
        chain.append((current, name, has_init))
        current = parent
    if len(_PACKAGES) > 65536:
        _PACKAGES.clear()
    for current, name, has_init in reversed(chain):
        if has_init is None:
            result = ()
        elif has_init:
            result = (*result, name)
        else:
            result = (*result, name) if result else ()
        _PACKAGES[current] = result
    return result


def module_name(path: str | PurePath, on_disk: bool | None = None) -> str:
    """The dotted module a file is, by the package layout around it: parent directories count
    while they hold an ``__init__.py``. A path that is not on disk (an example, a test) is read
    as written, relative: ``torch/_inductor/fx_passes/x.py`` -> ``torch._inductor.fx_passes.x``."""
    text = os.fspath(path)
    directory, name = os.path.split(text)
    stem = os.path.splitext(name)[0]
    tail = [] if name == "__init__.py" else [stem]
    if on_disk if on_disk is not None else os.path.isfile(text):
        parts = [*_package_of(os.path.abspath(directory or ".")), *tail]
    else:
        parts = [p for p in PurePath(directory).parts if p not in ("", ".", "/")] + tail
    return ".".join(p for p in parts if p.isidentifier()) or stem


def _top_directory(path: str, module: str) -> str:
    """The directory of a file's top-level package (``/r/vllm`` for ``vllm.compilation.x`` at
    ``/r/vllm/compilation/x.py``; ``/r`` for ``executorch.backends.x`` at ``/r/backends/x.py``,
    a checkout that is its package)."""
    parts = real_module(module).split(".")
    directory = os.path.dirname(os.path.abspath(path))
    for _ in range(len(parts) - (1 if os.path.basename(path) == "__init__.py" else 2)):
        directory = os.path.dirname(directory)
    return directory


_SELF_IMPORT = re.compile(rb"^[ \t]*(?:from|import)[ \t]+([A-Za-z_]\w*)\.([A-Za-z_]\w*)"
                          rb"((?:\.[A-Za-z_]\w*)*)", re.M)


def checkout_packages(files: Iterable[tuple[str, str, bytes | None]]) -> dict[str, str]:
    """Checkouts that are a package by installation, not by ``__init__.py`` (executorch: its
    setup maps ``executorch`` onto the checkout root, which holds ``backends/``, ``exir/``):
    the layout names a file ``backends.xnnpack.x`` while its own files import it as
    ``executorch.backends.xnnpack.x``, and Python (so the guard, by ``__module__``) names it
    so. ``files``: (path, module by layout, bytes). Returns directory -> the package name the
    checkout's files import it by: the prefix their imports put before a submodule of the tree
    (``from executorch.backends.xnnpack._passes.x import P`` where ``backends.xnnpack._passes.x``
    is linted), in more files than import the tree by its layout name (transformers imports
    ``transformers.x`` itself: ``liger_kernel.transformers.x`` would be another package's),
    when no linted package has that name."""
    files = [f for f in files if f[2] is not None]
    modules = {real_module(module) for _, module, _ in files}
    tops = {module.split(".", 1)[0] for module in modules}
    votes: dict[str, dict[str, int]] = {}
    packaged = []  # (root, top, bytes) of each file in a package
    for path, module, data in files:
        top = real_module(module).split(".", 1)[0]
        if "." not in real_module(module) and os.path.basename(path) != "__init__.py":
            continue  # a top-level script, in no package
        root = os.path.dirname(_top_directory(path, module))
        packaged.append((root, top, data))
        if f".{top}.".encode() not in data:  # type: ignore[operator]
            continue  # no X.top.sub in it (the scan below is the costly part: most files)
        prefixes = set()
        for match in _SELF_IMPORT.finditer(data):  # type: ignore[arg-type]
            prefix, head, rest = (g.decode("ascii", "replace") for g in match.groups())
            if head != top or prefix in tops or not rest:
                continue
            dotted = head + rest
            if dotted in modules or dotted.rpartition(".")[0] in modules:
                prefixes.add(prefix)
        for prefix in prefixes:
            count = votes.setdefault(root, {})
            count[prefix] = count.get(prefix, 0) + 1
    found = {}
    for root, count in votes.items():
        prefix = max(sorted(count), key=count.__getitem__)
        # files of the checkout importing their own top package by its layout name
        plain = sum(1 for there, top, data in packaged if there == root and re.search(
            rb"^[ \t]*(?:from|import)[ \t]+" + re.escape(top.encode()) + rb"\.", data, re.M))
        if count[prefix] > plain:
            found[root] = prefix
    return found


def checkout_module(path: str, module: str, packages: dict[str, str]) -> str:
    """``module`` (named by layout) under the package its checkout is (``checkout_packages``)."""
    prefix = packages.get(os.path.dirname(_top_directory(path, module))) if packages else None
    return f"{prefix}.{module}" if prefix and module else module


# ---- the per-file summary -------------------------------------------------------------------

def summarize(source: str | bytes, module: str, is_package: bool, vocab: Vocabulary,
              tree: ast.Module | None = None, light: bool = False,
              triggers: "re.Pattern[str] | None" = None,
              key_constants: dict[str, str] | None = None) -> dict:
    """One file's summary (JSON-able). Raises SyntaxError / RecursionError / ValueError.

    ``light``: the file holds none of the index rules' trigger bytes, so it has no site; only
    what other files may resolve through it is read (imports, classes, module-level names,
    pipeline roots), never function bodies: three times faster on a typical tree.
    ``triggers``: the same test per function, so a function whose text holds no trigger (nor a
    module constant naming a hook key) is read light too.
    ``key_constants``: names this file imports that another module binds to a hook key
    (``from .keys import PASS_KEY`` -> ``{"PASS_KEY": "post_grad_custom_post_pass"}``, or
    ``keys.PASS_KEY`` for a module import); the index finds them and reads the file again."""
    if tree is None:
        tree = ast.parse(source)
    text = source.decode("utf-8", "replace") if isinstance(source, bytes) else source
    # A store into a config module under a computed key, or a hook key split into literals,
    # holds no whole trigger word: the file (and each function that may hold one) is read whole.
    dynamic = vocab.may_store_dynamically(text, module)
    patches = not is_torch_module(module) and vocab.may_monkeypatch(text)
    # Outside torch, a file rewriting an FX graph (a registry graph_mutation member) may install
    # the rewrite over another project's code (Vocabulary.may_rewrite_graph): read whole too.
    rewrites = not is_torch_module(module) and vocab.may_rewrite_graph(text)
    dynamic = dynamic or patches or rewrites
    handing = not is_torch_module(module) and vocab.may_hand_arguments(text)
    light = light and not dynamic and not handing and (is_torch_module(module) or not (
        "options" in text and _OPTIONS_DICT.search(text)))  # options={KEY: p}, outside torch
    extractor = _Extractor(module, is_package, source_lines(text), vocab, light)
    extractor.summary["suppress"] = suppression_comments(extractor.lines, tree)
    extractor.key_constants = key_constants or {}
    extractor.rewrites = rewrites
    extractor.threads = extractor.outside_torch and may_thread_values(text)
    # a graph producer known by a tracing call (registry graph_producer rows), not annotated
    extractor.traces = extractor.outside_torch and vocab.producer_call is not None \
        and vocab.producer_call.search(text) is not None
    # A member call that rewrites a graph names the member in the text (an identifier written
    # with characters Python folds, NFKC, is not ASCII: then any function may)
    extractor.names_mutators = not text.isascii() or any(m in text for m in vocab.graph_mutators) \
        or rewrites
    extractor.rewrites_entries = patches and iterates_pipeline(text, vocab.pipeline_packages)
    # Module-level bindings first: a function may call a name bound further down the file
    # (``def f(k, p): put(k, p)`` ... ``put = partial(setattr, config)``).
    for statement in tree.body if dynamic else ():
        if isinstance(statement, ast.Assign) and isinstance(statement.value, (
                ast.Name, ast.Attribute, ast.Call, ast.Tuple, ast.List)):
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    extractor.ast_binds[("", target.id)] = statement.value
    if triggers is not None and not light and not rewrites:
        extractor.function_filter = _FunctionFilter(text, tree, triggers, vocab, extractor.watched,
                                                    dynamic)
        extractor.function_filter.options = extractor.outside_torch
        if handing:  # a function handing a value to partition_fn=, PassManager, backend=
            extractor.function_filter.arguments = vocab._argument_pattern
        if patches:  # a function assigning to an attribute of something imported from torch
            extractor.function_filter.patches = patches_pipeline(text, vocab.pipeline_packages)
        # a function calling a module-level alias of setattr may store (_store_callee)
        extractor.function_filter.constants |= {
            name for (_, name) in list(extractor.ast_binds)
            if extractor._store_callee(ast.Name(name)) is not None}
    extractor.visit(tree)
    if extractor.handoffs:
        extractor.graph_handoffs()
    if extractor.outside_torch:
        called: set[str] = set()
        inside: dict[str, set[str]] = {}
        handed = _handed(tree, vocab.compiler_keywords, called, vocab.compiler_positions, inside)
        if handed:
            extractor.summary["handed"] = handed
        only_inside = {leaf: sorted(classes) for leaf, classes in inside.items()
                       if leaf in handed and "" not in classes}
        if only_inside:  # handed on only by the code of these classes (LG001)
            extractor.summary["handed_in"] = only_inside
        if called:  # a graph function called here is a step of what calls it (LG001)
            extractor.summary["called"] = sorted(called)[:_MAX_HANDED]
        lists = _pass_lists(tree)
        if lists:
            extractor.summary["lists"] = lists
    return extractor.summary


_BLOCKS = frozenset(("body", "orelse", "finalbody", "handlers", "cases"))  # statement lists


def _statements(body: list[ast.stmt], stop_at: tuple[type, ...] = ()) -> Iterator[ast.AST]:
    """The statements of ``body`` and of the blocks nested in them, in ``ast.walk``'s order
    (breadth first), without walking any expression: a def, a return or an import is only ever
    a statement, and a function's expressions are most of its nodes. ``stop_at``: statements
    (defs, classes) whose blocks are not entered."""
    queue = collections.deque(body)
    while queue:
        node = queue.popleft()
        yield node
        if stop_at and isinstance(node, stop_at):
            continue
        for name in node._fields:
            if name in _BLOCKS:
                queue.extend(getattr(node, name))  # except handlers and match cases too


# ``    gm = drop_casts(gm`` in a function body: the text test for _threaded_calls (a bare name
# called, as a pipeline calls the passes it imports; ``x = self.norm(x)`` in a model is not)
_THREADED = r"^[ \t]+(\w+)[ \t]*=[ \t]*(\w+)\([ \t]*\1\b"
_THREADED_TEXT = re.compile(_THREADED, re.M)
_THREADED_BYTES = re.compile(_THREADED.encode(), re.M)


def may_thread_values(text: str | bytes) -> bool:
    """Does this source thread a value through two differently named calls, ``g = f(g)``?
    Outside torch such a file is read for pipelines (and parsed by the prefilter)."""
    pattern = _THREADED_BYTES if isinstance(text, bytes) else _THREADED_TEXT
    callees = set()
    for match in pattern.finditer(text):
        callees.add(match.group(2))
        if len(callees) >= 2:
            return True
    return False


def _threaded_calls(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Call]:
    """The calls a function threads one value through, ``g = f(g, ...)`` (tt-torch's
    ``gm = bypass_redundant_cast(gm)``, one statement after another, in any of its blocks):
    each call handed, first, the variable it then rebinds. A sequence of two or more distinct
    callees is the shape of a pipeline, and then its other statement calls handed a variable
    first (``prune_inputs(program, ...)``, on the program it exported from that graph) are its
    steps too; LG001 decides which of them rewrite a graph."""
    found, callees, others = [], set(), []
    for statement in _statements(node.body, (ast.FunctionDef, ast.AsyncFunctionDef,
                                             ast.ClassDef)):
        value = statement.value if isinstance(statement, (ast.Assign, ast.Expr)) else None
        if not (isinstance(value, ast.Call) and value.args and isinstance(value.args[0], ast.Name)
                and isinstance(value.func, (ast.Name, ast.Attribute))) or len(found) >= 16:
            continue
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], ast.Name) \
                and value.args[0].id == statement.targets[0].id:
            found.append(value)
            callees.add(_dotted(value.func))
        else:  # f(program, ...) in the same pipeline: run on a graph it derived (LG001 decides)
            others.append(value)
    return found + others[:16] if len(callees) >= 2 else []


def _graph_return(node: ast.FunctionDef | ast.AsyncFunctionDef, vocab: Vocabulary,
                  imports: dict | None = None) -> str:
    """The FX graph type a function is annotated to return (``-> torch.fx.Graph``,
    ``-> "torch.export.ExportedProgram"``, an ``Optional`` of one), when none of its parameters
    is annotated as a graph: it builds the graph it returns (traces or exports a module). ""
    otherwise, or for a graph type of another package (``-> onnx_ir.Graph``)."""
    def graph_type(annotation: ast.expr | None) -> str:
        for alternative in _alternatives(annotation):
            if isinstance(alternative, ast.Constant) and isinstance(alternative.value, str):
                dotted = alternative.value.strip()
            else:
                dotted = _dotted(alternative)
            text = dotted.rsplit(".", 1)[-1] if dotted else _last(alternative)
            if text in vocab.graph_names and not _foreign_annotation(dotted, imports, vocab):
                return text
        return ""

    returned = graph_type(node.returns)
    if not returned:
        return ""
    arguments = node.args
    parameters = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    if any(graph_type(a.annotation) for a in parameters):
        return ""  # a transform of the graph it is handed: its calls are its steps
    return returned


def _produced_calls(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Call]:
    """The calls of a graph producer's own statements handed, first, a local it assigned from
    a call (``graph = super().trace(root)``, then ``self.remove_inplace(graph)``): what it runs
    on the graph it built. Not a parameter, not a value it never built (a constant, a loop's
    element)."""
    params = {a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]}
    built: set[str] = set()
    nested = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    statements = list(_statements(node.body, nested))
    for statement in statements:
        if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call):
            for target in statement.targets:
                names = target.elts if isinstance(target, ast.Tuple) else [target]
                built.update(n.id for n in names if isinstance(n, ast.Name))
    found = []
    for statement in statements:
        value = statement.value if isinstance(statement, (ast.Assign, ast.Expr)) else None
        if isinstance(value, ast.Call) and value.args and isinstance(value.args[0], ast.Name) \
                and value.args[0].id in built and value.args[0].id not in params \
                and isinstance(value.func, (ast.Name, ast.Attribute)) and len(found) < 16:
            found.append(value)
    return found


def _producer_call(call: ast.expr, vocab: Vocabulary, imports: dict | None) -> str:
    """The dotted callee when ``call`` calls a registry ``graph_producer`` (``make_fx(f)(*a)``
    by its inner call), else "". A name the file imports must resolve to the row's module or a
    package above it (``torch.fx.symbolic_trace``), or one of the same last part (the
    ``torch.quantization.quantize_fx`` alias); ``torch.jit.trace`` is not ``Tracer.trace``. A
    method of a row (``Tracer.trace``) is also called on a local instance (``tracer.trace``)."""
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Call):
        call = call.func
    if not isinstance(call, ast.Call):
        return ""
    dotted = _dotted(call.func)
    leaf = dotted.rsplit(".", 1)[-1] if dotted else ""
    if leaf not in vocab.producer_leaves and not (isinstance(call.func, ast.Name)):
        return ""
    head, _, rest = dotted.partition(".")
    target = (imports or {}).get(head, "")
    if not target:  # a local: only a method row's instance (tracer.trace(model))
        return dotted if rest and any(
            name.rsplit(":", 1)[-1].endswith(f".{leaf}") for name in vocab.producers) else ""
    full = f"{target.replace(':', '.')}.{rest}".rstrip(".")
    module, _, leaf = full.rpartition(".")
    for name in vocab.producers:
        row_module, _, qualname = name.partition(":")
        if qualname.rsplit(".", 1)[-1] != leaf or "." in qualname:
            continue
        if row_module == module or row_module.startswith(module + ".") \
                or row_module.rsplit(".", 1)[-1] == module.rsplit(".", 1)[-1]:
            return dotted
    return ""


def _traced_calls(node: ast.FunctionDef | ast.AsyncFunctionDef, vocab: Vocabulary,
                  imports: dict | None) -> tuple[str, list[ast.Call]]:
    """A function that builds an FX graph itself without saying so by a return annotation
    (MQBench's ``prepare_by_platform``: ``graph = tracer.trace(model)``; coremltools'
    ``model = prepare_qat_fx(model, ...)``): a local assigned, in its own statements, from a
    call of a registry ``graph_producer`` (through the file's imports, ``make_fx(f)(*args)``
    included), and the calls of its later statements handed that local first. ("", []) when
    it builds none, when a parameter is annotated as a graph (a transform of the graph it is
    handed: its calls are its steps), or when it returns no value (it hands nothing it built to
    a caller: a test case tracing a module and asserting on it)."""
    leaves = vocab.producer_leaves
    if not leaves:
        return "", []

    def producer(call: ast.expr) -> str:
        return _producer_call(call, vocab, imports)

    nested = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    statements = list(_statements(node.body, nested))
    if not any(isinstance(st, ast.Assign) and isinstance(st.value, ast.Call) and producer(st.value)
               for st in statements):
        return "", []  # builds no graph (the common case: no sort, no second pass)
    built: set[str] = set()
    how, found = "", []
    for statement in sorted(statements,
                            key=lambda s: (getattr(s, "lineno", 0), getattr(s, "col_offset", 0))):
        value = statement.value if isinstance(statement, (ast.Assign, ast.Expr)) else None
        if isinstance(value, ast.Call) and value.args and isinstance(value.args[0], ast.Name) \
                and value.args[0].id in built and isinstance(value.func, (ast.Name, ast.Attribute)) \
                and not producer(value) and len(found) < 16:
            found.append(value)
        if isinstance(statement, ast.Assign):
            made = producer(statement.value)
            for target in statement.targets:
                names = target.elts if isinstance(target, ast.Tuple) else [target]
                for name in names:
                    if isinstance(name, ast.Name):
                        if made:
                            built.add(name.id)
                            how = how or f"{name.id} = {made}(...)"
                        elif not (isinstance(statement.value, ast.Call) and statement.value.args
                                  and isinstance(statement.value.args[0], ast.Name)
                                  and statement.value.args[0].id in built):
                            built.discard(name.id)  # rebound to something else
    returns = any(isinstance(st, ast.Return) and st.value is not None
                  and not isinstance(st.value, ast.Constant)
                  for st in statements)
    if not returns:  # keeps what it built to itself (a test case tracing and asserting)
        return "", []
    if not found or any(  # the annotations alone: a use would walk the body once a parameter
            (t.value.strip() if isinstance(t, ast.Constant) and isinstance(t.value, str)
             else _dotted(t) or _last(t) or "").rsplit(".", 1)[-1] in vocab.graph_names
            for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            for t in _alternatives(a.annotation)):
        return "", []
    return how, found


def _ignores_parameter(node: ast.FunctionDef | ast.AsyncFunctionDef, param: str,
                       vocab: Vocabulary) -> bool:
    """Does this function do something (more than ``pass``, a docstring, ``...``) without ever
    naming its parameter ``param``, nor rewriting a graph through another one? (MQBench's
    ``deploy_qparams_nnie(model: GraphModule, onnx_model_path, ...)``, registered to be handed
    the model, works on an ONNX file; transformers' node fixes ``_fix_amax_dim(gm, node)``
    rewrite the graph through ``node.args = ...`` and are passes.)"""
    body = [s for s in node.body if not isinstance(s, ast.Pass) and not (
        isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if not body:
        return False
    for statement in body:
        for inner in ast.walk(statement):
            if isinstance(inner, ast.Name) and inner.id == param:
                return False
            if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) \
                    and inner.func.attr in vocab.graph_mutators:
                return False  # node.replace_all_uses_with(...): a graph reached otherwise
            if isinstance(inner, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and any(
                    isinstance(t, (ast.Attribute, ast.Subscript))
                    for t in (inner.targets if isinstance(inner, ast.Assign) else [inner.target])):
                return False  # node.args = ...: an object it is handed, changed
    return True


def _returns_own_argument(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Does this function, or one defined in it, return one of its own parameters unchanged?
    A decorator that does (``def register(f): PASSES.append(f); return f``) keeps the function
    and registers it; one returning a new wrapper does not."""
    defs = (ast.FunctionDef, ast.AsyncFunctionDef)
    for inner in (node, *(s for s in _statements(node.body) if isinstance(s, defs))):
        params = {a.arg for a in [*inner.args.posonlyargs, *inner.args.args]}
        # its own returns: not those of a def or class nested in it
        for child in _statements(inner.body, stop_at=(*defs, ast.ClassDef)):
            if isinstance(child, ast.Return) and isinstance(child.value, ast.Name) \
                    and child.value.id in params:
                return True
    return False


_MAX_HANDED = 4000  # names kept per file (hostile input stays small)


def _pass_lists(tree: ast.Module) -> list[list]:
    """The list / tuple displays of three or more names (``[RemoveClone, ConvertToLinear,
    FuseBatchNorm, ...]``, a pass list), each as [line, [dotted names]]: a class of the tree
    listed there with passes is run as they are (LG001). Module-level names only resolve, so a
    display inside a function is kept too: its names are the module's imports and classes."""
    found: list[list] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple)) and len(node.elts) >= 3 \
                and all(isinstance(e, (ast.Name, ast.Attribute)) for e in node.elts):
            names = [_dotted(e) for e in node.elts[:64]]
            if all(names):
                found.append([node.lineno, names])
                if len(found) >= 32:
                    break
    return found


def _handed(tree: ast.Module, compilers: frozenset[str] = frozenset(),
            called: set[str] | None = None,
            positions: dict[str, frozenset[int]] | None = None,
            inside: dict[str, set[str]] | None = None) -> dict[str, list[str]]:
    """Names a file uses as values, not calls: call arguments, elements of list / tuple / set
    displays, dict values, decorators (``f`` in ``register(f)``, ``[f, g]``, ``{"x": f}``,
    ``partial(f)``, ``@register``), by their last part -> the dotted texts. A graph function
    handed on so is run by whatever receives it: a pass manager, a registry, a pass list."""
    found: dict[str, set[str]] = {}
    count = 0
    # Imports inside functions (``from .x import f`` then ``passes.append(f)``): the index binds
    # module-level names only, so such a name is kept as "from:LEVEL:MODULE:NAME" as well.
    local_imports = {alias.asname or alias.name: f"from:{node.level}:{node.module or ''}:{alias.name}"
                     for top in tree.body if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                              ast.ClassDef))
                     for node in _statements([top]) if isinstance(node, ast.ImportFrom)
                     for alias in node.names if alias.name != "*"}
    compared: set[int] = set()  # `x in (a, b)` tests membership, hands nothing on
    # ``inside``: leaf -> the module-level classes whose own code hands it on ("" for any other
    # place): a value handed on only inside a class that is a pass is part of that pass
    owner = {id(sub): top.name for top in tree.body if isinstance(top, ast.ClassDef)
             for sub in ast.walk(top)} if inside is not None else {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):  # met before its comparators (breadth first)
            compared.update(id(c) for c in node.comparators)
        # A compiler (torch.compile's backend=, register_backend's compiler_fn=, compile_fx's
        # inner_compile=, aot_autograd's fw_compiler=, a {"backend": f} of kwargs: the
        # registry's compiler_argument rows) takes a GraphModule too, but compiles it: not a
        # pass (what it calls to rewrite the graph is, LG001).
        if isinstance(node, ast.Call):
            if called is not None and isinstance(node.func, (ast.Name, ast.Attribute)):
                called.add(_last(node.func))  # the names called, for ``called``
            # ... and what it takes by position (``torch._dynamo.optimize(compiler)``,
            # ``register_backend(compiler)``)
            at = (positions or {}).get(_last(node.func), frozenset())
            values = [*(a for i, a in enumerate(node.args) if i not in at),
                      *(k.value for k in node.keywords if k.arg not in compilers)]
        elif isinstance(node, (ast.List, ast.Tuple, ast.Set)) and id(node) not in compared:
            values = node.elts
        elif isinstance(node, ast.Dict):
            values = [v for k, v in zip(node.keys, node.values)
                      if not (isinstance(k, ast.Constant) and k.value in compilers)]
        else:
            continue
        for value in values:
            if isinstance(value, ast.Starred):
                value = value.value
            dotted = _dotted(value) if isinstance(value, (ast.Name, ast.Attribute)) else ""
            if dotted and inside is not None:
                inside.setdefault(dotted.rsplit(".", 1)[-1], set()).add(owner.get(id(node), ""))
            if dotted and count < _MAX_HANDED:
                texts = found.setdefault(dotted.rsplit(".", 1)[-1], set())
                for text in (dotted, local_imports.get(dotted)):
                    if text and text not in texts:
                        texts.add(text)
                        count += 1
    return {leaf: sorted(texts) for leaf, texts in found.items()}


class _FunctionFilter:
    """May this function's body hold a site? Its text must hold a trigger, a local alias of an
    observer / pattern pass (``PMP``), or a module constant that names a hook key."""

    def __init__(self, text: str, tree: ast.Module, triggers: "re.Pattern[str]",
                 vocab: Vocabulary, watched: set[str], dynamic: bool = False) -> None:
        self.text, self.triggers, self.watched = text, triggers, watched
        self.options = False  # outside torch: a function holding options={...} is read (summarize)
        self.arguments: "re.Pattern[str] | None" = None  # outside torch: pass / compiler arguments
        self.patches: "re.Pattern[str] | None" = None  # outside torch: torch attribute stores
        # A function that may store under a computed or split key (Vocabulary.may_store_...).
        self.dynamic = re.compile(r"\b(?:" + "|".join(
            map(re.escape, sorted(STORE_WORDS | vocab.key_fragments, key=len, reverse=True)))
            + r")\b") if dynamic else None
        self.starts = [0]
        for line in source_lines(text, keepends=True):
            self.starts.append(self.starts[-1] + len(line))
        # PASS_KEY = "post_grad_custom_post_pass" at module level: a function may use the name.
        self.constants = {target.id for node in tree.body if isinstance(node, ast.Assign)
                          and _string(node.value) in vocab.hooks
                          for target in node.targets if isinstance(target, ast.Name)}
        self._names: tuple[frozenset[str], "re.Pattern[str] | None"] = (frozenset(), None)

    def __call__(self, node: ast.AST) -> bool:
        first, last = node.lineno - 1, (node.end_lineno or node.lineno)  # type: ignore[attr-defined]
        body = self.text[self.starts[first]:self.starts[min(last, len(self.starts) - 1)]]
        if self.triggers.search(body) is not None:
            return True
        if self.options and "options" in body and _OPTIONS_DICT.search(body) is not None:
            return True  # torch.compile(..., options={KEY: p}): a store into Inductor's config
        if self.arguments is not None and self.arguments.search(body) is not None:
            return True  # aot_autograd(partition_fn=p), PassManager([p]), backend=f
        if self.dynamic is not None and self.dynamic.search(body) is not None:
            return True
        if self.patches is not None and self.patches.search(body) is not None:
            return True
        names = frozenset(self.watched | self.constants)
        if names != self._names[0]:  # aliases found so far (imports come first, usually)
            pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(names))) + r")\b") \
                if names else None
            self._names = (names, pattern)
        return self._names[1] is not None and self._names[1].search(body) is not None


class _Extractor(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool, lines: list[str], vocab: Vocabulary,
                 light: bool = False):
        self.module, self.is_package, self.lines, self.vocab = module, is_package, lines, vocab
        self._columns: dict[int, tuple[list[int], list[int]]] = {}  # _col's table of each line
        self.light = light
        self.function_filter: Any = None  # set by summarize: may a function's body hold a site?
        self.summary: dict = {
            "module": module, "package": is_package, "imports": {}, "stars": [], "classes": {},
            "assigns": {"": {}}, "sites": [], "calls": {},
            "suppress": {},  # summarize: suppression_comments(lines, tree)
        }
        self.scopes: list[tuple[str, str]] = []  # (kind "class"/"function", qualname)
        self.class_methods: list[dict[str, Any]] = []  # per enclosing class: name -> def
        self.loop_sites: dict[tuple, tuple] = {}  # (scope, class, loop variable) -> sites, iterable
        self.watched = set(vocab.short_names)  # local names of observer / pattern-pass callables
        self.argument_callees = set(vocab.argument_names)  # ... of pass / compiler-argument ones
        self.target: Any = None  # what the value being visited is assigned to (for unnamed passes)
        self.in_container = False
        self.hook_keys = vocab.hooks
        self.key_constants: dict[str, str] = {}  # imported name -> the hook key it holds
        self.rewrites = False  # the file calls a graph_mutation member (summarize)
        self.names_mutators = True  # the file's text may name one (summarize)
        self.rewrites_entries = False  # it loops over a name imported from the pipeline
        self.entry_edits: set[int] = set()  # assignments recorded by _entry_edits
        self.registered: set[int] = set()  # registration calls recorded (decorator or call)
        # (scope, name) -> the expression a plain name was last bound to: lets a call through
        # an alias of setattr (``s = setattr``, ``partial(setattr, config)``) or with starred
        # arguments bound to a tuple be read as the store it is (_store_callee)
        self.ast_binds: dict[tuple[str, str], ast.expr] = {}
        from lite_guard.identity import is_torch_module

        # Outside torch a function taking an FX graph that the tree hands on is a pass (inside
        # torch the pipeline roots say what runs: LG005).
        self.outside_torch = not is_torch_module(module)
        # module-level functions taking an unannotated first parameter that no walk made a
        # graph function: one handing it to a graph function of this file is one too
        self.handoffs: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        self.threads = False  # outside torch, the text threads a value: g = f(g); g = h(g)
        self.traces = False  # outside torch, the text names a graph_producer (summarize)

    # ---- scopes --------------------------------------------------------------------------
    @property
    def scope(self) -> str:
        """The enclosing function's qualname ("" at module level or in a class body)."""
        for kind, qualname in reversed(self.scopes):
            if kind == "function":
                return qualname
            if kind == "class":
                return ""  # class bodies do not see function locals; their names are attrs
        return ""

    def _qualname(self, name: str) -> str:
        if not self.scopes:
            return name
        kind, outer = self.scopes[-1]
        return f"{outer}.<locals>.{name}" if kind == "function" else f"{outer}.{name}"

    def _class(self) -> dict | None:
        if self.scopes and self.scopes[-1][0] == "class":
            return self.summary["classes"][self.scopes[-1][1]]
        return None

    def _method_class(self) -> dict | None:
        """The class whose method we are in (for ``self.x = ...``)."""
        if len(self.scopes) >= 2 and self.scopes[-1][0] == "function" \
                and self.scopes[-2][0] == "class":
            return self.summary["classes"][self.scopes[-2][1]]
        return None

    def _earlier_bases(self, node: ast.ClassDef, qualname: str, bases: list) -> None:
        """``class CustomGraphPass(CustomGraphPass)``, ``class Pass(Pass)``: a base named as the
        class is the name's binding before the class statement (an import, an earlier class),
        not the class itself, which read as a cycle, and the pass was never reported. That
        binding is kept under a name no source can spell (``Pass@4``) and the base reads it."""
        own = [i for i, base in enumerate(bases)
               if base[0] == "n" and base[1].split(".", 1)[0] == node.name]
        if not own or self._class() is not None:
            return
        hidden = f"{node.name}@{node.lineno}"
        assigns = self.summary["assigns"].get(self.scope, {})
        earlier = assigns.get(node.name)
        if earlier is not None:
            if earlier[:2] == ["class", qualname] and qualname in self.summary["classes"]:
                # the class it redefines: kept, as a class of its own, under the hidden name
                moved = f"{qualname}@{node.lineno}"
                self.summary["classes"][moved] = self.summary["classes"].pop(qualname)
                earlier = ["class", moved]
            self._bind(hidden, earlier)
        elif not self.scopes and node.name in self.summary["imports"]:
            self.summary["imports"][hidden] = self.summary["imports"][node.name]
            alternatives = self.summary.get("alternatives", {})
            if node.name in alternatives:
                alternatives[hidden] = list(alternatives[node.name])
        else:
            return
        for i in own:
            bases[i] = ["n", hidden + bases[i][1][len(node.name):]]

    def _bind(self, name: str, value: Any) -> None:
        klass = self._class()
        if klass is not None:
            klass["attrs"][name] = ["", value]
            return
        self.summary["assigns"].setdefault(self.scope, {})[name] = value

    # ---- definitions ----------------------------------------------------------------------
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        qualname = self._qualname(node.name)
        bases = []
        for written in node.bases:
            base = self.expr(written)
            while isinstance(written, ast.NamedExpr):
                written = written.value
            # `class P(Pass if c else object)`, `class P(mine or CustomGraphPass)`: either may be
            # the base, so each is one (a pass either way is reported); it was no base at all.
            bases += base[1] if isinstance(written, (ast.IfExp, ast.BoolOp)) and base[0] == "l" \
                else [base]
        for base in node.bases:
            if _last(base) in self.watched and not self.scopes:
                self.watched.add(node.name)  # a subclass of PatternMatcherPass constructs one too
        self._earlier_bases(node, qualname, bases)
        line, col = self._name_position(node, "class")
        self.summary["classes"][qualname] = {
            "line": line, "col": col, "bases": bases, "methods": [], "abstract": [], "raises": [], "attrs": {},
            "decorators": [self.expr(d) for d in node.decorator_list], "scope": self.scope,
        }
        self._bind(node.name, ["class", qualname])
        for decorator in node.decorator_list:
            self.visit(decorator)
        for base in node.bases:
            self.visit(base)
        self.scopes.append(("class", qualname))
        # The class's own methods, so __call__ can be judged by the method it hands its graph to.
        self.class_methods.append({s.name: s for s in node.body
                                   if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))})
        for statement in node.body:
            self.visit(statement)
        self.class_methods.pop()
        self.scopes.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        qualname = self._qualname(node.name)
        klass = self._class()
        if klass is not None:
            klass["methods"].append(node.name)
            if not node.name.startswith("__") and _graph_call(node, None, self.vocab):
                # apply(self, graph): a method that takes one FX graph; called on a module-level
                # object in a pipeline root, it runs that object as a pass (LG005)
                klass.setdefault("takes_graph", []).append(node.name)
            if _is_abstract(node):
                klass["abstract"].append(node.name)
            elif _only_raises_not_implemented(node):
                klass.setdefault("raises", []).append(node.name)
            if node.name == "__init__":
                self._init_flow(klass, node)
            elif node.name == "__call__":
                evidence = _graph_call(node, self.class_methods[-1] if self.class_methods else None,
                                       self.vocab, self.summary["imports"])
                if evidence:
                    klass["graph_call"] = evidence
            elif self.outside_torch and klass["bases"] and not node.name.startswith("__"):
                # PassBase's call(self, graph_module): the base's __call__ runs it. Kept for a
                # class whose base the lint cannot read (executorch's ExportPass in its repo)
                evidence = _graph_call(node, None, self.vocab, self.summary["imports"])
                if evidence:
                    klass.setdefault("graph_methods", {})[node.name] = evidence
            if self.outside_torch and self.vocab.graph_mutators and node.name != "__init__":
                # what a method taking an FX graph (after self) does with it: rewrites it, or
                # hands it to each element of a list (a runner), read by LG001
                params = [*node.args.posonlyargs, *node.args.args][
                    0 if any(isinstance(d, ast.Name) and d.id == "staticmethod"
                             for d in node.decorator_list) else 1:]
                # a method can only rewrite a graph, or hand one to a loop's elements, if the
                # file names a rewriting member or the method loops (its statements, no walk)
                # ``__call__``: an instance of the class may be given as a compiler
                # (``torch.compile(fn, backend=ThunderCompiler())``); what it hands its graph
                # to is kept, as for a function (LG001's compiled rewrites)
                effects = self._graph_effects(node, params, method=node.name != "__call__") \
                    if params and (
                    self.names_mutators or any(isinstance(s, (ast.For, ast.AsyncFor))
                                               for s in _statements(node.body))) else None
                if effects is not None:
                    klass.setdefault("graph_effects", {})[node.name] = effects
            if self.outside_torch and any(isinstance(d, ast.Name) and d.id in (
                    "classmethod", "staticmethod") for d in node.decorator_list) \
                    and _returns_own_argument(node):  # the decorator first: it costs no walk
                # @Registry.register("name") class T: a classmethod handing back what it is
                # given registers it (TensorRT-LLM auto_deploy's TransformRegistry)
                self.summary.setdefault("registrars", []).append(qualname)
        if self.outside_torch and self.rewrites_entries:
            self._entry_edits(node, qualname)
        if klass is None:
            self._bind(node.name, ["func", qualname])
            if not self.scopes and self.outside_torch:
                self._graph_function(node)
            elif self.outside_torch and self.vocab.graph_mutators and self.scopes[-1][0] == "function":
                # a closure: a compiler its factory builds (torch-mlir's wrapper_backend, given
                # to aot_autograd(fw_compiler=...)); what it does with its graph, for LG001's
                # compiled rewrites
                params = [*node.args.posonlyargs, *node.args.args]
                effects = self._graph_effects(node, params) if params else None
                if effects is not None:
                    self.summary.setdefault("graph_effects", {})[qualname] = effects
        for decorator in node.decorator_list:
            if isinstance(decorator, ast.Call) and not self.light \
                    and _last(decorator.func) in self.vocab.registrations and (
                        self.outside_torch or _last(decorator.func) not in self.vocab.lowering_names):
                self._registration(decorator, qualname)  # @register_graph_pattern(...) def h
            if self.outside_torch and not self.light and _last(
                    decorator.func if isinstance(decorator, ast.Call) else decorator) \
                    in self.argument_callees:
                self._argument(decorator, qualname)  # @register_backend def my_backend
        for decorator in node.decorator_list:
            self.visit(decorator)
        for default in [*node.args.defaults, *node.args.kw_defaults]:
            if default is not None:
                self.visit(default)
        self.scopes.append(("function", qualname))
        for argument in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs,
                         node.args.vararg, node.args.kwarg]:
            if argument is not None:
                self.summary["assigns"].setdefault(qualname, {})[argument.arg] = ["param"]
                if argument.annotation is not None and self.outside_torch \
                        and _last(argument.annotation) in self.vocab.short_names:
                    # pm_pass: PatternMatcherPass: what a caller hands in is a pattern pass
                    self.summary.setdefault("param_types", {})[f"{qualname}.{argument.arg}"] = \
                        _last(argument.annotation)
        returns = _returned(node, self)
        if returns:  # what a factory returns, so ``hook = make_pass()`` names the pass
            self.summary.setdefault("returns", {})[qualname] = returns
        root = f"{self.module}:{qualname}" in self.vocab.roots
        if root:
            self.summary["calls"][qualname] = [
                [self.expr(c.func), c.lineno, self._col(c)]
                for c in _walk_calls(node)]
            # Functions the root hands on without calling them (run_and_log(name, fn, gm),
            # a pass list it loops over): steps too (LG005), with the call they are given to.
            self.summary.setdefault("refs", {})[qualname] = [
                [self.expr(ref), ref.lineno, self._col(ref), self.expr(owner)]
                for ref, owner in _walk_refs(node)]
        if self.outside_torch and node.returns is not None \
                and _graph_return(node, self.vocab, self.summary["imports"]):  # light or not
            produced = _produced_calls(node)
            if produced:  # a graph producer running the tree's code on what it built (LG001)
                self.summary.setdefault("producers", {})[qualname] = [
                    [self.expr(call.func), call.lineno, self._col(call)] for call in produced]
        elif self.outside_torch and self.traces and node.returns is None:
            # light or not, its own statements only; a return annotated other than as a graph
            # (``-> nn.Module``) says it hands back a module: its calls are steps, as before
            how, produced = _traced_calls(node, self.vocab, self.summary["imports"])
            if produced:  # a graph producer known by the tracing call it makes (LG001)
                self.summary.setdefault("producers", {})[qualname] = [
                    [self.expr(call.func), call.lineno, self._col(call)] for call in produced]
                self.summary.setdefault("traced", {})[qualname] = how
        if self.threads and klass is None and len(self.scopes) == 1:  # light or not
            threads = _threaded_calls(node)
            if len(threads) >= 2:  # a pass pipeline of the project's own (LG001 decides)
                self.summary.setdefault("pipelines", {})[qualname] = [
                    [self.expr(call.func), call.lineno, self._col(call)] for call in threads]
        sites = len(self.summary["sites"])
        if self.light and not root:  # a root's locals name its steps: always read
            # a light file has no site; what its methods store on self may be what a runner
            # method loops over (``for t in self.transforms: t.run(gm)``, LG001)
            if self.outside_torch:
                self._self_attributes(node)
        elif self.function_filter is not None and not root and not self.function_filter(node):
            self._self_attributes(node)  # a site elsewhere in this file may read self.x
        else:
            for statement in node.body:
                self.visit(statement)
        self.scopes.pop()
        if len(self.summary["sites"]) == sites and not root:
            # Locals matter only to resolve what a site in this function (or a nested one)
            # names; dropping the rest keeps a cached summary small.
            self.summary["assigns"].pop(qualname, None)
        if returns:
            # A factory returning a function or class it defines (``def make(): def joint_pass
            # ...; return joint_pass``): the returned name is that definition, whose runtime
            # identity is ``make.<locals>.joint_pass``. Bound even when the body was read light.
            returned = {r[1] for r in returns if r[0] == "n"}
            for statement in node.body:
                if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                        and statement.name in returned:
                    kind = "class" if isinstance(statement, ast.ClassDef) else "func"
                    self.summary["assigns"].setdefault(qualname, {})[statement.name] = \
                        [kind, f"{qualname}.<locals>.{statement.name}"]
                    if kind == "func" and klass is None and not self.scopes and self.outside_torch:
                        # a builder's returned transform (nncf's *_transformation_builder):
                        # a graph function the factory hands to whoever calls it
                        self._graph_function(statement, f"{qualname}.<locals>.{statement.name}")

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def _graph_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef,
                        returned: str = "") -> None:
        """A module-level function whose first parameter is an FX graph (annotated so, or used
        so): a pass when the tree hands it on as a value (LG001 decides, with ``handed``).
        ``returned``: the qualname of a nested function its module-level factory returns."""
        params = [*node.args.posonlyargs, *node.args.args]
        if returned:
            # called with the one graph it transforms, as a pass class's __call__ is; a closure
            # taking more, (gm, example_inputs), is shaped like a compiler the factory builds
            required = len(params) - len(node.args.defaults) + sum(
                d is None for d in node.args.kw_defaults)
            evidence = _graph_use(node, params[0], self.vocab, self.summary["imports"]) \
                if params and params[0].annotation is not None and required == 1 else ""
            if evidence.startswith("annotated"):
                line, col = self._name_position(node, "def")
                rewrite, callees = _graph_rewrites(node, params[0].arg, self.vocab,
                                                   self.summary["imports"])
                self.summary.setdefault("graph_fns", {})[returned] = [
                    line, col, evidence, [], [rewrite, [self.expr(c) for c in callees]]]
            return
        if _returns_own_argument(node):  # @register-style: hands back what it was given
            self.summary.setdefault("registrars", []).append(node.name)
        # Annotated as a graph type, only: a use alone (``gm.graph``) is not enough for a free
        # function (``node.graph`` reads a Node's graph), and the annotation is what lets the
        # prefilter find such files by one pattern (lint_rules.prefilter's graph annotation seed).
        evidence = _graph_use(node, params[0], self.vocab, self.summary["imports"]) \
            if params and params[0].annotation \
            is not None else ""
        if not evidence.startswith("annotated") and params and self.rewrites \
                and not self._other_packages_type(params[0].annotation):
            # Not annotated as a graph (no annotation, or a project's wrapper type): a graph
            # by what the function does with it, a walk of its nodes that it rewrites. A type
            # of another package (an ONNX ``model: ir.Model``, walked and rewired by its own
            # ``replace_input_with``) says it is that package's graph, not an FX one.
            evidence = _graph_walk(node, params[0].arg, self.vocab, self.summary["imports"])
            if not evidence and params[0].annotation is None:
                # it may hand it to a graph function of this file (annotated ``nn.Module``,
                # ipex's ``_concat_linear`` traces a module first: that is not a graph handed on)
                self.handoffs.append(node)
        if evidence and not evidence.startswith("uses"):
            line, col = self._name_position(node, "def")
            rewrite, callees = _graph_rewrites(node, params[0].arg, self.vocab,
                                               self.summary["imports"])
            self.summary.setdefault("graph_fns", {})[node.name] = [
                line, col, evidence, [self.expr(d) for d in node.decorator_list[:8]],
                [rewrite, [self.expr(c) for c in callees]],
                _ignores_parameter(node, params[0].arg, self.vocab)]
        elif self.rewrites:  # a helper a graph function may hand its graph to (any position)
            rewrite = _graph_rewrites(node, "", self.vocab)[0]
            if rewrite:
                self.summary.setdefault("rewriters", {})[node.name] = [rewrite]
        if params and self.vocab.graph_mutators:
            effects = self._graph_effects(node, params)
            if effects is not None:
                self.summary.setdefault("graph_effects", {})[node.name] = effects

    def _other_packages_type(self, annotation: ast.expr | None) -> bool:
        """Is this annotation a type imported from a package that is neither this file's own
        nor one the registry's graph types live in (``ir.Model``, ``from onnx_ir import ...``)?
        A project's own wrapper (MASE's ``MaseGraph``), a string or a local class is not."""
        if annotation is None or isinstance(annotation, ast.Constant):
            return False
        own = real_module(self.module).split(".", 1)[0]
        return any(_foreign_annotation(_dotted(a), self.summary["imports"], self.vocab)
                   and (self.summary["imports"].get(_dotted(a).split(".", 1)[0]) or "")
                   .split(".", 1)[0].split(":", 1)[0] != own
                   for a in _alternatives(annotation) if _dotted(a))

    def graph_handoffs(self) -> None:
        """``def quantize_pass(graph, args): graph = iterate_by_type(graph, args)`` where
        ``iterate_by_type`` walks ``graph.fx_graph.nodes`` and rewrites it (MASE): a function
        handing its unannotated first parameter, first, to a graph function of this file takes
        a graph too, and rewrites it through that function (LG001 follows it as a callee)."""
        functions = self.summary.get("graph_fns") or {}
        for node in self.handoffs:
            param = [*node.args.posonlyargs, *node.args.args][0].arg
            for inner in ast.walk(node):
                if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) \
                        and inner.func.id in functions and inner.func.id != node.name \
                        and inner.args and isinstance(inner.args[0], ast.Name) \
                        and inner.args[0].id == param:
                    line, col = self._name_position(node, "def")
                    rewrite, callees = _graph_rewrites(node, param, self.vocab,
                                                       self.summary["imports"])
                    functions[node.name] = [
                        line, col, f"hands {param} to {inner.func.id}, which"
                        f" {functions[inner.func.id][2]}", [self.expr(d) for d in node.decorator_list[:8]],
                        [rewrite, [self.expr(c) for c in callees]]]
                    break

    def _bound_lambda(self, target: ast.Name, value: ast.expr) -> None:
        """``_drop = functools.partial(lambda graph, op: graph.erase_node(...), op=...)`` or
        ``_drop = lambda graph: ...`` at module level: a function by its binding, which
        rewrites the FX graph it takes first (calls a registry ``graph_mutation`` member on
        it), a graph function as a def would be (LG001: handed on, or nothing runs it)."""
        if isinstance(value, ast.Call) and _last(value.func) == "partial" and value.args:
            value = value.args[0]
        if not isinstance(value, ast.Lambda):
            return
        params = [*value.args.posonlyargs, *value.args.args]
        if not params:
            return
        first = params[0].arg
        for inner in ast.walk(value.body):
            if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) \
                    and inner.func.attr in self.vocab.graph_mutators:
                receiver = inner.func.value
                if isinstance(receiver, ast.Attribute) and receiver.attr in self.vocab.graph_members:
                    receiver = receiver.value
                if isinstance(receiver, ast.Name) and receiver.id == first:
                    member = f"{_dotted(inner.func) or inner.func.attr}()"
                    self.summary.setdefault("graph_fns", {})[target.id] = [
                        target.lineno, target.col_offset + 1,
                        f"a lambda that calls {member} on it", [], [member, []]]
                    return

    def _graph_effects(self, node: ast.FunctionDef | ast.AsyncFunctionDef,
                       params: list[ast.arg], method: bool = False) -> list | None:
        """What a module-level function taking an FX graph first does with it: whether it
        rewrites it (calls a registry ``graph_mutation`` member: ``gm.graph.erase_node``,
        ``node.replace_all_uses_with``, ``gm.recompile()``), and which functions it calls with
        it (``recover_pass(gm)``). LG001 reads these for compilers (a backend, an
        ``inner_compile=`` adaptor) and for another project's pipeline code replaced at run
        time: a rewrite is a pass, a compiler is not. ``method``: of a method (``params`` after
        ``self``), LG001 reads only a rewrite of a graph and what a loop's elements are handed
        (a runner's ``for t in self.transforms: t.run(gm)``), so a method doing neither has none:
        every method of every class outside torch comes here."""
        first = params[0]
        rewrites, handed = [], []
        loops = {}  # for t in self.transforms: t.run(gm) -> t is each element of self.transforms
        for inner in ast.walk(node):  # one walk; the graph evidence only when it can matter
            if isinstance(inner, (ast.For, ast.AsyncFor)) and isinstance(inner.target, ast.Name):
                loops[inner.target.id] = inner.iter
            if not isinstance(inner, ast.Call):
                continue
            func = inner.func
            if isinstance(func, ast.Attribute) and func.attr in self.vocab.graph_mutators:
                rewrites.append((inner.lineno, inner.col_offset, _dotted(func) or func.attr))
            if inner.args and isinstance(inner.args[0], ast.Name) and inner.args[0].id == first.arg \
                    and isinstance(func, (ast.Name, ast.Attribute)):
                handed.append(inner)

        if self.rewrites and not rewrites:  # node.target = torch.cat on a node it walks
            rewrites += _node_stores(node, self.vocab)
        if self.traces and not rewrites:  # gm = make_fx(functionalize(gm), ...)(*inputs)
            retrace = _retraces(node, {first.arg}, self.vocab, self.summary["imports"])
            if retrace:
                rewrites.append((node.lineno, node.col_offset, retrace))

        def each(call: ast.Call) -> bool:
            return isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) \
                and call.func.value.id in loops

        if not rewrites and not (handed if not method else any(map(each, handed))):
            return None
        evidence = _graph_use(node, first, self.vocab, self.summary["imports"])
        # neither a graph function nor shaped like a compiler, (gm, example_inputs): only what
        # it hands its first argument to in a loop over a list (a runner) is kept
        runner_only = not evidence and len(params) < 2
        calls = []
        for inner in handed:
            if len(calls) >= 32:
                break
            if each(inner):
                callee = ["each", self.expr(loops[inner.func.value.id]), inner.func.attr]
            elif runner_only:
                continue
            else:
                callee = self.expr(inner.func)
            calls.append([callee, inner.lineno, self._col(inner)])
        rewrite = min(rewrites)[2] if rewrites else ""  # the first in the source
        if not ((rewrite and evidence) or calls):
            return None
        if method and not (rewrite and evidence) and not any(c[0][0] == "each" for c in calls):
            return None
        line, col = self._name_position(node, "def")
        required = len(params) - len(node.args.defaults)
        # the graph parameter's annotation, last name (``onnx_ir.Model``: "Model"), or ""
        annotation = first.annotation
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            spelled = annotation.value.strip().rsplit(".", 1)[-1]
        else:
            spelled = _last(annotation) if annotation is not None else ""
        return [line, col, evidence, rewrite, calls, required, spelled or ""]

    def _entry_edits(self, node: ast.FunctionDef | ast.AsyncFunctionDef, qualname: str) -> None:
        """``for entry in pass_patterns[1].patterns.values(): for e in entry: e.extra_check = f``
        (torch_npu): an attribute stored on what a loop (or loops) over a name imported from
        torch yields is an edit of torch's own objects; recorded as a ``patch`` site of that
        name with the loop's iterable (LG001 decides whether it is the pipeline's)."""
        if not any(isinstance(inner, (ast.For, ast.AsyncFor)) for inner in ast.walk(node)):
            return
        # each assignment with the loop bindings in force where it is (the innermost wins)
        found: list[tuple[ast.Assign, dict[str, ast.expr]]] = []
        stack: list[tuple[ast.AST, dict[str, ast.expr]]] = [(s, {}) for s in node.body]
        while stack:
            inner, loops = stack.pop()
            if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(inner, (ast.For, ast.AsyncFor)) and isinstance(inner.target, ast.Name):
                inside = {**loops, inner.target.id: inner.iter}
                stack.extend((child, inside) for child in inner.body)
                stack.extend((child, loops) for child in inner.orelse)
                continue
            if isinstance(inner, ast.Assign) and loops:
                found.append((inner, loops))
            stack.extend((child, loops) for child in ast.iter_child_nodes(inner))
        for inner, loops in found:
            if id(inner) in self.entry_edits:
                continue
            for target in inner.targets:
                if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                        and target.value.id in loops):
                    continue
                iterable, seen = loops[target.value.id], {target.value.id}
                root = iterable
                for _ in range(8):  # down to the name the outermost loop iterates
                    while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
                        root = root.func if isinstance(root, ast.Call) else root.value
                    if isinstance(root, ast.Name) and root.id in loops and root.id not in seen:
                        seen.add(root.id)
                        iterable = root = loops[root.id]
                        continue
                    break
                if not isinstance(root, ast.Name):
                    continue
                imported = self._import_of(root.id)
                if not imported.startswith("torch"):
                    continue
                self.entry_edits.add(id(inner))
                self.summary["sites"].append({
                    "t": "patch", "owner": root.id, "imported": imported, "attr": target.attr,
                    "value": self.expr(inner.value), "entries": ast.unparse(iterable)[:200],
                    "line": target.lineno, "col": self._col(target), "scope": qualname,
                    "class": self._enclosing_class(),
                })

    def _init_flow(self, klass: dict, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """What flows through a constructor: its parameters, and the arguments it hands to
        ``super().__init__`` (vLLM: ``super().__init__(config, "act_quant_fusion_pass")`` names
        the pattern pass its base builds with ``PatternMatcherPass(pass_name=pass_name)``).
        Top-level statements only, so this stays cheap on every class."""
        klass["init"] = [a.arg for a in [*node.args.posonlyargs, *node.args.args][1:]]
        for statement in node.body:
            call = statement.value if isinstance(statement, ast.Expr) else None
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
                    and call.func.attr == "__init__" and isinstance(call.func.value, ast.Call) \
                    and _last(call.func.value.func) == "super":
                klass["super_init"] = [
                    [self.expr(a) if not isinstance(a, ast.Starred) else ["?", "*"]
                     for a in call.args[:8]],
                    {k.arg: self.expr(k.value) for k in call.keywords[:8] if k.arg},
                    {**{str(i): [a.lineno, self._col(a)] for i, a in enumerate(call.args[:8])},
                     **{k.arg: [k.value.lineno, self._col(k.value)]
                        for k in call.keywords[:8] if k.arg}},
                    call.lineno, self._col(call)]
                return

    def _self_attributes(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """A method read light: only its own ``self.x = ...`` statements (another method of the
        file may install ``self.x`` into a hook)."""
        if self._method_class() is None:
            return
        for statement in node.body:
            if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
                targets = statement.targets if isinstance(statement, ast.Assign) \
                    else [statement.target]
                for target in targets:
                    self._assign(target, statement.value, statement)

    def visit_Constant(self, node: ast.Constant) -> None:
        pass  # nothing to record (and ast's own visit_Constant is slow)

    def visit_Expr(self, node: ast.Expr) -> None:
        if not self.light:
            self.visit(node.value)

    def visit_Return(self, node: ast.Return) -> None:
        if node.value is not None and not self.light:
            self.visit(node.value)

    # ---- imports --------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname:
                self._import(alias.asname, alias.name)
            else:
                head = alias.name.split(".", 1)[0]
                self._import(head, head)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = self._absolute(node.module or "", node.level)
        for alias in node.names:
            if alias.name == "*":
                self.summary["stars"].append(base)
                continue
            local = alias.asname or alias.name
            self._import(local, f"{base}:{alias.name}")
            if alias.name in self.vocab.short_names:
                self.watched.add(local)
            if alias.name in self.vocab.argument_names:
                self.argument_callees.add(local)  # PassManager as LegacyPassManager

    def _import(self, local: str, target: str) -> None:
        if not self.scopes:
            imports = self.summary["imports"]
            if local in imports and imports[local] != target:
                # try: from torch... import X / except ImportError: from .compat import X as X:
                # either may be what runs, so a class deriving from X derives from both.
                self.summary.setdefault("alternatives", {}).setdefault(local, []).append(target)
            else:
                imports[local] = target
        else:
            self._bind(local, ["import", target])

    def _absolute(self, module: str, level: int) -> str:
        if not level:
            return module
        package = self.module if self.is_package else self.module.rpartition(".")[0]
        for _ in range(level - 1):
            package = package.rpartition(".")[0]
        return f"{package}.{module}".strip(".") if module else package

    # ---- assignments ----------------------------------------------------------------------
    def visit_Assign(self, node: ast.Assign) -> None:
        if not self.scopes and self.outside_torch and self.vocab.graph_mutators \
                and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self._bound_lambda(node.targets[0], node.value)
        for target in node.targets:
            self._assign(target, node.value, node)
        self._visit_value(node.targets[0] if len(node.targets) == 1 else None, node.value)
        for target in node.targets:
            if not isinstance(target, (ast.Name, ast.Attribute)):
                self.visit(target)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self._assign(node.target, node.value, node)
            self._visit_value(node.target, node.value)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        # `class P(Base := CustomGraphPass)`, `if (p := make_pass()):`: a binding as any other.
        self._assign(node.target, node.value, node)
        self._visit_value(node.target, node.value)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        # config.reorder_for_compute_comm_overlap_passes += [my_pass]
        self._hook_target(node.target, node.value)
        self._visit_value(node.target, node.value)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        if isinstance(node.target, ast.Tuple) and len(node.target.elts) == 2 \
                and all(isinstance(e, ast.Name) for e in node.target.elts) \
                and isinstance(node.iter, ast.Call) and _last(node.iter.func) == "enumerate" \
                and len(node.iter.args) == 1 and not node.iter.keywords:
            # for i, p in enumerate(passes): i takes each index of passes, p each element
            iterable = self.expr(node.iter.args[0])
            self._bind(node.target.elts[0].id, ["index", iterable])
            self._bind(node.target.elts[1].id, ["iter", iterable])
            self.generic_visit(node)
            return
        if not isinstance(node.target, ast.Name):
            self.generic_visit(node)
            return
        name, iterable = node.target.id, self.expr(node.iter)
        key = (self.scope, self._enclosing_class(), name)
        earlier = self.loop_sites.get(key)
        if earlier is not None and earlier[2] != iterable:
            # The name is reused by a second loop (split_cat: ``for pass_name in pre_...`` then
            # ``for pass_name in post_...``): the first loop's sites keep their own iterable.
            start, end, before = earlier
            for site in self.summary["sites"][start:end]:
                _pin_loop_variable(site, name, before)
        self._bind(name, ["iter", iterable])
        start = len(self.summary["sites"])
        self.generic_visit(node)
        self.loop_sites[key] = (start, len(self.summary["sites"]), iterable)

    visit_AsyncFor = visit_For  # type: ignore[assignment]

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            if isinstance(item.optional_vars, ast.Name):
                self._bind(item.optional_vars.id, self.expr(item.context_expr))
        self.generic_visit(node)

    visit_AsyncWith = visit_With  # type: ignore[assignment]

    def _assign(self, target: ast.expr, value: ast.expr, node: ast.stmt) -> None:
        if isinstance(target, ast.Attribute) and self.outside_torch:
            self._monkeypatch(target.value, target.attr, value, target)
        elif isinstance(target, ast.Subscript) and self.outside_torch \
                and _string(target.slice) is not None and self._keyword_store(target, value):
            pass  # kwargs["partition_fn"] = p
        elif isinstance(target, ast.Subscript) and self.outside_torch \
                and _namespace_owner(target.value) is None:
            # lowerings[aten.gelu.default] = mine: an entry of a table of torch's pipeline
            key = _text(self.expr(target.slice))
            self._monkeypatch(target.value, f"[{key}]", value, target)
        elif isinstance(target, ast.Subscript) and self.outside_torch \
                and _string(target.slice) is not None:
            # post_grad.__dict__["post_grad_passes"] = mine / vars(m)[...]: the attribute store
            self._monkeypatch(_namespace_owner(target.value), _string(target.slice), value, target)
        if isinstance(target, ast.Name):
            self._bind(target.id, _binding_value(self.expr(value)))
            if isinstance(value, (ast.Name, ast.Attribute, ast.Call, ast.Tuple, ast.List)):
                self.ast_binds[(self.scope, target.id)] = value
            if isinstance(value, ast.Call) and self._is_type_call(value):
                self._type_class(target.id, value)
            callee = value.args[0] if isinstance(value, ast.Call) and _last(value.func) == "partial" \
                and value.args else value
            if isinstance(callee, (ast.Name, ast.Attribute)) and _last(callee) in self.watched:
                self.watched.add(target.id)  # Observer = functools.partial(GraphTransformObserver)
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                and target.value.id in ("self", "cls"):
            klass = self._method_class()
            if klass is not None:
                kept = _attribute_value(self.expr(value))
                if kept is not None:
                    klass["attrs"].setdefault(target.attr, [self.scope, kept])
        elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(value.elts):
            for inner_target, inner_value in zip(target.elts, value.elts):
                self._assign(inner_target, inner_value, node)
        self._hook_target(target, value)

    def _keyword_store(self, target: ast.Subscript, value: ast.expr) -> bool:
        """``kwargs["partition_fn"] = p`` (DeepSpeed, in a patched ``AotAutograd.__init__``):
        a value stored under a registry pass / compiler argument's keyword into a dict this
        function is handed (a parameter: the keywords a caller passes on) flows into that
        argument: an "arg" site whose callee is every callable taking that keyword (LG001)."""
        key, owner = _string(target.slice), target.value
        if not isinstance(owner, ast.Name) or not any(
                key == arg for rows in self.vocab.arguments.values() for _, arg, _, _ in rows):
            return False
        if self.summary["assigns"].get(self.scope, {}).get(owner.id) != ["param"]:
            return False
        self.summary["sites"].append({
            "t": "arg", "callee": ["?", f"{owner.id}[{key!r}]"], "kwdict": key, "args": [],
            "kw": {key: self.expr(value)}, "pos": {key: [value.lineno, self._col(value)]},
            "line": target.lineno, "col": self._col(target), "scope": self.scope,
            "class": self._enclosing_class(), "decorated": "",
        })
        return True

    def _visit_value(self, target: ast.expr | None, value: ast.expr) -> None:
        if self.light:
            return  # no site can be in a light file's values
        previous = self.target, self.in_container
        self.target, self.in_container = (self._target_text(target) if target is not None
                                          else None), False
        self.visit(value)
        self.target, self.in_container = previous

    def _target_text(self, target: ast.expr) -> str | None:
        if isinstance(target, ast.Name):
            return target.id
        if isinstance(target, ast.Attribute):
            return _dotted(target)
        if isinstance(target, ast.Subscript):
            return _dotted(target.value)
        return None

    # ---- hooks ----------------------------------------------------------------------------
    def _hook_target(self, target: ast.expr, value: ast.expr) -> None:
        """``x.key = v`` / ``x["key"] = v`` where key is a registry custom-hook key."""
        if isinstance(target, ast.Attribute) and target.attr in self.hook_keys:
            self._hook(target.attr, value, "assignment", self.expr(target.value))
        elif isinstance(target, ast.Subscript):
            key = self._key_string(target.slice)
            if key in self.hook_keys:
                self._hook(key, value, "item assignment", self.expr(target.value))
            elif _last(target.value) in self.hook_keys:  # a dict-valued hook, one entry of it
                self._hook(_last(target.value), value, "item assignment")
            elif key is None and not self.light:
                owner = _namespace_owner(target.value)  # m.__dict__[k] = v, vars(m)[k] = v
                if owner is not None:
                    self._dynamic(owner, target.slice, self._key_expr(target.slice), value,
                                  "item assignment into its namespace")

    def _key_string(self, node: ast.AST | None) -> str | None:
        """A config key written as a literal, as a name bound to one in this function or at
        module level (vLLM: ``PASS_KEY = "post_grad_custom_post_pass"; cfg[PASS_KEY] = p``), or
        built from those by ``+``, an f-string or ``"_".join([...])`` (folded here)."""
        text = _string(node)
        if text is not None:
            return text
        if isinstance(node, (ast.BinOp, ast.JoinedStr, ast.Call)):
            folded = self._key_expr(node)
            return folded[1] if folded[0] == "s" else None
        if not isinstance(node, (ast.Name, ast.Attribute)):
            return None
        if self.key_constants and _dotted(node) in self.key_constants:
            return self.key_constants[_dotted(node)]  # a constant of another module (Index)
        if not isinstance(node, ast.Name):
            return None
        assigns = self.summary["assigns"]
        for scope in (self.scope, ""):
            bound = assigns.get(scope, {}).get(node.id)
            if bound is not None:
                return bound[1] if bound[0] == "s" else None
        return None

    def _key_expr(self, node: ast.AST) -> list:
        """A key as a summary expression: ``["s", key]`` when it folds here to one string,
        ``["cat", parts]`` when it is built from pieces some of which only the index can resolve
        (a loop variable, another module's constant), else the expression itself."""
        parts = _key_parts(node)
        if parts is None:
            return self.expr(node)
        resolved: list = []
        for part in parts:
            if part[0] == "n":
                text = self._key_string(ast.Name(part[1])) if "." not in part[1] else (
                    self.key_constants.get(part[1]))
                part = ["s", text] if text is not None else part
            if part[0] == "s" and resolved and resolved[-1][0] == "s":
                resolved[-1] = ["s", resolved[-1][1] + part[1]]
            else:
                resolved.append(part)
        if len(resolved) == 1:  # one string, or one name the index resolves
            return resolved[0]
        return ["cat", resolved]

    def _store_call(self, node: ast.Call, name: str) -> None:
        """``setattr(m, k, v)``, ``m.__setattr__(k, v)``, ``m.patch(k, v)``, ``m.patch(d)``,
        ``m.patch(**d)``: a hook install when the key folds to a hook key; a "dyn" site when the
        key (or the dict's keys) cannot be resolved here, so the index can check whether ``m``
        is a config module and what the key can be (LG001, LG006)."""
        positional = [a for a in node.args if not isinstance(a, ast.Starred)]
        receiver: ast.expr | None = None
        if name == "setattr" or (name == "__setattr__" and len(positional) == 3):
            # setattr(m, k, v); object.__setattr__(m, k, v) (the unbound form: m is an argument)
            receiver, rest = (positional[0], positional[1:]) if positional else (None, [])
        else:
            receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
            rest = positional
        if len(rest) >= 2:
            key = self._key_string(rest[0])
            if key in self.hook_keys:
                self._hook(key, rest[1], f"{name}(...)")
            elif key is None and receiver is not None:
                self._dynamic(receiver, rest[0], self._key_expr(rest[0]), rest[1], f"{name}(...)")
            return
        if name != "patch" or receiver is None:
            return
        given = [(a, "patch(...)") for a in rest[:1]] + [
            (k.value, "patch(**...)") for k in node.keywords if k.arg is None]
        for argument, form in given:
            if isinstance(argument, ast.Dict):  # its literal keys are hook sites (visit_Dict)
                for key_node, value in zip(argument.keys, argument.values):
                    if key_node is not None and self._key_string(key_node) is None:
                        self._dynamic(receiver, key_node, self._key_expr(key_node), value, form)
            else:
                self._dynamic(receiver, argument, ["dict", self.expr(argument)], None, form)

    def _mock_patch(self, node: ast.Call) -> None:
        """``unittest.mock``'s patchers replace an attribute for as long as they are active:
        ``patch.object(m, "f", new)``, ``patch("torch....f", new)`` (also as decorators) and
        ``patch.multiple(m, f=new)`` are ``m.f = new`` for the lint (a patcher with no ``new``
        puts a MagicMock there: nothing runs in place of torch's code)."""
        callee = self._imported_dotted(node.func)
        kind = next((k for k in ("patch.object", "patch.multiple", "patch")
                     if callee in (f"unittest.mock.{k}", f"mock.{k}")), None)
        if kind is None:
            return
        positional = [a for a in node.args if not isinstance(a, ast.Starred)]
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        if kind == "patch.multiple":
            for attr, value in keywords.items():
                if positional and attr not in ("spec", "create", "spec_set", "autospec", "new_callable"):
                    self._monkeypatch(positional[0], attr, value, node)
            return
        at = 1 if kind == "patch" else 2  # where ``new`` stands positionally
        new = positional[at] if len(positional) > at else keywords.get("new")
        if new is None:
            return
        if kind == "patch.object":
            attr = _string(positional[1]) if len(positional) > 1 else _string(keywords.get("attribute"))
            if positional and attr is not None:
                self._monkeypatch(positional[0], attr, new, node)
            return
        target = _string(positional[0]) if positional else _string(keywords.get("target"))
        owner, _, attr = (target or "").rpartition(".")
        if owner.split(".", 1)[0] == "torch" and attr and attr not in self.hook_keys:
            self.summary["sites"].append({
                "t": "patch", "owner": owner, "imported": "torch", "attr": attr,
                "value": self.expr(new), "line": node.lineno, "col": self._col(node),
                "scope": self.scope, "class": self._enclosing_class()})

    def _imported_dotted(self, func: ast.expr) -> str:
        """The dotted name a callee is through this file's imports (``mock.patch.object`` with
        ``from unittest import mock`` is ``unittest.mock.patch.object``)."""
        dotted = _dotted(func)
        if not dotted:
            return ""
        head, _, rest = dotted.partition(".")
        imported = self._import_of(head)
        return ".".join(filter(None, (imported.replace(":", "."), rest))) if imported else dotted

    def _import_of(self, head: str) -> str:
        """What the import binding ``head`` here names ("module" or "module:name"; an import
        inside the function counts), "" when ``head`` is not an import."""
        imported = self.summary["imports"].get(head, "")
        for scope in dict.fromkeys((self.scope, "")):
            bound = self.summary["assigns"].get(scope, {}).get(head)
            if bound is not None:
                return bound[1] if bound[0] == "import" else ""
        return imported

    def _monkeypatch(self, owner: ast.expr, attr: str, value: ast.expr, at: ast.AST) -> None:
        """``owner.attr = value`` (or ``setattr(owner, "attr", value)``) where ``owner`` is a
        name this file imports from torch: the index decides whether it is a module or class
        of torch's compile pipeline (Vocabulary.pipeline_packages); LG001 reports it."""
        dotted = _dotted(owner)
        if not dotted or attr in self.hook_keys:
            return  # a hook install is a hook site
        imported = self._import_of(dotted.split(".", 1)[0])
        foreign = not imported.startswith("torch")
        if foreign and not (imported and self.rewrites and attr and not attr.startswith("[")
                            and isinstance(value, (ast.Name, ast.Attribute))):
            return
        # foreign: another project's code replaced by a function of this file's tree (vLLM's
        # _decompose_size_nodes by unsloth_zoo's); LG001 reports it when that function rewrites
        # an FX graph, wherever it is installed
        self.summary["sites"].append({
            "t": "patch", "owner": dotted, "imported": imported, "attr": attr,
            "value": self.expr(value),
            "line": at.lineno, "col": self._col(at), "scope": self.scope,
            "class": self._enclosing_class(), **({"foreign": True} if foreign else {}),
        })

    def _is_type_call(self, node: ast.Call) -> bool:
        """``type(name, bases, namespace)`` (the builtin, not rebound; ``builtins.type``):
        Python's class statement as a call."""
        func = node.func
        builtin = isinstance(func, ast.Name) and func.id == "type" \
            and self._bound_node("type") is None \
            or isinstance(func, ast.Attribute) and func.attr == "type" \
            and _dotted(func.value) == "builtins"
        return builtin and len(node.args) == 3 and not node.keywords \
            and not any(isinstance(a, ast.Starred) for a in node.args)

    def _type_class(self, variable: str, node: ast.Call) -> None:
        """``P = type("P", (CustomGraphPass,), {"__call__": f, ...})`` defines a class as the
        class statement would: recorded as one (its ``__qualname__`` is the name given, or the
        variable's when the name is not a literal), so its ancestry is resolved like any other.
        A namespace that is not a dict literal may hold any method: the class counts as
        defining ``__call__`` (fail closed)."""
        name_node, bases_node, namespace = node.args
        qualname = _string(name_node) or variable
        if not qualname.isidentifier():
            qualname = variable
        bases = [self.expr(b) for b in bases_node.elts] \
            if isinstance(bases_node, (ast.Tuple, ast.List)) else [["?", "*"]]
        if isinstance(namespace, ast.Dict):
            methods = [k for k in map(_string, namespace.keys) if k]
            methods += ["__call__"] if None in namespace.keys else []  # {**other}
        else:
            methods = ["__call__"]
        line, col = node.lineno, self._col(node)
        self.summary["classes"].setdefault(qualname, {
            "line": line, "col": col, "bases": bases, "methods": methods, "abstract": [], "raises": [],
            "attrs": {}, "decorators": [], "scope": self.scope, "built_by": "type(...)",
        })
        self._bind(variable, ["class", qualname])

    def _bound_node(self, name: str) -> ast.expr | None:
        """What a plain name was last bound to, in this function or at module level."""
        for scope in dict.fromkeys((self.scope, "")):
            bound = self.ast_binds.get((scope, name))
            if bound is not None:
                return bound
        return None

    def _store_callee(self, func: ast.expr, depth: int = 0) -> list[ast.expr] | None:
        """The arguments bound in front of a call's own when the callee *is* Python's
        ``setattr`` (the builtin not rebound, ``builtins.setattr``, ``object.__setattr__``, a
        name bound to one of those, ``m.__setattr__`` (binds ``m``), ``partial(<one of
        those>, m, ...)``); None when it is anything else."""
        if depth > 8:
            return None
        if isinstance(func, ast.Name):
            bound = self._bound_node(func.id)
            if bound is not None:
                return self._store_callee(bound, depth + 1)
            return [] if func.id == "setattr" else None
        if isinstance(func, ast.Attribute):
            if func.attr == "setattr" and _dotted(func.value) == "builtins":
                return []
            if func.attr == "__setattr__" and depth:  # an alias of a bound or unbound __setattr__
                return [] if _dotted(func.value) in ("object", "type") else [func.value]
            return None
        if isinstance(func, ast.Call) and _last(func.func) == "partial" and func.args:
            inner = self._store_callee(func.args[0], depth + 1)
            return None if inner is None else inner + list(func.args[1:])
        return None

    def _expand_starred(self, args: list[ast.expr]) -> list[ast.expr] | None:
        """Arguments with ``*t`` replaced by the elements of the tuple or list ``t`` is bound
        to here; None when one cannot be expanded."""
        out: list[ast.expr] = []
        for argument in args:
            if not isinstance(argument, ast.Starred):
                out.append(argument)
                continue
            value = argument.value
            if isinstance(value, ast.Name):
                value = self._bound_node(value.id) or value
            if not isinstance(value, (ast.Tuple, ast.List)) \
                    or any(isinstance(e, ast.Starred) for e in value.elts):
                return None
            out.extend(value.elts)
        return out

    def _setattr_call(self, node: ast.Call, bound: list[ast.expr]) -> None:
        args = self._expand_starred(bound + list(node.args))
        form = "setattr(...)" if isinstance(node.func, ast.Name) and node.func.id == "setattr" \
            else f"setattr(...) through {_dotted(node.func) or 'a call'}"
        if args is None or len(args) < 3:
            # setattr(*args) whose arguments cannot be read here: a store into whatever the
            # receiver is under whatever key. Reported (LG006) when the receiver is a name the
            # index resolves to a config module, or else when this file imports one.
            given = bound + list(node.args)
            if given and not isinstance(given[0], ast.Starred) \
                    and isinstance(given[0], (ast.Name, ast.Attribute)):
                self._dynamic(given[0], node, ["?", "*args"], None, form)
            else:
                sink = self._imported_config()
                if sink:
                    self._dynamic(None, node, ["?", "*args"], None, form, sink=sink)
            return
        receiver, key, value = args[0], args[1], args[2]
        text = self._key_string(key)
        if text in self.hook_keys:
            self._hook(text, value, form)
        elif text is not None and self.outside_torch:
            self._monkeypatch(receiver, text, value, node)
        elif text is None:
            self._dynamic(receiver, key, self._key_expr(key), value, form)

    def _imported_config(self) -> str:
        """The config module this file imports (``import torch._inductor.config as c``), if
        any: where an unreadable ``setattr(*args)`` may store."""
        imported = sorted({target.replace(":", ".") for target in self.summary["imports"].values()
                           if target.replace(":", ".") in self.vocab.config_modules})
        return imported[0] if imported else ""

    def _options(self, node: ast.Call) -> None:
        """``torch.compile(fn, options={KEY: p})``: torch applies ``options`` to Inductor's
        config, so a key that is not a literal (a constant of a module outside the linted
        paths, a parameter) is a store into that config under an unresolved key (LG006; LG001
        when the index resolves it to a hook key)."""
        for keyword in node.keywords:
            if keyword.arg != "options" or not isinstance(keyword.value, ast.Dict):
                continue
            for key_node, value in zip(keyword.value.keys, keyword.value.values):
                if key_node is not None and self._key_string(key_node) is None:
                    self._dynamic(None, key_node, self._key_expr(key_node), value,
                                  "options={...} entry", sink="torch._inductor.config")

    def _dynamic(self, receiver: ast.expr | None, at: ast.expr, key: list, value: ast.expr | None,
                 form: str, sink: str = "") -> None:
        if not sink and (not isinstance(receiver, (ast.Name, ast.Attribute)) or not _dotted(receiver)
                         or _dotted(receiver).split(".", 1)[0] in ("self", "cls")):
            return  # only a name can be a config module (an object's own field is not)
        self.summary["sites"].append({
            "t": "dyn", "form": form, "sink": sink,
            "recv": self.expr(receiver) if receiver is not None else ["?", "options"], "key": key,
            "value": self.expr(value) if value is not None else ["?", "dict"],
            "line": at.lineno, "col": self._col(at), "scope": self.scope,
            "vline": (value or at).lineno, "vcol": self._col(value or at),
            "class": self._enclosing_class(),
        })

    def _hook(self, key: str, value: ast.expr, form: str, receiver: Any = None) -> None:
        self.summary["sites"].append({
            "t": "hook", "key": key, "form": form, "value": self.expr(value),
            "recv": receiver, "line": value.lineno, "col": self._col(value),
            "scope": self.scope, "class": self._enclosing_class(),
        })

    def _enclosing_class(self) -> str:
        for kind, qualname in reversed(self.scopes):
            if kind == "class":
                return qualname
        return ""

    def visit_Dict(self, node: ast.Dict) -> None:
        # {"post_grad_custom_post_pass": p}: config.patch({...}), options={...}, a dict kept in
        # a variable and patched later: wherever a hook key is a dict key, its value is installed.
        for key, value in zip(node.keys, node.values):
            name = self._key_string(key) if key is not None else None
            if name in self.hook_keys:
                self._hook(name, value, "dict entry")
        self._contained(node)

    def _registration(self, node: ast.Call, handler: str = "") -> None:
        """A call of a registry ``pattern_registration`` function, by its last name; the index
        decides which one it is and which pass dict it targets. ``handler``: the decorated def."""
        if id(node) in self.registered:
            return
        self.registered.add(id(node))
        self.summary["sites"].append({
            "t": "reg", "call": self.expr(node), "handler": handler, "line": node.lineno,
            "col": self._col(node), "scope": self.scope, "class": self._enclosing_class(),
        })

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = _last(func)
        if name in self.vocab.registrations and not self.light and (
                self.outside_torch or name not in self.vocab.lowering_names):
            if isinstance(func, ast.Call):  # register_decomposition([op])(fn): one site
                self.registered.add(id(func))
            self._registration(node)
        if name in self.argument_callees and self.outside_torch and not self.light:
            self._argument(node)  # aot_autograd(partition_fn=p), PassManager([p]), backend=f
        if name in self.watched or any(k.arg in self.vocab.name_keywords for k in node.keywords):
            # By name, or by a naming keyword: MyPatternPass(pass_name=...) of a subclass
            # defined in another file; the index decides whether it really is one.
            self._constructor(node)
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        for keyword, value in keywords.items():
            if keyword in self.hook_keys:  # config.patch(key=p), dict(key=p), any call
                self._hook(keyword, value, f"{name or 'call'}({keyword}=...)")
        positional = [a for a in node.args if not isinstance(a, ast.Starred)]
        bound = self._store_callee(func) if not (
            isinstance(func, ast.Attribute) and func.attr == "__setattr__") else None
        if bound is not None:
            # setattr(m, k, v), and setattr by what the callee is: an alias (s = setattr), a
            # partial(setattr, m, ...), builtins.setattr, object.__setattr__; starred arguments
            # bound to a tuple are expanded
            self._setattr_call(node, bound)
        elif name in ("patch", "__setattr__"):
            # config.patch("key", p) / config.patch(**overrides) / m.__setattr__(k, v)
            self._store_call(node, name)
        if self.outside_torch:
            self._mock_patch(node)
        if "options" in keywords and self.outside_torch:
            self._options(node)
        if self.outside_torch and isinstance(func, ast.Name) and func.id in ("exec", "eval") \
                and self._bound_node(func.id) is None and len(node.args) >= 2:
            owner = _namespace_owner(node.args[1])  # exec(src, partitioners.__dict__)
            if owner is not None:
                self._monkeypatch(owner, "", node, node)
        if isinstance(func, ast.Attribute) and name in ("append", "extend", "insert", "update") \
                and _last(func.value) in self.hook_keys and positional:
            # config.reorder_for_compute_comm_overlap_passes.append(p)
            self._hook(_last(func.value), positional[-1], f".{name}(...)")
        if isinstance(func, ast.Attribute) and name in ("append", "extend", "insert"):
            previous = self.target, self.in_container
            self.target, self.in_container = _dotted(func.value), True
            for argument in node.args:
                self.visit(argument)
            self.target, self.in_container = previous
            self.visit(func)
            for keyword in node.keywords:
                self.visit(keyword.value)
            return
        self.generic_visit(node)

    def _contained(self, node: ast.AST) -> None:
        previous = self.in_container
        self.in_container = True
        self.generic_visit(node)
        self.in_container = previous

    def visit_comprehension(self, node: ast.comprehension) -> None:
        # [PatternMatcherPass(pass_name=n) for n in NAMES]: n takes each element of NAMES
        if isinstance(node.target, ast.Name):
            self.summary["assigns"].setdefault(self.scope, {})[node.target.id] = \
                ["iter", self.expr(node.iter)]
        self.generic_visit(node)

    visit_List = visit_Tuple = visit_Set = _contained  # type: ignore[assignment]
    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _contained  # type: ignore

    def _argument(self, node: ast.Call, decorated: str = "") -> None:
        """A call of a registry ``pass_argument`` / ``compiler_argument`` callable, by its last
        name (the index resolves which one); ``decorated``: the def it decorates
        (``@register_backend``, ``@register_backend(name="x")``), the value of its argument."""
        func = node.func if isinstance(node, ast.Call) else node
        args = [self.expr(a) if not isinstance(a, ast.Starred) else ["?", "*args"]
                for a in getattr(node, "args", [])[:8]]
        keywords = {k.arg: self.expr(k.value) for k in getattr(node, "keywords", [])[:16] if k.arg}
        positions = {str(i): [a.lineno, self._col(a)] for i, a in enumerate(getattr(node, "args", [])[:8])}
        positions.update({k.arg: [k.value.lineno, self._col(k.value)]
                          for k in getattr(node, "keywords", [])[:16] if k.arg})
        self.summary["sites"].append({
            "t": "arg", "callee": self.expr(func), "args": args, "kw": keywords,
            "pos": positions, "line": node.lineno, "col": self._col(node), "scope": self.scope,
            "class": self._enclosing_class(), "decorated": decorated,
        })

    # ---- observers and pattern passes ----------------------------------------------------
    def _constructor(self, node: ast.Call) -> None:
        args = [self.expr(a) if not isinstance(a, ast.Starred) else ["?", "*args"]
                for a in node.args]
        keywords = {k.arg: self.expr(k.value) for k in node.keywords if k.arg}
        positions = {str(i): [a.lineno, self._col(a)] for i, a in enumerate(node.args)}
        positions.update({k.arg: [k.value.lineno, self._col(k.value)]
                          for k in node.keywords if k.arg})
        self.summary["sites"].append({
            "t": "ctor", "callee": self.expr(node.func), "args": args, "kw": keywords,
            "pos": positions, "line": node.lineno, "col": self._col(node),
            "scope": self.scope, "class": self._enclosing_class(), "target": self.target,
            "contained": self.in_container,
        })

    # ---- expressions ----------------------------------------------------------------------
    def expr(self, node: ast.AST | None, depth: int = 0) -> Any:
        """A small JSON form of an expression, enough to resolve what it names later."""
        if node is None:
            return ["none"]
        if depth > _MAX_DEPTH:
            return ["?", "deep"]
        d = depth + 1
        if isinstance(node, ast.Constant):
            if node.value is None:
                return ["none"]
            if isinstance(node.value, str):
                return ["s", node.value[:300]]
            if isinstance(node.value, (bool, int, float)):
                return ["c", node.value if not isinstance(node.value, float) or node.value == node.value
                        else 0]
            return ["?", type(node.value).__name__]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) \
                and isinstance(node.operand, ast.Constant) and type(node.operand.value) is int:
            return ["c", -node.operand.value]  # BASES[-1]: an index like any other
        if isinstance(node, (ast.Name, ast.Attribute)):
            dotted = _dotted(node)
            if dotted:
                return ["n", dotted]
            return ["a", self.expr(node.value, d), node.attr] if isinstance(node, ast.Attribute) \
                else ["?", "name"]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
                and len(node.args) == 2 and not node.keywords and isinstance(node.args[1], ast.Constant) \
                and isinstance(node.args[1].value, str) and node.args[1].value.isidentifier():
            # `getattr(cgp, "CustomGraphPass")` is `cgp.CustomGraphPass`: as a class base it was
            # a call the index could not follow, and the pass deriving from it went unreported.
            owner = self.expr(node.args[0], d)
            if owner[0] == "n":
                return ["n", f"{owner[1]}.{node.args[1].value}"]
        if isinstance(node, (ast.JoinedStr, ast.BinOp)) or isinstance(node, ast.Call) \
                and isinstance(node.func, ast.Attribute) and node.func.attr == "join":
            parts = _key_parts(node)  # "post_grad_" + "custom_post_pass": one string
            if parts is not None and all(p[0] == "s" for p in parts):
                return ["s", "".join(p[1] for p in parts)[:300]]
        if isinstance(node, ast.JoinedStr):
            # f"pass_pattern_{i}": a glob, and its pieces, so the index can name each pass when
            # it can tell what ``i`` takes (an index over a list of known length)
            parts = _key_parts(node)
            return ["g", _glob(node), parts] if parts is not None else ["g", _glob(node)]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) \
                and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
            return ["g", node.left.value + "*"]
        if isinstance(node, ast.Call):
            return ["call", self.expr(node.func, d),
                    [self.expr(a, d) for a in node.args[:8]],
                    {k.arg: self.expr(k.value, d) for k in node.keywords[:8] if k.arg}]
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return ["l", [self.expr(e, d) for e in node.elts[:64]]]
        if isinstance(node, ast.Dict):
            return ["d", [[self.expr(k, d) if k is not None else ["?", "**"], self.expr(v, d)]
                          for k, v in list(zip(node.keys, node.values))[:64]]]
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return ["k", self.expr(node.elt, d), _comp_binds(node, self, d)]
        if isinstance(node, ast.DictComp):
            return ["k", self.expr(node.value, d), _comp_binds(node, self, d)]
        if isinstance(node, ast.NamedExpr):  # `(B := CustomGraphPass)` is its value
            return self.expr(node.value, d)
        if isinstance(node, ast.IfExp):  # either branch may be the value
            return ["l", [self.expr(node.body, d), self.expr(node.orelse, d)]]
        if isinstance(node, ast.BoolOp):  # `p or default`: any operand may be the value
            return ["l", [self.expr(v, d) for v in node.values[:8]]]
        if isinstance(node, ast.Lambda):
            return ["lambda", self.scope]
        if isinstance(node, ast.Subscript):
            return ["sub", self.expr(node.value, d), self.expr(node.slice, d)]
        if isinstance(node, ast.Starred):
            return ["?", "*"]
        return ["?", type(node).__name__]

    def _col(self, node: ast.AST) -> int:
        """A node's 1-based column in characters, as editors count (ast counts UTF-8 bytes)."""
        offset = node.col_offset  # type: ignore[attr-defined]
        if offset == 0:
            return 1
        line = node.lineno  # type: ignore[attr-defined]
        table = self._columns.get(line)
        if table is None:
            text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
            table = self._columns[line] = _column_table(text)
        if not table[0]:
            return offset + 1
        # The extra bytes of the non-ASCII characters that start before the offset. Once per
        # line, not per node: one line of 10,000 statements (500 KB) re-encoded the line for
        # each and took 26 s, an LG900 "took longer" for what 10,000 lines lint in 2 s.
        starts, extra = table
        return offset - extra[bisect.bisect_left(starts, offset)] + 1

    def _name_position(self, node: ast.AST, keyword: str) -> tuple[int, int]:
        line = node.lineno
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        # The name's column: the first character after the keyword at the node's own column.
        # Not a search for node.name: ast gives the NFKC form ("Hidden3" for "Ｈidden3").
        col = self._col(node) - 1
        start = text.find(keyword, col)
        if start < 0:
            return line, col + 1
        at = start + len(keyword)
        while at < len(text) and text[at] in " \t\f":
            at += 1
        return line, (at + 1) if at < len(text) and text[at] != "\\" else col + 1


def _literal_item(container: list, key: list) -> list | None:
    """``container[key]`` for a literal tuple/list (an int key) or dict (a string or int key)."""
    if container[0] == "l" and key[0] == "c" and type(key[1]) is int \
            and -len(container[1]) <= key[1] < len(container[1]):
        return container[1][key[1]]
    if container[0] == "d" and key[0] in ("s", "c"):
        found = [value for item_key, value in container[1] if item_key == key]
        return found[-1] if found else None  # the last of a repeated key, as Python keeps
    return None


_REDEFINED = re.compile(r"@\d+")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def _column_table(text: str) -> tuple[list[int], list[int]]:
    """For ``_Extractor._col``: the byte offset of each non-ASCII character of a line, and the
    extra bytes (UTF-8 length less one) of the characters before each (one more at the end)."""
    starts, extra, total = [], [0], 0
    for match in _NON_ASCII.finditer(text):
        starts.append(match.start() + total)
        total += len(match.group().encode("utf-8", "surrogatepass")) - 1
        extra.append(total)
    return starts, extra


def _comp_binds(node: ast.AST, extractor: _Extractor, depth: int) -> list:
    binds = []
    for generator in node.generators:  # type: ignore[attr-defined]
        if isinstance(generator.target, ast.Name):
            binds.append([generator.target.id, extractor.expr(generator.iter, depth)])
    return binds


def _attribute_value(expr: list) -> list | None:
    """What to keep of ``self.x = <expr>``: what can name a pass or flow into a hook (a name, a
    string, a constructor, a container of those), compactly; None for the rest (``None``,
    numbers, arithmetic), so a later, meaningful assignment of the same attribute is kept."""
    kind = expr[0]
    if kind in ("s", "g", "n", "lambda"):
        return expr
    if kind == "call":  # the callee is what matters (a partial: the function it wraps)
        first = [expr[2][0]] if expr[1][0] == "n" and expr[1][1].endswith("partial") and expr[2] \
            else []
        return ["call", expr[1], first, {}]
    if kind in ("l", "d", "k", "sub"):
        return expr if len(repr(expr)) < 600 else None
    return None


def _binding_value(expr: list) -> list:
    """What to keep of ``x = <expr>``: all of it, but a call by its callee (and a partial's
    function) and a large literal as opaque, so a cached summary stays small."""
    kept = _attribute_value(expr)
    if kept is not None:
        return kept
    return expr if expr[0] in ("none", "c", "?") else ["?", expr[0]]


def _returned(node: ast.FunctionDef | ast.AsyncFunctionDef, extractor: "_Extractor") -> list:
    """The names and constructors a function returns (``return Pass()``, ``return fn``), found
    by walking statements only (no expression is walked: cheap enough for every function)."""
    found: list = []
    params = [a.arg for a in [*node.args.posonlyargs, *node.args.args]]
    stack: list[ast.stmt] = list(node.body)
    while stack and len(found) < 4:
        statement = stack.pop()
        if isinstance(statement, ast.Return) and statement.value is not None:
            value = statement.value
            if isinstance(value, ast.Call) and isinstance(value.func, (ast.Name, ast.Attribute)):
                callee = extractor.expr(value.func)
                found.append(["call", callee, [extractor.expr(value.args[0])] if
                              _last(value.func) == "partial" and value.args else [], {}])
            elif isinstance(value, ast.Name) and value.id in params:
                # a helper handing back what it is given (``append_pass(existing, new)``
                # returning ``new``): the caller's argument, bound where it is called
                found.append(["param", params.index(value.id), value.id])
            elif isinstance(value, (ast.Name, ast.Attribute)) and _dotted(value):
                found.append(["n", _dotted(value)])
            elif isinstance(value, ast.Lambda):  # a closure chaining what it was given
                found.append(extractor.expr(value))
        elif not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for name in ("body", "orelse", "finalbody"):
                stack.extend(getattr(statement, name, None) or [])
            for handler in getattr(statement, "handlers", None) or []:
                stack.extend(handler.body)
    return found


def _graph_call(node: ast.FunctionDef | ast.AsyncFunctionDef,
                methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] | None,
                vocab: Vocabulary, imports: dict | None = None) -> str:
    """Why ``__call__(self, g)`` is a graph pass's entry point, or "": it is called with exactly
    one graph (a backend's ``(gm, example_inputs)`` is not a pass), annotated as an FX graph or
    used as one (``g.nodes``, ``g.erase_node``), itself or by the method of the class it hands
    ``g`` to (``return self.run(g)``, ``methods``: the class's own). What counts as a graph and
    a use of one is registry data (``[[base]] role = "graph_type"``, ``Vocabulary.graph_names``
    / ``graph_members``); the prefilter parses every file holding those words too."""
    positional = [*node.args.posonlyargs, *node.args.args][1:]
    required = len(positional) - len(node.args.defaults)
    if not positional or required != 1:
        return ""
    evidence = _graph_use(node, positional[0], vocab, imports)
    if evidence or not methods:
        return evidence
    for inner in ast.walk(node):  # self.m(g): the first parameter m takes g as
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) \
                and isinstance(inner.func.value, ast.Name) and inner.func.value.id == "self" \
                and inner.func.attr in methods and inner.args \
                and isinstance(inner.args[0], ast.Name) and inner.args[0].id == positional[0].arg:
            method = methods[inner.func.attr]
            params = [*method.args.posonlyargs, *method.args.args][1:]
            evidence = _graph_use(method, params[0], vocab, imports) if params else ""
            if evidence:
                return f"{evidence} in self.{inner.func.attr}"
    return ""


def _foreign_annotation(dotted: str, imports: dict | None, vocab: Vocabulary) -> bool:
    """``graph_like: onnx_ir.Graph`` / ``from onnx_ir import Graph``: a class named like an FX
    graph type, imported from a package none of the registry's graph types lives in. Names
    the file does not import (a string, a local class) are not foreign: they count."""
    head = dotted.split(".", 1)[0] if dotted else ""
    target = (imports or {}).get(head)
    if not target:
        return False
    packages = {name.split(".", 1)[0].split(":", 1)[0] for name in vocab.graph_types}
    return target.split(".", 1)[0].split(":", 1)[0] not in packages


def _alternatives(annotation: ast.expr | None) -> list[ast.expr]:
    """The types an annotation allows: itself, or each member of ``Union[A, B]``,
    ``Optional[A]`` and ``A | B`` (tt-torch's ``module_or_graph: Union[torch.fx.Graph,
    torch.fx.GraphModule]``): a parameter that may be a graph is one, as a pass treats it."""
    if annotation is None:
        return []
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _alternatives(annotation.left) + _alternatives(annotation.right)
    if isinstance(annotation, ast.Subscript) and _last(annotation.value) in ("Union", "Optional"):
        inner = annotation.slice
        members = inner.elts if isinstance(inner, ast.Tuple) else [inner]
        return [alternative for member in members for alternative in _alternatives(member)]
    return [annotation]


def _graph_use(node: ast.FunctionDef | ast.AsyncFunctionDef, param: ast.arg,
               vocab: Vocabulary, imports: dict | None = None) -> str:
    """How a function treats ``param`` as an FX graph: its annotation, or what it does with it."""
    for annotation in _alternatives(param.annotation):
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            dotted = annotation.value.strip()
        else:
            dotted = _dotted(annotation)
        text = dotted.rsplit(".", 1)[-1] if dotted else _last(annotation)
        if text in vocab.graph_names and not _foreign_annotation(dotted, imports, vocab):
            return f"annotated {text}"
    for inner in ast.walk(node):
        if isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name) \
                and inner.value.id == param.arg and inner.attr in vocab.graph_members:
            return f"uses {param.arg}.{inner.attr}"
    return ""


def _graph_walk(node: ast.FunctionDef | ast.AsyncFunctionDef, param: str, vocab: Vocabulary,
                imports: dict | None = None) -> str:
    """Why a first parameter not annotated as a graph is one, by what the function does: it
    walks a graph member reached from it (``for n in gm.graph.nodes``, ``reversed(g.nodes)``,
    ``graph.fx_graph.nodes`` of a project's wrapper) and calls a ``graph_mutation`` member on
    what it walks or on something reached from the parameter (``n.replace_all_uses_with``,
    ``gm.graph.erase_node``); or it hands the parameter, first, to one of torch's
    ``graph_rewrite`` functions (``split_const_subgraphs(gm)``). A helper taking a node reads
    ``node.graph`` but does not walk it. "" when neither."""
    def reached(expr: ast.expr) -> bool:
        while isinstance(expr, (ast.Attribute, ast.Subscript)):
            expr = expr.value
        return isinstance(expr, ast.Name) and expr.id == param

    walked, walk = set(), ""
    for inner in ast.walk(node):
        if not isinstance(inner, (ast.For, ast.AsyncFor, ast.comprehension)):
            continue
        for sub in ast.walk(inner.iter):
            if isinstance(sub, ast.Attribute) and sub.attr in vocab.graph_members \
                    and reached(sub.value):
                walk = walk or _dotted(sub) or sub.attr
                if isinstance(inner.target, ast.Name):
                    walked.add(inner.target.id)
    for inner in ast.walk(node) if walk else ():
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) \
                and inner.func.attr in vocab.graph_mutators and (
                    reached(inner.func.value) or (isinstance(inner.func.value, ast.Name)
                                                  and inner.func.value.id in walked)):
            return f"walks {walk}"
    if walk and _node_stores(node, vocab, param):  # node.target = torch.cat on what it walks
        return f"walks {walk}"
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call) and inner.args and isinstance(inner.args[0], ast.Name) \
                and inner.args[0].id == param and _torch_rewriter(inner.func, vocab, imports):
            return f"hands {param} to {_dotted(inner.func)}()"
    return ""


def _node_stores(node: ast.FunctionDef | ast.AsyncFunctionDef, vocab: Vocabulary,
                 param: str = "") -> list[tuple[int, int, str]]:
    """The stores of a registry ``graph_store`` attribute (``node.target = torch.cat``,
    ``n.args = tuple(args)``, ``node.target += "_dup"``) on a plain local name in a function
    that walks a graph (a loop or comprehension over a registry ``graph_type`` member,
    ``graph.nodes`` / ``gm.graph.find_nodes(...)``; reached from ``param`` when one is given):
    they retarget or rewire the nodes of the graph it walks, a rewrite as a ``graph_mutation``
    member call is. (line, col, text) in source order; none without a walk, nor on ``self``."""
    if not vocab.graph_stores:
        return []

    def reached(expr: ast.expr) -> bool:
        while isinstance(expr, (ast.Attribute, ast.Subscript, ast.Call)):
            expr = expr.func if isinstance(expr, ast.Call) else expr.value
        return not param or (isinstance(expr, ast.Name) and expr.id == param)

    walks = any(isinstance(inner, (ast.For, ast.AsyncFor, ast.comprehension)) and any(
        isinstance(sub, ast.Attribute) and sub.attr in vocab.graph_members and reached(sub.value)
        for sub in ast.walk(inner.iter)) for inner in ast.walk(node))
    if not walks:
        return []
    found = []
    for inner in ast.walk(node):
        targets = inner.targets if isinstance(inner, ast.Assign) else \
            [inner.target] if isinstance(inner, ast.AugAssign) else []
        for target in targets:
            if isinstance(target, ast.Attribute) and target.attr in vocab.graph_stores \
                    and isinstance(target.value, ast.Name) \
                    and target.value.id not in ("self", "cls"):
                found.append((target.lineno, target.col_offset,
                              f"stores {target.value.id}.{target.attr}"))
    return sorted(found)


def _graph_rewrites(node: ast.FunctionDef | ast.AsyncFunctionDef, param: str,
                    vocab: Vocabulary, imports: dict | None = None) -> tuple[str, list[ast.expr]]:
    """How a function rewrites an FX graph by itself (the first registry ``graph_mutation``
    member it calls, ``graph.erase_node``; or a new graph stored over its parameter's,
    ``gm.graph = g``), and the callees it hands its graph ``param`` to at any position
    (``param``, ``param.graph`` or a local alias of either; for ``Transform()(param)``, the
    class whose instance it is handed to): what does the rewriting then. A call of a registry
    ``graph_rewrite`` function of torch handed the graph (``subgraph_rewriter.replace_pattern(gm,
    ...)``, through the file's ``imports``) is a rewrite of its own."""
    aliases, rewrite, callees = {param} if param else set(), "", []
    for inner in ast.walk(node):
        if isinstance(inner, ast.Assign) and len(inner.targets) == 1:
            target, value = inner.targets[0], inner.value
            if isinstance(value, ast.Attribute) and value.attr in vocab.graph_members:
                value = value.value
            if isinstance(target, ast.Name) and isinstance(value, ast.Name) and value.id in aliases:
                aliases.add(target.id)  # graph = gm.graph
    stores = _node_stores(node, vocab, param)
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) \
                and inner.func.attr in vocab.graph_mutators:
            rewrite = rewrite or f"{_dotted(inner.func) or inner.func.attr}()"
        elif isinstance(inner, ast.Assign) and param and any(
                isinstance(t, ast.Attribute) and t.attr in vocab.graph_members
                and isinstance(t.value, ast.Name) and t.value.id in aliases for t in inner.targets):
            rewrite = rewrite or f"assigns {_dotted(inner.targets[0])}"
        func = inner.func if isinstance(inner, ast.Call) else None
        if isinstance(func, ast.Call) and isinstance(func.func, (ast.Name, ast.Attribute)):
            func = func.func  # Transform()(gm): the class whose instance it is handed to
        if isinstance(inner, ast.Call) and aliases and len(callees) < 16 \
                and isinstance(func, (ast.Name, ast.Attribute)) and any(
                    (isinstance(a, ast.Attribute) and a.attr in vocab.graph_members and
                     isinstance(a.value, ast.Name) and a.value.id in aliases)
                    or (isinstance(a, ast.Name) and a.id in aliases)
                    for a in [*inner.args, *(k.value for k in inner.keywords)]):
            callees.append(func)
            if not rewrite and _torch_rewriter(func, vocab, imports):
                rewrite = f"{_dotted(func)}()"
    if not rewrite and param:
        rewrite = _retraces(node, aliases, vocab, imports)
    return rewrite or (stores[0][2] if stores else ""), callees


def _retraces(node: ast.AST, names: set[str], vocab: Vocabulary, imports: dict | None) -> str:
    """``gm = make_fx(functionalize(gm), decomposition_table=table)(*example_inputs)``: one of
    ``names`` (the graph, or an alias of it) handed, at any depth of its arguments, to a
    registry ``graph_producer`` whose result is assigned: the graph is traced again into a new
    one (other decompositions, functionalized), a rewrite of it. "" when none."""
    leaves = vocab.producer_leaves
    if not leaves or not names or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return ""
    for param in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
        if param.arg in names and any(
                (a.value.strip() if isinstance(a, ast.Constant) and isinstance(a.value, str)
                 else _dotted(a) or _last(a) or "").rsplit(".", 1)[-1] not in vocab.graph_names
                for a in _alternatives(param.annotation)):
            return ""  # ``f: Union[nn.Module, ExportedProgram]``: it may export a module
    for inner in ast.walk(node):
        if not isinstance(inner, (ast.Assign, ast.Return)) or not isinstance(inner.value, ast.Call):
            continue
        call = inner.value.func if isinstance(inner.value.func, ast.Call) else inner.value
        dotted = _producer_call(call, vocab, imports)
        if not dotted:
            continue
        for argument in [*call.args, *(k.value for k in call.keywords)]:
            if any(isinstance(sub, ast.Name) and sub.id in names for sub in ast.walk(argument)):
                return f"retraces it with {dotted}()"
    return ""


def _torch_rewriter(func: ast.expr, vocab: Vocabulary, imports: dict | None) -> bool:
    """Is ``func`` a registry ``graph_rewrite`` function (``replace_pattern``), reached through
    the file's imports from a package its row lives in (``from torch.fx import
    subgraph_rewriter``; ``torch.fx.replace_pattern``)? Not a function of the project's own of
    that name (fx2ait's ``replace_pattern``: the index follows that one as a callee)."""
    dotted = _dotted(func)
    packages = vocab.rewriter_leaves.get(dotted.rsplit(".", 1)[-1]) if dotted else None
    if not packages:
        return False
    head, _, rest = dotted.partition(".")
    target = (imports or {}).get(head, "")
    full = f"{target.replace(':', '.')}.{rest}".rstrip(".") if target else ""
    return full.split(".", 1)[0] in packages


def _pin_loop_variable(site: dict, name: str, iterable: list) -> None:
    """Bind a loop variable inside one site to its own loop's iterable (a comprehension form)."""
    def pin(expr: list) -> list:
        return ["k", expr, [[name, iterable]]] if expr == ["n", name] else expr

    for key in ("args", "value"):
        if isinstance(site.get(key), list) and key == "args":
            site[key] = [pin(e) for e in site[key]]
        elif key in site:
            site[key] = pin(site[key])
    if "kw" in site:
        site["kw"] = {k: pin(v) for k, v in site["kw"].items()}


def _walk_refs(node: ast.AST) -> Iterator[tuple[ast.expr, ast.AST | None]]:
    """Names a function's own body hands on as values: call arguments (``partial(f, ...)``'s
    ``f``) and elements of list / tuple / set displays, with the call they are given to (None for
    a display). Calls' own callees are ``_walk_calls``'; annotations are not values."""
    stack: list[tuple[ast.AST, ast.AST | None]] = [(c, None) for c in node.body]  # type: ignore
    while stack:
        child, owner = stack.pop()
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(child, ast.AnnAssign):
            stack.extend((c, owner) for c in (child.target, child.value) if c is not None)
            continue
        if isinstance(child, ast.Call):
            values = [*child.args, *(k.value for k in child.keywords)]
            for value in values:
                if isinstance(value, (ast.Name, ast.Attribute)) and _dotted(value):
                    yield value, child.func
            stack.extend((c, child.func) for c in values)
            stack.append((child.func, owner))
            continue
        if isinstance(child, (ast.List, ast.Tuple, ast.Set)):
            for element in child.elts:
                if isinstance(element, (ast.Name, ast.Attribute)) and _dotted(element):
                    yield element, None
        stack.extend((c, owner) for c in ast.iter_child_nodes(child))


def _walk_calls(node: ast.AST) -> Iterator[ast.Call]:
    """Calls in a function's own body (nested defs and classes are their own functions)."""
    stack = list(ast.iter_child_nodes(node))
    while stack:
        child = stack.pop()
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(child, ast.Call):
            yield child
        stack.extend(ast.iter_child_nodes(child))


def _is_abstract(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """``@abstractmethod`` (``abstractproperty``)."""
    return any(_last(d) in ("abstractmethod", "abstractproperty") for d in node.decorator_list)


def _only_raises_not_implemented(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A body that only raises NotImplementedError (after a docstring): abstract by convention,
    or a TODO of a concrete class; ``Index.is_concrete`` tells which by what surrounds it."""
    body = [s for s in node.body
            if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) == 1 and isinstance(body[0], ast.Raise) and body[0].exc is not None:
        return _last(body[0].exc) == "NotImplementedError"
    return False


_MAX_KEY = 300  # a folded key longer than any config key is not one (hostile input stays small)


def _key_parts(node: ast.AST, depth: int = 0) -> list | None:
    """A string built from pieces, as a list of ``["s", text]`` / ``["n", dotted]``: literals
    (implicit concatenation is one literal already), names, ``a + b``, f-strings without format
    specs, and ``"sep".join([...])`` of a list or tuple display. None for anything else."""
    if depth > 32:
        return None
    d = depth + 1
    if isinstance(node, ast.Constant):
        return [["s", node.value]] if isinstance(node.value, str) \
            and len(node.value) <= _MAX_KEY else None
    if isinstance(node, (ast.Name, ast.Attribute)):
        dotted = _dotted(node)
        return [["n", dotted]] if dotted else None
    parts: list | None = None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _key_parts(node.left, d), _key_parts(node.right, d)
        parts = left + right if left is not None and right is not None else None
    elif isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                if value.format_spec is not None or value.conversion not in (-1, ord("s")):
                    return None
                inner = _key_parts(value.value, d)
            else:
                inner = _key_parts(value, d)
            if inner is None:
                return None
            parts += inner
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr == "join" and isinstance(node.func.value, ast.Constant) \
            and isinstance(node.func.value.value, str) and len(node.args) == 1 \
            and not node.keywords and isinstance(node.args[0], (ast.List, ast.Tuple)):
        parts = []
        for n, element in enumerate(node.args[0].elts):
            inner = _key_parts(element, d)
            if inner is None:
                return None
            parts += ([["s", node.func.value.value]] if n else []) + inner
    if parts is None or len(parts) > 16 \
            or sum(len(p[1]) for p in parts if p[0] == "s") > _MAX_KEY:
        return None
    return parts


def _namespace_owner(node: ast.AST) -> ast.expr | None:
    """``m`` of ``m.__dict__`` or ``vars(m)``: a module's namespace, stored into by key."""
    if isinstance(node, ast.Attribute) and node.attr == "__dict__":
        return node.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "vars" \
            and len(node.args) == 1 and not node.keywords:
        return node.args[0]
    return None


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


# How many calls deep _last looks through a callee (``register("k")(f)``: one). Bounded so
# that ``a()()()...`` costs linear time, not quadratic (every call of the chain is visited).
MAX_CALLEE_CALLS = 8


def _last(node: ast.AST) -> str:
    for _ in range(MAX_CALLEE_CALLS + 1):
        if not isinstance(node, ast.Call):
            break
        node = node.func
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _string(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _glob(node: ast.JoinedStr) -> str:
    text = "".join(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "*"
                   for v in node.values)
    return re.sub(r"\*+", "*", text)


# ---- the whole-tree index -------------------------------------------------------------------

# What a name resolves to:
#   ("module", module)               a module (in the tree or installed)
#   ("class", module, qualname)      a class definition whose summary we have
#   ("func", module, qualname)       a function definition whose summary we have
#   ("value", module, scope, expr)   a variable bound to an expression
#   ("ext", module, qualname)        something outside what we can read (named as imported)
#   ("unknown", text)                a parameter, a builtin, anything we cannot follow
Ref = tuple


@dataclass
class Unresolved:
    """A value we could not follow to a definition, kept so it is reported, never skipped.
    ``data``: the expression is arithmetic, a comparison or a negation (``msg + reason``): what
    it makes is a value, never a function or a class, so it cannot be a pass."""

    text: str
    data: bool = False


# Expressions that compute data: `a + b`, `-x`, `a < b` (a function or class never comes out).
DATA_EXPRESSIONS = ("BinOp", "UnaryOp", "Compare")


class Index:
    """Every module of the linted tree, with names resolved across files."""

    def __init__(self, summaries: Iterable[tuple[str, dict]], vocab: Vocabulary,
                 external: bool = True) -> None:
        self.vocab = vocab
        self.modules: dict[str, dict] = {}
        self.paths: dict[str, str] = {}
        for path, summary in summaries:
            name = summary["module"]
            if name in self.modules:
                # Two files of one module name (two projects' conftest.py, scripts without a
                # package): both are checked; the second resolves its own names under an alias.
                n = 2
                while f"{name}<{n}>" in self.modules:
                    n += 1
                name = f"{name}<{n}>"
                summary = {**summary, "module": name}
            self.modules[name] = summary
            self.paths[name] = path
        # module -> the other files of that name ("x" -> ["x<2>"]): which one Python imports
        # depends on sys.path, so a base imported from such a module is read from each of them.
        self.twins: dict[str, list[str]] = {}
        for name in self.modules:
            if name.endswith(">") and "<" in name:
                self.twins.setdefault(name[:name.rindex("<")], []).append(name)
        self._external: dict[str, dict | None] = {}
        self._allow_external = external
        self._ancestors: dict[tuple[str, str], tuple[list[Ref], list[str]]] = {}
        self._pass_bases: dict[tuple[str, str, str], str | None] = {}
        self._base_pairs: dict[tuple[str, str], list[tuple[Ref, list]]] = {}
        self.too_deep: dict[str, str] = {}  # module -> first class whose ancestry was cut
        self.too_long: dict[str, str] = {}  # module -> a name whose alias chain was cut
        self.cut: set[tuple[str, str]] = set()  # classes whose ancestry was cut there
        self._lookups: dict[tuple[str, str], Ref] = {}
        self._children: dict[tuple[str, str], list[tuple[str, str]]] | None = None
        # Where the linted packages live on disk, by top-level package: linting vllm/compilation/
        # passes/fusion alone, its base in vllm/compilation/passes/ is still read from there.
        self._roots = _package_roots(self.paths.items())
        self.siblings: dict[str, dict] = {}  # such modules read from disk (never reported on)
        self._follow_key_constants()

    def _follow_key_constants(self) -> None:
        """``from .keys import PASS_KEY; cfg[PASS_KEY] = p``: a file that imports a name another
        module binds to a hook key is read again in full, told what that name holds (its own
        summary could not know: each file is summarized alone, and cached so)."""
        hooks = self.vocab.hooks
        constants: dict[str, dict[str, str]] = {}  # module -> constant -> hook key
        for module, summary in self.modules.items():
            for name, binding in summary.get("assigns", {}).get("", {}).items():
                if isinstance(binding, list) and binding[:1] == ["s"] and binding[1] in hooks:
                    constants.setdefault(module, {})[name] = binding[1]
        if not constants:
            return
        for module, summary in list(self.modules.items()):
            found: dict[str, str] = {}
            for local, target in summary.get("imports", {}).items():
                ref = self._import(target, 0)  # aliases and re-exports resolve here
                if ref[0] == "value" and isinstance(ref[3], list) and ref[3][:1] == ["s"] \
                        and ref[3][1] in hooks:
                    found[local] = ref[3][1]
                elif ref[0] == "module":
                    # keys.KEY, and through more attribute levels: pkg.keys.KEY, hooks.keys.KEY
                    for owner, names in constants.items():
                        if owner == ref[1] or owner.startswith(ref[1] + "."):
                            below = owner[len(ref[1]):]
                            for name, key in names.items():
                                found[f"{local}{below}.{name}"] = key
            if found and module in self.paths:
                again = self._read_with_keys(module, summary, found)
                if again is not None:
                    self.modules[module] = again
                    self._lookups.clear()

    def _read_with_keys(self, module: str, summary: dict, found: dict[str, str]) -> dict | None:
        from lint_rules import isolation

        try:
            data = isolation.read_regular(self.paths[module], isolation.limits_in_force().max_bytes)
            return summarize(data, module, bool(summary.get("package")), self.vocab,
                             key_constants=found)
        except (isolation.Unreadable, SyntaxError, ValueError, RecursionError, MemoryError):
            return None  # as read before: the key stays unknown

    # ---- modules -------------------------------------------------------------------------
    def module(self, name: str) -> dict | None:
        summary = self.modules.get(name)
        if summary is not None or not self._allow_external:
            return summary
        if name not in self._external:
            self._external[name] = self._load_external(name)
        return self._external[name]

    def in_tree(self, module: str) -> bool:
        return module in self.modules

    def _load_external(self, name: str) -> dict | None:
        # A module of a linted package that is on disk next to the linted files but outside the
        # paths given: read it (never import it) so bases and names resolve through it.
        for root in self._roots.get(name.split(".", 1)[0], ()):
            stem = Path(root, *name.split(".")[1:])
            for candidate in (stem / "__init__.py", stem.with_suffix(".py")):
                if candidate.is_file():
                    summary = _external_summary(str(candidate), name,
                                                candidate.name == "__init__.py", self.vocab,
                                                light=False)
                    if summary is not None:
                        self.siblings[name] = summary
                    return summary
        # Otherwise only the modules that define (or re-export) a registry base: enough to know
        # which of their methods are abstract, never the whole of an installed torch.
        if not any(base == name or base.startswith(name + ".") for base in self.vocab.base_modules):
            return None
        path = _installed_source(name)
        if path is None:
            return None
        return _external_summary(str(path), name, path.name == "__init__.py", self.vocab)

    # ---- names ---------------------------------------------------------------------------
    def lookup(self, module: str, name: str, depth: int = 0) -> Ref:
        """``name`` in the namespace of ``module`` (memoized: a large package's re-exports are
        followed once per name, not once per class that derives from one of them)."""
        key = (module, name)
        found = self._lookups.get(key)
        if found is None:
            self._lookups[key] = ("unknown", f"{module}.{name}")  # a cycle ends here
            found = self._lookup(module, name, depth)
            self._lookups[key] = found
        return found

    def _lookup(self, module: str, name: str, depth: int = 0) -> Ref:
        summary = self.module(module)
        if summary is None:
            return ("ext", module, name)
        if depth > MAX_ALIASES:  # re-exported through more modules than any real package
            self.too_long.setdefault(module, name)
            return ("unknown", f"{module}.{name}")
        if name in summary["classes"]:
            return ("class", module, name)
        binding = summary["assigns"].get("", {}).get(name)
        if binding is not None:
            return self._binding(module, "", binding, depth)
        target = summary["imports"].get(name)
        if target is not None:
            return self._import(target, depth)
        if self.module(f"{module}.{name}") is not None:
            return ("module", f"{module}.{name}")
        for star in summary["stars"]:
            found = self.lookup(star, name, depth + 1)
            if found[0] not in ("ext", "unknown"):
                return found
        return ("unknown", f"{module}.{name}")

    def _import(self, target: str, depth: int) -> Ref:
        if ":" not in target:
            return ("module", target) if self.module(target) is not None else ("ext", target, "")
        module, name = target.split(":", 1)
        if self.module(module) is None:
            if self.module(f"{module}.{name}") is not None:
                return ("module", f"{module}.{name}")
            return ("ext", module, name)
        found = self.lookup(module, name, depth + 1)
        if found[0] == "unknown" and self.module(f"{module}.{name}") is not None:
            return ("module", f"{module}.{name}")
        return found

    def _binding(self, module: str, scope: str, binding: list, depth: int) -> Ref:
        kind = binding[0]
        if kind == "class":
            return ("class", module, binding[1])
        if kind == "func":
            return ("func", module, binding[1])
        if kind == "import":
            return self._import(binding[1], depth + 1)
        if kind == "param":
            return ("unknown", "parameter")
        return ("value", module, scope, binding)

    def resolve_name(self, module: str, scope: str, dotted: str, klass: str = "",
                     depth: int = 0) -> Ref:
        """A dotted name as read in ``scope`` (a function qualname, "" for module level)."""
        head, *rest = dotted.split(".")
        ref = self._resolve_head(module, scope, head, klass, depth)
        for part in rest:
            ref = self.attribute(ref, part, depth + 1)
        return ref

    def _resolve_head(self, module: str, scope: str, head: str, klass: str, depth: int) -> Ref:
        summary = self.module(module)
        if summary is None:
            return ("ext", module, head)
        if head in ("self", "cls") and klass:
            return ("instance", module, klass)
        for enclosing in _enclosing_scopes(scope, summary):
            binding = summary["assigns"].get(enclosing, {}).get(head)
            if binding is not None:
                return self._binding(module, enclosing, binding, depth)
        return self.lookup(module, head, depth)

    def attribute(self, ref: Ref, name: str, depth: int = 0) -> Ref:
        kind = ref[0]
        if depth > 24:
            return ("unknown", name)
        if kind == "module":
            return self.lookup(ref[1], name, depth + 1)
        if kind in ("class", "instance"):
            module, qualname = ref[1], ref[2]
            summary = self.module(module)
            klass = summary["classes"].get(qualname) if summary else None
            if klass is None:
                return ("unknown", f"{qualname}.{name}")
            if f"{qualname}.{name}" in summary["classes"]:
                return ("class", module, f"{qualname}.{name}")
            if name in klass["methods"]:
                return ("func", module, f"{qualname}.{name}")
            attr = klass["attrs"].get(name)
            if attr is not None:
                scope, expr = attr
                return ("value", module, scope, expr, qualname)
            for base in self.bases(module, qualname):  # inherited
                if base[0] == "class":
                    found = self.attribute((kind, base[1], base[2]), name, depth + 1)
                    if found[0] != "unknown":
                        return found
            return ("unknown", f"{qualname}.{name}")
        if kind == "ext":
            module, qualname = ref[1], ref[2]
            return ("ext", module, f"{qualname}.{name}" if qualname else name) if qualname \
                else self._import(f"{module}:{name}", depth + 1)
        return ("unknown", name)

    # ---- classes -------------------------------------------------------------------------
    def class_info(self, module: str, qualname: str) -> dict | None:
        summary = self.module(module)
        return summary["classes"].get(qualname) if summary else None

    def bases(self, module: str, qualname: str) -> list[Ref]:
        return [ref for ref, _ in self.base_pairs(module, qualname)]

    def base_pairs(self, module: str, qualname: str) -> list[tuple[Ref, list]]:
        """(what each base resolves to, the base as written); a base imported in two ways
        (``try``/``except ImportError``, ``if``/``else``) gives one pair per way."""
        key = (module, qualname)
        if key not in self._base_pairs:
            self._base_pairs[key] = self._find_base_pairs(module, qualname)
        return self._base_pairs[key]

    def _find_base_pairs(self, module: str, qualname: str) -> list[tuple[Ref, list]]:
        klass = self.class_info(module, qualname)
        if klass is None:
            return []
        summary = self.module(module) or {}
        alternatives = summary.get("alternatives", {})
        pairs = []
        for base in klass["bases"]:
            pairs.append((self.expr_ref(module, klass["scope"], base), base))
            head = base[1].split(".", 1)[0] if base[0] == "n" else ""
            targets = list(alternatives.get(head, []))
            imported = summary.get("imports", {}).get(head) if head and self.twins else None
            if imported is not None:
                # Two files of the imported module's name (``my-dir/x.py``, ``a.b/x.py``: folders
                # that are not packages): the base was read from the first only, so a benign
                # ``x.py`` hid the pass that derives from the other one's base. Read both.
                imported_module = imported.split(":", 1)[0]
                targets += [twin + imported[len(imported_module):]
                            for twin in self.twins.get(imported_module, ())]
            for target in targets:
                ref = self._import(target, 0)
                for part in base[1].split(".")[1:]:
                    ref = self.attribute(ref, part)
                pairs.append((self._settle(ref), base))
        return pairs

    def expr_ref(self, module: str, scope: str, expr: list, klass: str = "") -> Ref:
        """What a name-like expression refers to (a call refers to its callee's result)."""
        if expr[0] == "n":
            ref = self.resolve_name(module, scope, expr[1], klass)
            return self._settle(ref)
        if expr[0] == "sub":  # Generic[T], CustomGraphPass[...]: the subscripted class
            ref = self.expr_ref(module, scope, expr[1], klass)
            if ref[0] == "value" and len(ref) > 3:
                # BASES[1], BASES["b"]: an item of a literal tuple, list or dict of the tree
                # (it was the container itself, no class, and the pass went unreported)
                item = _literal_item(ref[3], expr[2])
                if item is not None:
                    return self.expr_ref(ref[1], ref[2], item, ref[4] if len(ref) > 4 else "")
                return ("unknown", _text(expr))
            return ref
        return ("unknown", _text(expr))

    def _settle(self, ref: Ref, depth: int = 0) -> Ref:
        """Follow variables that are plain aliases (``PMP = PatternMatcherPass``)."""
        seen: set[tuple] = set()
        while ref[0] == "value":
            expr = ref[3]
            if _is_partial(expr):  # functools.partial(PatternMatcherPass, subsystem=...)
                expr = expr[2][0]
            if expr[0] != "n":
                return ref
            step = (ref[1], ref[2], expr[1])
            if step in seen:  # K0 = m1.K0 inside m1: a cycle names nothing (Python raises)
                return ("unknown", expr[1])
            seen.add(step)
            if depth >= MAX_ALIASES:  # a1 = a0; a2 = a1; ...: reported, never read as "no pass"
                self.too_long.setdefault(ref[1], expr[1])
                return ("unknown", expr[1])
            ref = self.resolve_name(ref[1], ref[2], expr[1], ref[4] if len(ref) > 4 else "")
            depth += 1
        return ref

    def ancestors(self, module: str, qualname: str) -> tuple[list[Ref], list[str]]:
        """(resolved ancestors, nearest first; names of bases that could not be resolved)."""
        key = (module, qualname)
        if key not in self._ancestors:
            # Up a chain of single bases first, then down it: each class extends its base's
            # answer (a chain of 50,000 classes, in any order, costs one step per class).
            chain, members = [key], {key}
            while True:
                pairs = self.base_pairs(*chain[-1])
                if len(pairs) != 1 or pairs[0][0][0] != "class":
                    break
                above = (pairs[0][0][1], pairs[0][0][2])
                if above in self._ancestors or above in members:
                    break
                chain.append(above)
                members.add(above)
            for link in reversed(chain):
                self._ancestors[link] = self._find_ancestors(*link)
        return self._ancestors[key]

    def ancestry_cut(self, module: str, qualname: str) -> bool:
        """Was this class's ancestry too deep to read whole (``MAX_ANCESTORS``)?"""
        self.ancestors(module, qualname)
        return (module, qualname) in self.cut

    def _find_ancestors(self, module: str, qualname: str) -> tuple[list[Ref], list[str]]:
        pairs = self.base_pairs(module, qualname)
        if len(pairs) == 1 and pairs[0][0][0] == "class":
            # One base whose ancestry is known: the breadth-first walk from here would visit
            # that base, then exactly what the walk from it visited (unless we are in it: a cycle).
            base = pairs[0][0]
            known = self._ancestors.get((base[1], base[2]))
            if known is not None and ("class", module, qualname) not in known[0]:
                found, unresolved = [base, *known[0][:MAX_ANCESTORS - 1]], list(known[1])
                if (base[1], base[2]) in self.cut or len(known[0]) >= MAX_ANCESTORS:
                    if (base[1], base[2]) not in self.cut:
                        unresolved.append(f"{base[2]} (more than {MAX_ANCESTORS} ancestors)")
                    self.too_deep.setdefault(module, qualname)
                    self.cut.add((module, qualname))
                return found, unresolved
        found: list[Ref] = []
        unresolved: list[str] = []
        seen = {(module, qualname)}
        stack = collections.deque([(module, qualname)])
        while stack:
            mod, qual = stack.popleft()
            if len(seen) > MAX_ANCESTORS:
                # A hierarchy no program has (a hostile file: 5,000 classes in a chain would
                # cost a quadratic walk): read no further, and say so (LG001 reports it LG900).
                unresolved.append(f"{qual} (more than {MAX_ANCESTORS} ancestors)")
                self.too_deep.setdefault(module, qualname)
                self.cut.add((module, qualname))
                break
            klass = self.class_info(mod, qual)
            if klass is None:
                continue
            for base, written in self.base_pairs(mod, qual):
                if base[0] == "class":
                    if (base[1], base[2]) not in seen:
                        seen.add((base[1], base[2]))
                        found.append(base)
                        stack.append((base[1], base[2]))
                elif base[0] == "ext":
                    if base not in found:
                        found.append(base)
                    if base[2] and not _is_builtin_base(base):
                        unresolved.append(f"{base[1]}.{base[2]}" if base[1] else base[2])
                elif _text(written) not in ("object",) and base[0] != "module":
                    if not _is_builtin_name(_text(written)):
                        unresolved.append(_text(written))
        return found, unresolved

    def base_entry(self, ref: Ref, role: str | None = None) -> str | None:
        """The registry base a class or name *is* (compared dotted, so ``import torch`` and
        ``from torch._inductor.custom_graph_pass import CustomGraphPass`` spell the same)."""
        if ref[0] not in ("class", "ext") or not ref[2]:
            return None
        name = self.vocab.by_dotted.get(f"{ref[1]}.{ref[2]}" if ref[1] else ref[2])
        if name is None or (role is not None and self.vocab.bases[name][0] != role):
            return None
        return name

    def pass_base(self, module: str, qualname: str, role: str = "pass_class") -> str | None:
        """The registry base (of ``role``) this class derives from, or is, if any. Memoized
        through direct bases, so a tree of thousands of classes resolves each base once."""
        key = (module, qualname, role)
        if key in self._pass_bases:
            return self._pass_bases[key]
        # Nearest ancestor first, over the ancestry ``ancestors`` reads (no recursion: a base
        # chain thousands of classes long, in any order, is hostile input, not a crash).
        found = None
        for ref in [("class", module, qualname), *self.ancestors(module, qualname)[0]]:
            found = self.base_entry(ref, role)
            if found is not None:
                break
        self._pass_bases[key] = found
        return found

    def subclasses(self, module: str, qualname: str) -> list[tuple[str, str]]:
        """The classes of the tree that derive directly from this one."""
        if self._children is None:
            self._children = {}
            for mod, summary in self.modules.items():
                for qual in summary["classes"]:
                    for base in self.bases(mod, qual):
                        if base[0] == "class":
                            self._children.setdefault((base[1], base[2]), []).append((mod, qual))
        return self._children.get((module, qualname), [])

    def overrides(self, module: str, qualname: str) -> set[str] | None:
        """The methods of this class that replace one of its ancestors' (``__init__`` aside);
        None when an ancestor cannot be read (it may define any of them)."""
        ancestors, unresolved = self.ancestors(module, qualname)
        if unresolved:
            return None
        inherited: set[str] = set()
        for ref in ancestors:
            info = self.class_info(ref[1], ref[2]) if ref[0] == "class" else None
            if info is None and not _is_builtin_base(ref):
                return None
            inherited.update(info["methods"] if info else ())
        own = self.class_info(module, qualname)
        return (set(own["methods"] if own else ()) - {"__init__"}) & inherited

    def is_callable(self, module: str, qualname: str) -> bool | None:
        """Do instances of this class have a ``__call__``? None when a base cannot be read."""
        if self.ancestors(module, qualname)[1]:
            return None
        for ref in [("class", module, qualname), *self.ancestors(module, qualname)[0]]:
            if ref[0] != "class":
                if not _is_builtin_base(ref):
                    return None
                continue
            if "__call__" in self.class_info(ref[1], ref[2])["methods"]:
                return True
        return False

    @functools.cached_property
    def entry_methods(self) -> frozenset[str]:
        """The methods a registry pass class declares abstract (``PassBase.call``,
        ``CustomGraphPass.__call__``): what a pass implements and its base's ``__call__`` runs,
        read from the bases' own source, not listed here."""
        names: set[str] = set()
        for name, (role, _, _) in self.vocab.bases.items():
            module, _, qualname = name.partition(":")
            info = self.class_info(module, qualname) if role == "pass_class" else None
            names.update((info or {}).get("abstract", ()))
        return frozenset(names)

    def is_concrete(self, module: str, qualname: str, called: bool = True) -> bool:
        """A usable pass: no abstract method left unimplemented, and its ``__call__`` (own or
        inherited) is not abstract. A family of passes that is not called (Inductor's group/batch
        fusions: ``match`` and ``fuse``) is concrete once its abstract methods are implemented.
        Bases we cannot read count as defining nothing, so a class whose contract we cannot see
        is concrete only if it defines ``__call__`` itself or below."""
        decided: dict[str, bool] = {}  # method name -> abstract?, first definer in the MRO wins
        declared_abstract = False
        chain = [("class", module, qualname), *self.ancestors(module, qualname)[0]]
        classes = [ref for ref in chain if ref[0] == "class"]
        formal = {m for ref in classes for m in self.class_info(ref[1], ref[2])["abstract"]}
        for ref in classes:
            klass = self.class_info(ref[1], ref[2])
            # raise NotImplementedError is abstract by convention where it is the entry point,
            # re-declares an abstract method, or is what subclasses override; anywhere else it
            # is a TODO of a concrete pass (executorch's InsertRequantize), not a contract.
            abstract = set(klass["abstract"]) | {
                m for m in klass.get("raises", ())
                if m == "__call__" or m in formal or self._overridden_below(ref[1], ref[2], m)}
            declared_abstract = declared_abstract or bool(abstract)
            for method in klass["methods"]:
                decided.setdefault(method, method in abstract)
            for name, (scope, _) in klass["attrs"].items():
                if not scope:  # a class attribute implements what a base declared abstract
                    decided.setdefault(name, False)
        if any(decided.values()):
            return False
        # ``called=False``: a class a registry of the tree keeps, whose runner calls the method
        # that rewrites (MQBench's quantizer ``prepare``), not ``__call__``
        return "__call__" in decided or declared_abstract or not called

    def _overridden_below(self, module: str, qualname: str, method: str) -> bool:
        """Does a class of the tree deriving from this one define ``method`` (a method or a class
        attribute)?"""
        seen, todo = set(), list(self.subclasses(module, qualname))
        while todo and len(seen) < 4096:
            child = todo.pop()
            if child in seen:
                continue
            seen.add(child)
            info = self.class_info(*child)
            if method in info["methods"] or info["attrs"].get(method, ["x"])[0] == "":
                return True
            todo.extend(self.subclasses(*child))
        return False

    # ---- identities ----------------------------------------------------------------------
    def identity(self, module: str, qualname: str, torch_name: str | None = None) -> str:
        """Torch's own name inside torch, ``module:qualname`` everywhere else. A class that a
        class of its name replaced (``Pass@12``, _Extractor._earlier_bases) has its own name."""
        if "@" in qualname:
            qualname = _REDEFINED.sub("", qualname)
        return pass_identity(real_module(module), qualname, torch_name)

    def ref_identity(self, ref: Ref) -> str | None:
        if ref[0] in ("class", "func", "instance"):
            return self.identity(ref[1], ref[2])
        if ref[0] == "ext" and ref[2]:
            return self.identity(*split_external(ref[1], ref[2]))
        return None

    # ---- values --------------------------------------------------------------------------
    def values(self, module: str, scope: str, expr: list, klass: str = "",
               binds: dict | None = None, depth: int = 0, self_class: str = "") -> list:
        """The definitions an expression may evaluate to, for what flows into a hook:
        a list of Refs (instances as ("instance", module, class)), strings ("str", s), and
        ``Unresolved`` for anything we cannot follow."""
        if depth > 16:
            return [Unresolved(_text(expr))]
        d = depth + 1
        kind = expr[0]
        if kind == "none":
            return []
        if kind == "s":
            return [("str", expr[1])]
        if kind == "g":
            if len(expr) > 2:  # f"pass_pattern_{i}", i an index over a list display
                named = self.key_strings(module, scope, ["cat", expr[2]], klass, d)
                if named and not any(isinstance(n, Unresolved) for n in named):
                    return named
            return [("glob", expr[1])]
        if kind in ("l", "d"):  # every element of a list / tuple / set; every value of a dict
            elements = expr[1] if kind == "l" else [value for _, value in expr[1]]
            return [v for element in elements
                    for v in self.values(module, scope, element, klass, binds, d)]
        if kind == "k":
            inner = dict(binds or {})
            for name, iterable in expr[2]:
                inner[name] = iterable
            return self.values(module, scope, expr[1], klass, inner, d)
        if kind == "lambda":
            prefix = f"{expr[1]}.<locals>." if expr[1] else ""
            return [("func", module, f"{prefix}<lambda>")]
        if klass and _names_own_class(expr):  # self.__class__.__name__: the instance's class
            return [("str", (self_class or klass).rsplit(".", 1)[-1])]
        if kind == "n":
            head = expr[1].split(".", 1)[0]
            if binds and head in binds and "." not in expr[1]:
                return self._elements(module, scope, binds[head], klass, binds, d)
            ref = self.resolve_name(module, scope, expr[1], klass)
            return self._ref_values(ref, expr, d, self_class or klass)
        if kind == "call":
            callee = expr[1]
            if _is_partial(expr):
                return self.values(module, scope, expr[2][0], klass, binds, d)
            ref = self.expr_ref(module, scope, callee, klass) if callee[0] in ("n", "sub") \
                else ("unknown", _text(callee))
            if ref[0] == "class":
                return [("instance", ref[1], ref[2])]
            if ref[0] == "ext" and ref[2]:
                return [("instance", ref[1], ref[2])]  # outside the tree: named as imported
            if ref[0] == "func":  # a factory: what it returns
                made = self._returned_values(ref[1], ref[2], d, (module, scope, expr, klass, binds))
                if made:
                    return made
            return [Unresolved(_text(expr))]
        if kind == "sub":  # PASSES["name"], PASSES a dict literal
            key = expr[2]
            if expr[1][0] == "n":
                ref = self.resolve_name(module, scope, expr[1][1], klass)
                if ref[0] == "value" and ref[3][0] == "d" and key[0] == "s":
                    for k, v in ref[3][1]:
                        if k == key:
                            return self.values(ref[1], ref[2], v, _klass(ref), None, d)
                elif ref[0] == "value" and ref[3][0] == "d" and ref[3][1]:
                    # SOLVERS[config.solver]: a key known only at run time may pick any entry
                    # (each string it can be picks its own, when all of them can be read; a
                    # config key's default is only the value nobody set)
                    setting = key[0] == "n" and "." in key[1] and self.config_module(
                        module, scope, ["n", key[1].rpartition(".")[0]], klass) is not None
                    keys = [] if setting else self.strings(module, scope, key, klass, d)
                    entries = [v for k, v in ref[3][1]
                               if not keys or any(isinstance(n, Unresolved) or n[0] != "str"
                                                  for n in keys)
                               or (k[0] == "s" and ("str", k[1]) in keys)]
                    if entries:
                        return [found for v in entries
                                for found in self.values(ref[1], ref[2], v, _klass(ref), None, d)]
            return [Unresolved(_text(expr))]
        return [Unresolved(_text(expr), data=kind == "?" and expr[1] in DATA_EXPRESSIONS)]

    def _display(self, module: str, scope: str, expr: list, klass: str) -> list | None:
        """The elements of a list / tuple display ``expr`` is, or names; None otherwise."""
        for _ in range(8):
            if expr[0] == "l":
                return expr[1]
            if expr[0] != "n":
                return None
            ref = self.resolve_name(module, scope, expr[1], klass)
            if ref[0] != "value":
                return None
            module, scope, expr, klass = ref[1], ref[2], ref[3], _klass(ref)
        return None

    def _returned_values(self, module: str, qualname: str, depth: int,
                         call: tuple | None = None) -> list:
        """What a function returns; a parameter it hands back is the argument ``call`` (the
        caller's module, scope, call expression, class, binds) gives it, when it gives one."""
        summary = self.module(module)
        returns = (summary or {}).get("returns", {}).get(qualname)
        if not returns:
            return []
        owner = qualname.rpartition(".")[0]
        klass = owner if owner in summary["classes"] else ""
        values: list = []
        for expr in returns:
            if expr[0] == "param":
                argument = _call_argument(call[2], expr[1] - (1 if klass else 0), expr[2]) \
                    if call is not None else None
                values += [Unresolved(expr[2])] if argument is None else self.values(
                    call[0], call[1], argument, call[3], call[4], depth + 1)
                continue
            values += self.values(module, qualname, expr, klass, None, depth + 1)
        return values

    def _ref_values(self, ref: Ref, expr: list, depth: int, self_class: str = "") -> list:
        kind = ref[0]
        if kind in ("class", "func", "instance"):
            return [ref]
        if kind == "value":
            binding = ref[3]
            if binding[0] == "iter":
                return self._elements(ref[1], ref[2], binding[1], _klass(ref), None, depth)
            if binding[0] == "index":  # enumerate(x): 0 .. len(x) - 1 when x is a list display
                shown = self._display(ref[1], ref[2], binding[1], _klass(ref))
                if shown is None:
                    return [Unresolved(_text(expr))]
                return [("str", str(n)) for n in range(min(len(shown), 64))]
            # self.x defined in a base: `self` there is still the instance of self_class
            inherited = self_class if _klass(ref) and expr[0] == "n" \
                and expr[1].split(".", 1)[0] in ("self", "cls") else ""
            return self.values(ref[1], ref[2], binding, _klass(ref), None, depth, inherited)
        if kind == "ext" and ref[2]:
            return [ref]
        return [Unresolved(_text(expr))]

    def _elements(self, module: str, scope: str, iterable: list, klass: str, binds: dict | None,
                  depth: int) -> list:
        """The values a loop variable takes: the elements of a constant list or dict keys."""
        if iterable[0] == "call" and iterable[1][0] == "n" and not iterable[2] \
                and iterable[1][1].rsplit(".", 1)[-1] in ("items", "keys", "values"):
            return [Unresolved(_text(iterable))]
        values = self.values(module, scope, iterable, klass, binds, depth)
        return values or [Unresolved(_text(iterable))]

    # ---- stores into config modules ------------------------------------------------------
    def config_module(self, module: str, scope: str, expr: list, klass: str = "") -> str | None:
        """The Inductor / functorch config module a receiver is (``inductor_config``,
        ``torch._inductor.config``, ``config`` imported relatively inside torch), or None."""
        if expr[0] != "n":
            return None
        ref = self._settle(self.resolve_name(module, scope, expr[1], klass))
        if ref[0] == "module":
            dotted = ref[1]
        elif ref[0] == "ext":
            dotted = f"{ref[1]}.{ref[2]}" if ref[2] else ref[1]
        elif ref[0] == "unknown":  # followed through modules to one that is not read
            dotted = ref[1]
        else:
            return None
        if dotted not in self.vocab.config_modules and "." in expr[1]:
            # torch._functorch.config with `import torch`: the head is a module, the rest a
            # path below it that no module read here defines
            head, rest = expr[1].split(".", 1)
            ref = self._resolve_head(module, scope, head, klass, 0)
            if ref[0] in ("module", "ext") and (ref[0] == "module" or not ref[2]):
                dotted = f"{ref[1]}.{rest}"
        return dotted if dotted in self.vocab.config_modules else None

    def key_strings(self, module: str, scope: str, key: list, klass: str = "", depth: int = 0) -> list:
        """The strings a store's key may be: [("str", s) | Unresolved]. ``["cat", parts]``
        (a key built from pieces) combines what each piece may be (a loop variable over a
        constant tuple: each element); ``["dict", d]`` (``patch(d)``) the keys of the dict
        literal ``d`` names; anything else what ``strings`` finds."""
        if key[0] == "cat":
            combos = [""]
            for part in key[1]:
                options = [("str", part[1])] if part[0] == "s" \
                    else self.strings(module, scope, part, klass, depth)
                if not options or any(isinstance(o, Unresolved) or o[0] != "str"
                                      for o in options):
                    return [Unresolved(_text(part))]
                combos = [c + o[1] for c in combos for o in options][:64]
            return [("str", c) for c in combos]
        if key[0] == "dict":
            given = key[1]
            ref = self._settle(self.resolve_name(module, scope, given[1], klass)) \
                if given[0] == "n" else None
            if ref is None or ref[0] != "value" or ref[3][0] != "d":
                return [Unresolved(f"**{_text(given)}")]
            found = []
            for entry_key, _ in ref[3][1]:
                found += self.key_strings(ref[1], ref[2], entry_key, _klass(ref), depth)
            return found
        return self.strings(module, scope, key, klass, depth)

    def strings(self, module: str, scope: str, expr: list, klass: str = "", depth: int = 0) -> list:
        """The strings a name argument may be: [("str", s) | ("glob", p) | Unresolved]; an
        empty list means None (no name). ``depth``: how deep the caller already is (a value
        built from itself, ``msg = f"{msg} ..."``, must end in Unresolved, not recurse)."""
        out = []
        for value in self.values(module, scope, expr, klass, depth=depth):
            if isinstance(value, Unresolved) or value[0] in ("str", "glob"):
                out.append(value)
            else:
                out.append(Unresolved(_text(expr)))
        return out


def real_module(module: str) -> str:
    """The module name of an index entry (``conftest<2>``, a second file named so: ``conftest``)."""
    return module.split("<", 1)[0]


def split_external(module: str, qualname: str) -> tuple[str, str]:
    """``("vllm", "compilation.fusion.FusionPass")`` (reached through ``import vllm``) ->
    ``("vllm.compilation.fusion", "FusionPass")``: lower-case leading parts are modules."""
    parts = qualname.split(".")
    while len(parts) > 1 and parts[0][:1].islower() or len(parts) > 1 and parts[0].startswith("_"):
        module = f"{module}.{parts.pop(0)}" if module else parts.pop(0)
    return module, ".".join(parts)


def _names_own_class(expr: list) -> bool:
    """``self.__class__.__name__``, ``cls.__name__``, ``type(self).__name__``."""
    if expr[0] == "n":
        return expr[1] in ("self.__class__.__name__", "cls.__name__")
    return expr[0] == "a" and expr[2] == "__name__" and expr[1][0] == "call" \
        and expr[1][1] == ["n", "type"] and expr[1][2] == [["n", "self"]]


def _is_partial(expr: list) -> bool:
    return expr[0] == "call" and expr[1][0] == "n" and bool(expr[2]) \
        and expr[1][1].rsplit(".", 1)[-1] == "partial"


def _klass(ref: Ref) -> str:
    return ref[4] if len(ref) > 4 else ""


def _call_argument(call: list, position: int, keyword: str) -> list | None:
    """The argument a call expression (``["call", callee, args, kwargs]``) gives a parameter,
    by its position or its keyword; None when it gives none (a default, a ``*args``)."""
    args, kwargs = (call[2], call[3]) if len(call) > 3 else ([], {})
    if isinstance(kwargs, dict) and keyword in kwargs:
        return kwargs[keyword]
    if isinstance(kwargs, list):
        for pair in kwargs:
            if isinstance(pair, list) and len(pair) == 2 and pair[0] == keyword:
                return pair[1]
    if 0 <= position < len(args) and ["?", "*"] not in args[:position + 1]:
        return args[position]  # no *args before it: the position is the parameter's
    return None


def _enclosing_scopes(scope: str, summary: dict) -> list[str]:
    """``f.<locals>.g`` -> [f.<locals>.g, f, ""]; a method ``C.m`` -> [C.m, ""]."""
    scopes = []
    while scope:
        scopes.append(scope)
        scope = scope.rsplit(".<locals>.", 1)[0] if ".<locals>." in scope else ""
    scopes.append("")
    return scopes


_BUILTIN_BASES = {"object", "Exception", "BaseException", "ABC", "Protocol", "Generic", "Enum",
                  "IntEnum", "NamedTuple", "TypedDict", "type", "dict", "list", "tuple", "str",
                  "int", "float", "set", "frozenset"}


def _is_builtin_name(text: str) -> bool:
    return text.rsplit(".", 1)[-1] in _BUILTIN_BASES or not text


def _is_builtin_base(ref: Ref) -> bool:
    return ref[1] in ("abc", "typing", "enum", "builtins", "collections", "dataclasses") \
        or ref[2] in _BUILTIN_BASES


def _text(expr: Any) -> str:
    """A readable rendering of a summary expression (for messages)."""
    kind = expr[0]
    if kind == "n":
        return expr[1]
    if kind == "s":
        return repr(expr[1])
    if kind == "g":
        return f"f{expr[1]!r}"
    if kind == "call":
        return f"{_text(expr[1])}(...)"
    if kind == "a":
        return f"{_text(expr[1])}.{expr[2]}"
    if kind == "sub":
        return f"{_text(expr[1])}[{_text(expr[2])}]"
    if kind == "l":
        return "[...]"
    if kind == "d":
        return "{...}"
    if kind == "lambda":
        return "lambda"
    if kind == "cat":
        return " + ".join(_text(part) for part in expr[1])
    if kind == "dict":
        return f"**{_text(expr[1])}"
    if kind == "none":
        return "None"
    if kind == "c":
        return repr(expr[1])
    return f"<{expr[1] if len(expr) > 1 else kind}>"


text_of = _text


def _installed_source(module: str) -> Path | None:
    """The source file of an installed module, found without importing anything."""
    top, _, rest = module.partition(".")
    try:
        spec = importlib.util.find_spec(top)  # a top-level name: finding never imports
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(list(spec.submodule_search_locations)[0])
    relative = Path(*rest.split(".")) if rest else Path()
    for candidate in (root / relative / "__init__.py", root / relative.with_suffix(".py")
                      if rest else root / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@functools.lru_cache(maxsize=256)
def is_config_module(dotted: str) -> bool:
    """Is the installed module ``dotted`` (or the module a dotted path starts with) one of
    torch's config modules, by what it does: it calls ``install_config_module`` on itself
    (``torch.fx.experimental._config``, ``torch._dynamo.config``, ...). Read, never imported."""
    parts = dotted.split(".")
    for end in range(len(parts), 1, -1):
        path = _installed_source(".".join(parts[:end]))
        if path is not None:
            try:
                return b"install_config_module(" in path.read_bytes()[:2_000_000]
            except OSError:
                return False
    return False


_EXTERNAL: dict[tuple, dict | None] = {}  # installed base modules, summarized once per process


def _package_roots(paths: Iterable[tuple[str, str]]) -> dict[str, set[str]]:
    """Top-level package -> the directories that are it, from the linted files' module names:
    ``/r/vllm/compilation/x.py`` named ``vllm.compilation.x``: ``/r/vllm``;
    ``/r/backends/x.py`` named ``executorch.backends.x`` (``checkout_packages``): ``/r``."""
    roots: dict[str, set[str]] = {}
    for module, path in paths:
        parts = real_module(module).split(".")
        if len(parts) < 2 and os.path.basename(path) != "__init__.py":
            continue  # a top-level script: no package to find siblings in
        directory = _top_directory(path, module)
        if os.path.isdir(directory):
            roots.setdefault(parts[0], set()).add(directory)
    return roots


def _external_summary(path: str, module: str, package: bool, vocab: Vocabulary,
                      light: bool = True) -> dict | None:
    try:
        key = (path, Path(path).stat().st_mtime_ns, module, package, vocab.key(), light)
    except OSError:
        return None
    if key not in _EXTERNAL:
        _EXTERNAL[key] = _read_external(path, module, package, vocab, light)
    return _EXTERNAL[key]


_IN_PROCESS_BYTES = 256 << 10  # a larger module read from outside the tree is read in a worker


def _read_external(path: str, module: str, package: bool, vocab: Vocabulary,
                   light: bool) -> dict | None:
    """A module outside the linted paths is as untrusted as the linted files and gets the same
    limits (lint_rules.isolation): only a regular file, within the size limit; a large one is
    summarized in a worker under the time and memory budget. None when it cannot be read: the
    names resolved through it stay unresolved, and are reported so."""
    from lint_rules import isolation
    from lint_rules.findings import FileResult

    limits = isolation.limits_in_force()
    try:
        data = isolation.read_regular(path, limits.max_bytes)
    except isolation.Unreadable:
        return None

    def read(_path: str, data: bytes, _version: str | None) -> "FileResult":
        # Light for installed modules: never reported on, only resolved through. A sibling of
        # the linted files is read whole: its constructors may name the tree's passes.
        try:
            return FileResult([], summary=summarize(data, module, package, vocab, light=light))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return FileResult([])

    if len(data) <= _IN_PROCESS_BYTES:
        return read(path, data, None).summary
    (result,) = isolation.run_isolated([(path, data, None)], read, jobs=1, limits=limits)
    return result.summary


__all__ = ["Index", "Unresolved", "Vocabulary", "module_name", "checkout_packages",
           "checkout_module", "summarize", "qualified_name", "text_of"]
