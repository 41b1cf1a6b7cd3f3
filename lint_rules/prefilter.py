"""Which files need a parse: a conservative lexical prefilter, decided from the words of a file.

Parsing is most of the cost of a cold run (ast.parse alone is ~2 ms a file, 6 s of CPU on a
3,000-file tree), and almost every file of a third-party tree holds nothing any rule looks at.
A file is parsed (summarized for the whole-tree index, and given to the file rules it triggers)
only when one of these says it may matter; every other file is still linted (read, decoded,
given its byte-level facts for LG003) and stands in the index as a *stub*:

1. Seeds, from the registry and the rules only, never a hand-kept list: the file holds, as a
   word, the simple name of a ``[[base]]``, a naming keyword (``pass_name``), a custom-hook key
   or an index rule's trigger; or (outside torch) both ``__call__`` and a word of the index's
   FX-graph evidence (``g.nodes``, ``: fx.Graph``); or a file rule wants it; or it *is* a
   pipeline root's module; or it cannot be decoded (the analysis reports it, LG900).
2. Closure: a name a parsed file binds to an alias of a trigger word (a class whose bases name
   one, an import of one, ``X = a.b.Trigger``, ``partial(Trigger)``, a class attribute) becomes
   a trigger word, as does a class whose ``__call__`` takes an FX graph; files that hold one
   are parsed next. So a pass class reached through the project's own bases, aliases and
   re-exports (``class FooPass(VllmInductorPass)`` three files away from ``CustomGraphPass``) is
   parsed however long the chain, and instances, calls and literals never widen it.
3. Demand: a stub answers the index's questions (``is X a class of yours? an import? a
   star-import?``) with "no", and records the question when the answer could have been "yes":
   when X is a word of that file, or the file has a ``from ... import *``. A recorded stub is
   parsed and the index is built again, until no question is recorded.

Why that is exact: a site (an observer or pattern-pass call, a hook install) is only ever
recorded in a file that holds a seed word (the index's own light test); a pass class is a
chain of bindings from its base, each written in a file that mentions the next name (closure);
and every other answer the rules get about a stub is one the parsed file would have given
(demand). ``tests/test_lint_speed.py`` checks that findings are identical with the prefilter
on and off, on every fixture tree, on torch's pass trees and on a third-party sample.

Known differences, documented rather than hidden, all about files that hold no trigger word
(so cannot hold a pass any rule finds, nor be one a parsed file resolves through):

* such a file is not parsed, so a syntax error in it is not reported as LG900, unless
  ``lite_guard check --check-syntax`` (``lint_paths(check_syntax=True)``): then every such file
  also goes through CPython's parser (``compiles``, in batched workers) and one it refuses is
  analysed, exactly as with the prefilter off. That parse is most of a cold run's CPU on a
  third-party tree (~1.4 ms a file: 4 s of 7 on 3,000 files), hence opt-in;
* a hook key spelled only through escapes, or split into literals at no ``_`` between two of
  its parts (``"post_gr" + "ad_custom_post_pass"``) outside a store into a config module, is not
  seen (the index's own per-function text test shares that limit); split at a ``_``
  (``"post_grad_" "custom_post_pass"``, ``f"{stage}_custom_post_pass"``) it is, and so is any
  ``setattr`` / ``__dict__`` / ``patch`` store into a config module whatever its key;
* code nested so deep that the index's summary would recurse past its limit is not reported
  as LG900 "nested too deeply".

``LITE_GUARD_NO_PREFILTER=1`` parses every file (the equivalence tests, and debugging).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Iterable

from lite_guard.identity import is_torch_module
from lite_guard.env_switch import switch

ENV = "LITE_GUARD_NO_PREFILTER"

# A "word": a run of ASCII letters, digits and '_' (bytes >= 0x80 count as letters, so a UTF-8
# identifier stays one word). Translating every other byte to a space and splitting is C speed.
_WORD_BYTES = set(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") | set(range(128, 256))
_TO_WORDS = bytes(c if c in _WORD_BYTES else 0x20 for c in range(256))
_STAR = re.compile(rb"\bimport[ \t\f\\\r\n]*\*")
_OPTIONS_DICT = re.compile(rb"\boptions\s*=\s*\{")  # lint_rules.index._OPTIONS_DICT, in bytes
_UTF8 = {"utf-8", "utf8", "utf_8", "u8"}


def enabled() -> bool:
    return not switch(ENV, False)


def words_of(data: bytes) -> frozenset[bytes]:
    """The words of a file as Python reads its identifiers: the raw words, and for a file that
    is not plain ASCII UTF-8, also the words of its decoded text in NFKC form (Python folds
    ``ＣustomGraphPass`` to ``CustomGraphPass``; a ``coding:`` cookie can hide any spelling)."""
    words = frozenset(data.translate(_TO_WORDS).split())
    if _cookie(data):
        # Not decoded in this process: a codec can be slow on purpose (punycode is quadratic:
        # a 2 MB file, minutes). Such a file is always parsed, in a worker under the time
        # budget, and its words count as holding every name (Scan.holds).
        return words
    if not data.isascii():
        text = _decoded(data)
        if text is not None and not unicodedata.is_normalized("NFKC", text):
            folded = unicodedata.normalize("NFKC", text).encode("utf-8", "surrogatepass")
            words = words | frozenset(folded.translate(_TO_WORDS).split())
    return words


def pieces(name: str) -> list[bytes]:
    """``"custom_backend_passes_*"`` -> ``[b"custom_backend_passes_"]``: the words of a name."""
    return name.encode("utf-8", "surrogateescape").translate(_TO_WORDS).split()


def _cookie(data: bytes) -> str | None:
    """A PEP 263 coding cookie other than UTF-8."""
    from lint_rules.isolation import coding_cookie

    name = coding_cookie(data)
    return None if name is None or name.lower() in _UTF8 else name.lower()


def _decoded(data: bytes) -> str | None:
    from lint_rules.isolation import decode

    try:
        return decode(data)
    except (UnicodeDecodeError, LookupError, SyntaxError, ValueError):
        return None  # undecodable: the engine parses it, to report it as LG900


def compiles(path: str, data: bytes) -> bool:
    """Does Python's parser accept this source? Checked for every file that is not parsed, so
    a syntax error is reported wherever it is. ``symtable`` runs CPython's parser and its scope
    analysis without building Python objects for the tree: ~40% cheaper than ``ast.parse``.
    What it accepts, ``ast.parse`` accepts; what it refuses (a syntax error, or a scope error
    ``ast.parse`` would let through) goes to the analysis, which parses it and decides."""
    import symtable
    import warnings

    text = _decoded(data)
    if text is None:
        return False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning etc. are not ours to print
            symtable.symtable(text, path, "exec")
    except Exception:  # SyntaxError, RecursionError, MemoryError, ValueError (a NUL byte)...
        return False
    return True


def decodable(data: bytes) -> bool:
    return data.isascii() and not _cookie(data) or _decoded(data) is not None


@dataclass
class Scan:
    """What the prefilter knows of one file (its words are computed when first asked for)."""

    data: bytes
    _words: frozenset[bytes] | None = None
    _plain: bool | None = None
    _opaque: tuple | None = None

    @property
    def words(self) -> frozenset[bytes]:
        if self._words is None:
            self._words = words_of(self.data)
        return self._words

    @property
    def plain(self) -> bool:
        """Are the raw bytes' words exactly the words Python reads (no coding cookie, and
        ASCII or already NFKC)? Then a word absent as a substring is absent."""
        if self._plain is None:
            if _cookie(self.data):
                self._plain = False
            elif self.data.isascii():
                self._plain = True
            else:
                text = _decoded(self.data)
                self._plain = text is not None and unicodedata.is_normalized("NFKC", text)
        return self._plain

    @property
    def star(self) -> bool:
        return _STAR.search(self.data) is not None

    @property
    def opaque(self) -> bool:
        """A coding cookie other than UTF-8: its words are not known here (see ``words_of``)."""
        return self._cookie_name is not None

    @property
    def _cookie_name(self) -> str | None:
        if self._opaque is None:
            self._opaque = (_cookie(self.data),)
        return self._opaque[0]

    def holds_all(self, names: Iterable[bytes]) -> bool:
        if self.opaque:
            return True
        names = list(names)
        if self._words is None and self.plain and not all(name in self.data for name in names):
            return False  # one is not even a substring
        return all(name in self.words for name in names)

    def holds(self, names: Iterable[bytes]) -> bool:
        if self.opaque:
            return True
        names = names if isinstance(names, (set, frozenset)) else frozenset(names)
        if self._words is None and len(names) <= 64 and self.plain \
                and not any(name in self.data for name in names):
            return False  # not even a substring: no need to split the file into words
        return not self.words.isdisjoint(names)


class Prefilter:
    """The seed words of one registry, and the tests built on them."""

    def __init__(self, registry: Any, plan: Any) -> None:
        from lint_rules.rules import INDEX_RULES

        vocab = plan.vocab
        seeds = {name.rsplit(":", 1)[-1].rsplit(".", 1)[-1] for name in vocab.bases}
        seeds |= set(vocab.name_keywords) | set(vocab.hooks)
        # Every index rule's own trigger bytes, as words (LG001's are the names above: a site
        # is only recorded where one of them is written as a name, a keyword or a key).
        triggers = {t.decode("utf-8", "surrogateescape") for rule in INDEX_RULES
                    for t in rule.triggers(registry)}
        self.seeds = frozenset(w for name in seeds | triggers for w in pieces(name))
        self.root_modules = frozenset(root.partition(":")[0] for root in vocab.roots)
        self.plan = plan
        # LG001 also recognises a class by its effect: a ``__call__`` taking one FX graph,
        # annotated as one or used as one (``g.nodes``). The index's own vocabulary of that
        # evidence (registry [[base]] role = "graph_type" rows): a file needs both ``__call__``
        # and one of those words; none declared, any file defining ``__call__``.
        # Outside torch only, as LG001 (inside torch the pipeline roots say what runs).
        self.graph_words = frozenset(w for name in (*vocab.graph_names, *vocab.graph_members)
                                     for w in pieces(name)) or None
        # A module-level function taking an FX graph, handed on somewhere in the tree, is a
        # pass too (LG001): outside torch, a file that defines a function and names a graph
        # type (``gm: GraphModule``) is parsed; the files that hand it on are asked for.
        self.graph_type_words = frozenset(w for name in vocab.graph_names for w in pieces(name))
        # A call of a member that rewrites an FX graph (registry graph_mutation rows)
        self.mutator_words = frozenset(w.encode() for w in vocab.graph_mutators) or None
        # ... written as an attribute (the index's test, in bytes: led by "." it is searched
        # for at C speed, where testing each word as a substring first took longer)
        self.mutator_call = re.compile(rb"\.(?:" + b"|".join(
            map(re.escape, sorted(self.mutator_words))) + rb")") if self.mutator_words else None
        # ... or a store of a node attribute that rewires one (registry graph_store rows,
        # ``node.target = f``): the index's test adds a graph member it may walk (``.nodes``)
        self.store_call = re.compile(vocab.store_pattern.pattern.encode()) \
            if vocab.store_pattern is not None else None
        # ... and one handing a value to a pass or compiler argument (partition_fn=, backend=,
        # PassManager): the index's own test, Vocabulary.may_hand_arguments; such a file names
        # the callable (aot_autograd, compile, PassManager)
        # (and a registration in torch's lowering tables, or a keyword stored as a string key:
        # the index's test reads those too)
        self.argument_names = frozenset(w for name in (*vocab.argument_names, *vocab.lowering_names,
                                                       *vocab.argument_keywords) for w in pieces(name))
        # ... annotated so (``gm: torch.fx.GraphModule``, ``-> Graph``, a string annotation):
        # the index counts only an annotated first parameter (lint_rules.index._graph_function).
        self.graph_annotation = re.compile(
            rb"(?::|->)\s*['\"]?(?:[\w.]+\.)?(?:" + b"|".join(
                re.escape(n.encode()) for n in sorted(vocab.graph_names)) + rb")\b") \
            if vocab.graph_names else None
        # A store into a config module under a computed key, or a hook key split into literals,
        # holds no whole seed word: the index's own test (Vocabulary.may_store_dynamically),
        # in words. A file needs a store form and a config module's package word (or to be in
        # that package), or a piece of a split hook key.
        from lint_rules.index import STORE_WORDS

        # Bytes any such file holds (a plain ASCII/UTF-8 file: the text's own substrings; a
        # file with another coding is parsed anyway, Scan.opaque).
        self.fragment_runs = tuple(w.encode() for w in vocab.fragment_runs)
        self.fragments = frozenset(w.encode() for w in vocab.key_fragments)
        # every fragment holds one of its first two parts joined (the index tests these too)
        self.runs = tuple(w.encode() for w in vocab.fragment_pairs)
        self.store_words = tuple(w.encode() for w in sorted(STORE_WORDS) if w != "__setattr__")
        self.config_words = tuple(w.encode() for w in vocab.config_words)
        self.config_packages = tuple(vocab.config_packages)

    def seeded(self, path: str, module: str, scan: Scan) -> bool:
        """Must this file be parsed whatever the rest of the tree holds?"""
        return (module in self.root_modules or scan.holds(self.seeds)
                or self._may_store_dynamically(module, scan)
                or (scan.holds((b"__call__",)) and not is_torch_module(module)
                    and (self.graph_words is None or scan.holds(self.graph_words)))
                or (not is_torch_module(module) and self._outside_torch_seed(scan))
                or (not is_torch_module(module) and self._may_monkeypatch(scan))
                or (not is_torch_module(module) and self._may_rewrite_graph(scan))
                or (not is_torch_module(module) and self._may_hand_arguments(scan))
                or bool(self.plan.file_rules_for(path, scan.data)) or scan.opaque
                or not decodable(scan.data))

    def _outside_torch_seed(self, scan: Scan) -> bool:
        """A function with an FX-graph annotation (LG001's graph functions), or an
        ``options={KEY: p}`` (a store into Inductor's config): the index's own tests."""
        data = scan.data
        if self.graph_annotation is not None and scan.holds(self.graph_type_words) \
                and scan.holds((b"def",)) \
                and (not scan.plain or self.graph_annotation.search(data) is not None):
            return True
        return b"options" in data and _OPTIONS_DICT.search(data) is not None

    def _may_monkeypatch(self, scan: Scan) -> bool:
        """The index's own test (Vocabulary.may_monkeypatch): an assignment to an attribute
        of a name imported from torch, outside torch."""
        if b"torch" not in scan.data or b"import" not in scan.data:
            return False
        text = _decoded(scan.data)
        return text is None or self.plan.vocab.may_monkeypatch(text)

    def _may_rewrite_graph(self, scan: Scan) -> bool:
        """The index's own test (Vocabulary.may_rewrite_graph): outside torch, a file calling a
        member that rewrites an FX graph (registry ``graph_mutation`` rows) is parsed, so a
        rewrite a compiler calls, or one installed over another project's code, is seen."""
        if scan.opaque:
            return True  # parsed anyway (its words are not known here)
        if (self.mutator_call is None or self.mutator_call.search(scan.data) is None) and (
                self.store_call is None or self.store_call.search(scan.data) is None):
            return False
        text = _decoded(scan.data)
        return text is None or self.plan.vocab.may_rewrite_graph(text)

    def _may_hand_arguments(self, scan: Scan) -> bool:
        """The index's own test (Vocabulary.may_hand_arguments): outside torch, a file naming a
        callable with a pass or compiler argument, and handing it a value (by position, by its
        keyword, or by decorating a def), is parsed. A file that only holds the word ``backend``
        or ``passes`` is not (most of transformers)."""
        if scan.opaque:
            return True  # parsed anyway (its words are not known here)
        if not any(name in scan.data for name in self.argument_names):
            return False  # the index's test looks for these in the text first (not as words)
        text = _decoded(scan.data)
        return text is None or self.plan.vocab.may_hand_arguments(text)

    def _may_store_dynamically(self, module: str, scan: Scan) -> bool:
        """The index's own test (Vocabulary.may_store_dynamically) on the file's text, so the
        two agree on which files are read whole. Its necessary conditions first, as bytes: a
        piece of a split hook key, or a config module's package word (or being in that package)
        and a store form's name; only a file passing them is decoded."""
        data = scan.data
        fragment = any(part in data for part in self.fragment_runs) \
            and any(run in data for run in self.runs) \
            and (not (scan.plain and data.isascii()) or not scan.words.isdisjoint(self.fragments))
        if not fragment:
            if not (any(word in data for word in self.config_words) or any(
                    module == p or module.startswith(p + ".") for p in self.config_packages)):
                return False
            if not any(word in data for word in self.store_words):
                return False
        text = _decoded(data)
        return text is None or self.plan.vocab.may_store_dynamically(text, module)

    def must_parse(self, path: str, module: str, data: bytes, check_syntax: bool = True) -> bool:
        """Seeded, or (``check_syntax``) Python cannot parse it: then the analysis parses it,
        and reports why it cannot be checked (LG900) exactly as with the prefilter off."""
        return self.seeded(path, module, Scan(data)) or (check_syntax and not compiles(path, data))

    def facts(self, path: str, scan: Scan) -> Any:
        """The facts of a file that is not parsed: its config module (by path). Its def/class
        names and string literals are looked for only when LG003 asks about a name it holds
        (``LazyNames``): LG003 only ever asks about registry names."""
        from lint_rules.findings import FileFacts, config_module_of

        facts = FileFacts()
        config_module = config_module_of(path)
        if config_module:
            facts.config_modules.append(config_module)
        return facts


# ---- closure: names that lead to a trigger ---------------------------------------------------

def _aliased(expr: Any) -> list[str]:
    """The names an expression may alias, the way the index follows a binding to a class:
    a name or attribute (its last part: ``a.b.Base`` names ``Base``), ``functools.partial(X)``,
    and, should the index ever follow them, each name of ``A if c else B`` / ``A or B``.
    Instances, calls and literals alias nothing (no class chain runs through them)."""
    if not isinstance(expr, list) or not expr:
        return []
    kind = expr[0]
    if kind == "n" and len(expr) > 1 and isinstance(expr[1], str):
        return [expr[1].rsplit(".", 1)[-1]]
    if kind == "sub" and len(expr) > 1:  # Generic[T], Base[int]: the subscripted class
        return _aliased(expr[1])
    if kind == "call" and len(expr) > 2 and expr[1][:1] == ["n"] \
            and str(expr[1][1]).endswith("partial") and expr[2]:
        return _aliased(expr[2][0])
    if kind == "l" and len(expr) > 1 and isinstance(expr[1], list):
        return [name for element in expr[1] if isinstance(element, list) and element[:1] == ["n"]
                for name in _aliased(element)]
    if kind == "import" and len(expr) > 1 and isinstance(expr[1], str):
        return _imported(expr[1])
    if kind == "s" and len(expr) > 1 and isinstance(expr[1], str) and expr[1].isidentifier():
        # PASS_KEY = "post_grad_custom_post_pass": a file importing PASS_KEY may install a
        # hook with it (the index follows the constant across modules; RECALL3P, surgical).
        return [expr[1]]
    return []


def _imported(target: str) -> list[str]:
    """``"pkg.mod:Name"`` names ``Name``; ``"pkg.mod"`` (a module) names no class."""
    return [target.split(":", 1)[1].rsplit(".", 1)[-1]] if ":" in target else []


CALLABLE = b"\0graph_call"  # a trigger no file holds: "its __call__ takes a graph" (bindings)


def bindings(summary: dict) -> list[tuple[set[bytes], set[bytes]]]:
    """What a parsed file binds that a class chain can run through, as (the words of the name
    bound, the words of the names it aliases): its classes (by their bases), imports (and
    alternative imports), and variables and class attributes that alias a name; a class whose
    ``__call__`` takes an FX graph mentions ``CALLABLE``. A name whose definition aliases a
    trigger word becomes one (``lint_rules.engine`` closes over this, ``CALLABLE`` a trigger)."""
    found = []

    def add(name: str, aliases: list[str]) -> None:
        words = {w for alias in aliases for w in pieces(alias)}
        if words:
            found.append((set(pieces(name.rsplit(".", 1)[-1])), words))

    for qualname, klass in summary.get("classes", {}).items():
        add(qualname, [name for base in klass.get("bases", []) for name in _aliased(base)])
        if klass.get("graph_call") or any(
                entry[2] and entry[3] for entry in (klass.get("graph_effects") or {}).values()):
            # Its __call__ takes an FX graph (the index's evidence): its subclasses inherit the
            # __call__ that makes them passes by effect. Or a method of it rewrites an FX graph:
            # a file naming it may run it on one (a runner's ``for t in self.transforms``).
            found.append((set(pieces(qualname.rsplit(".", 1)[-1])), {CALLABLE}))
        for name, value in klass.get("attrs", {}).items():
            if isinstance(value, list) and len(value) == 2:
                add(name, _aliased(value[1]))
    for local, target in summary.get("imports", {}).items():
        add(local, _imported(target))
    for local, targets in summary.get("alternatives", {}).items():
        add(local, [name for target in targets for name in _imported(target)])
    for scope in summary.get("assigns", {}).values():
        for name, value in scope.items():
            add(name, _aliased(value))
    return found


# ---- stubs: files not parsed, standing in the index -------------------------------------------

@dataclass
class Demand:
    """Stubs the index asked a question that their parse might have answered differently."""

    files: set[int] = field(default_factory=set)


class _Probe(dict):
    """An empty mapping of a stub that records keyed questions about its file's words."""

    __slots__ = ("_stub", "_nested")

    def __init__(self, stub: "_StubFile", nested: bool = False) -> None:
        super().__init__()
        self._stub, self._nested = stub, nested

    def _ask(self, key: Any) -> None:
        if isinstance(key, str):
            self._stub.asked(key)

    def __contains__(self, key: object) -> bool:
        self._ask(key)
        return False

    def ask_words(self, words: frozenset[bytes]) -> None:
        """Ask about many identifiers at once (each one whole word): the file is marked when
        it holds any of them. One set test against the file's words (computed once a run)."""
        stub = self._stub
        if stub.number in stub.demand.files:
            return
        scan = stub.scan  # a substring is a superset of the word: at worst one parse more
        if (any(w in scan.data for w in words) if scan.plain else not words.isdisjoint(scan.words)):
            stub.demand.files.add(stub.number)

    def __getitem__(self, key: Any) -> Any:
        self._ask(key)
        raise KeyError(key)

    def get(self, key: Any, default: Any = None) -> Any:
        if self._nested:  # assigns[scope] -> the names bound in that scope
            return _Probe(self._stub)
        self._ask(key)
        return default


class _StarProbe(list):
    """A stub's star imports: iterating them is asking about every name."""

    __slots__ = ("_stub",)

    def __init__(self, stub: "_StubFile") -> None:
        super().__init__()
        self._stub = stub

    def __iter__(self):
        if self._stub.scan.star:
            self._stub.demand.files.add(self._stub.number)
        return super().__iter__()


@dataclass
class _StubFile:
    number: int
    scan: Scan
    demand: Demand

    def asked(self, key: str) -> None:
        if self.number in self.demand.files:
            return
        parts = {w for part in key.split(".") for w in pieces(part)}
        if not parts.isdisjoint(self.scan.words):
            self.demand.files.add(self.number)


def stub_summary(number: int, module: str, package: bool, scan: Scan, demand: Demand) -> dict:
    """A summary that binds nothing, for a file that is not parsed; questions the parse might
    have answered otherwise mark file ``number`` in ``demand``."""
    stub = _StubFile(number, scan, demand)
    names = _Probe(stub)  # classes, imports, calls, returns, alternatives: all keyed by names
    return _Stub(stub, {"module": module, "package": package, "imports": names,
                        "stars": _StarProbe(stub), "classes": names,
                        "assigns": _Probe(stub, nested=True), "sites": [], "calls": names,
                        "returns": names, "alternatives": names, "suppress": {}})


class _Stub(dict):
    """A stub summary; a field the index reads that a stub does not list (one added to the
    summary since) is an empty probe too, never a KeyError."""

    __slots__ = ("_file",)

    def __init__(self, stub: _StubFile, fields: dict) -> None:
        super().__init__(fields)
        self._file = stub

    def __missing__(self, key: str) -> "_Probe":
        return _Probe(self._file)


# ---- facts of files not parsed, found when asked for -----------------------------------------

class LazyNames(set):
    """The names LG003 finds in the tree: those of parsed files, eagerly; those of files not
    parsed, when asked about, by extracting them (``extract``) from only the files that hold
    every word of the name asked. Exact, and free for names never asked about."""

    def __init__(self, eager: Iterable[str], skipped: list[Scan], extract: Any,
                 needs: Any = None) -> None:
        super().__init__(eager)
        self._skipped, self._extract, self._needs = skipped, extract, needs
        self._extracted: dict[int, set[str]] = {}

    def __contains__(self, name: object) -> bool:
        if super().__contains__(name):
            return True
        if not isinstance(name, str) or not self._skipped:
            return False
        words = pieces(name)
        for number, scan in enumerate(self._skipped):
            if scan.holds_all(words) and (
                    self._needs is None or self._needs(scan, name)):
                if number not in self._extracted:
                    self._extracted[number] = set(self._extract(scan))
                if name in self._extracted[number]:
                    self.add(name)
                    return True
        return False


def string_could_be(scan: Scan, name: str) -> bool:
    """A plain name is only ever found as a whole literal, "name" or 'name' (a glob, "x_*",
    through an f-string or a concatenation: always looked for)."""
    if "*" in name:
        return True
    raw = name.encode("utf-8", "surrogateescape")
    return b'"' + raw + b'"' in scan.data or b"'" + raw + b"'" in scan.data
