"""The lint's speed machinery changes nothing it reports: the prefilter (files proved irrelevant
are not parsed, lint_rules.prefilter) and the run record (a warm run answered from one
authenticated file, lint_rules.cache).

Every equivalence test lints with a registry that *recognises* passes but registers none (only
its hook entries, which name the hooks): every pass, pipeline step and config the rules
recognise is then a finding, so a file the prefilter wrongly skipped shows as a missing one.
"""

from __future__ import annotations

import copy
import os
import shutil
import sysconfig
from pathlib import Path

import pytest

from lint_rules import prefilter
from lint_rules.cache import Cache
from lint_rules.command import installed_torch_trees
from lint_rules.engine import lint_paths
from lite_guard.registry import Registry

FIXTURES = Path(__file__).parent / "lint_fixtures"
BASES, VOCABULARY = FIXTURES / "bases.toml", FIXTURES / "vocabulary.toml"
VOCAB = Registry.from_files([BASES, VOCABULARY])
CGP = "from torch._inductor.custom_graph_pass import CustomGraphPass\n"
CALL = "    def __call__(self, g):\n        return g\n    def uuid(self):\n        return None\n"


def recognising(registry: Registry) -> Registry:
    """``registry`` with no pass registered but those that name a hook (the hook vocabulary)."""
    kept = tuple(p for p in registry.passes if p.hook)
    trimmed = copy.copy(registry)  # the same registry otherwise (entries are shared)
    trimmed.passes, trimmed._by_name = kept, {p.name: p for p in kept}
    return trimmed


def lint_both(paths: list[Path], registry: Registry, monkeypatch, jobs: int = 1):
    """(findings with the prefilter off, findings with it on, the report with it on)."""
    monkeypatch.setenv(prefilter.ENV, "1")
    off = lint_paths(paths, registry, jobs=jobs)
    assert off.skipped == 0  # the switch really parses every file
    monkeypatch.delenv(prefilter.ENV)
    on = lint_paths(paths, registry, jobs=jobs)
    return [f.text() for f in off.findings], [f.text() for f in on.findings], on


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


# ---- the prefilter finds what a full parse finds -----------------------------------------------

TREES = sorted(p for p in FIXTURES.iterdir() if p.is_dir())


@pytest.mark.parametrize("tree", TREES, ids=[t.name for t in TREES])
def test_prefilter_finds_the_same_on_every_fixture_tree(tree, monkeypatch):
    shipped = recognising(Registry.load(include_project=False))
    own = Registry.from_files([BASES, VOCABULARY, *sorted(tree.glob("*.toml"))])
    for registry in (own, VOCAB, shipped):
        off, on, _ = lint_both([tree], registry, monkeypatch)
        assert on == off


@pytest.mark.slow
def test_prefilter_finds_the_same_on_torchs_pass_trees(monkeypatch):
    off, on, report = lint_both(installed_torch_trees(), recognising(
        Registry.load(include_project=False)), monkeypatch, jobs=2)
    assert on == off and len(off) > 100  # torch's passes and pipeline steps, all unregistered
    assert report.skipped > report.files // 2  # and most files were not parsed


@pytest.mark.slow
def test_prefilter_finds_the_same_on_a_third_party_sample(tmp_path, monkeypatch):
    """Every 10th .py file of transformers and timm as installed here (a ~300-file sample of
    the benchmark's tree), plus every __init__.py, so packages and re-exports stay whole."""
    site = Path(sysconfig.get_paths()["purelib"])
    copied = 0
    for package in ("transformers", "timm"):
        for n, path in enumerate(sorted((site / package).rglob("*.py"))):
            if n % 10 == 0 or path.name == "__init__.py":
                target = tmp_path / path.relative_to(site)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
                copied += 1
    if copied < 100:
        pytest.skip("transformers and timm are not installed here")
    off, on, report = lint_both([tmp_path], recognising(Registry.load(include_project=False)),
                                monkeypatch, jobs=2)
    assert on == off
    assert report.skipped > copied * 0.9


# ---- each way a file that matters is found -----------------------------------------------------

def test_a_pass_three_files_from_its_base_is_parsed_through_the_closure(tmp_path, monkeypatch):
    """base.py names CustomGraphPass; mid.py re-exports its class under another name; leaf.py
    subclasses that name: only the closure (names bound to trigger words) reaches leaf.py."""
    root = write(tmp_path / "proj", {
        "proj/__init__.py": "",
        "proj/base.py": CGP + "class Base(CustomGraphPass):\n    pass\n",
        "proj/mid.py": "from proj.base import Base as ProjectPass\n",
        "proj/leaf.py": "from proj.mid import ProjectPass\nclass Leaf(ProjectPass):\n" + CALL,
        "proj/unrelated.py": "class Other:\n    def f(self):\n        return 1\n",
    })
    off, on, report = lint_both([root], VOCAB, monkeypatch)
    assert on == off
    assert [line.split(" ", 3)[1:3] for line in on] == [["LG001", "graph"]]
    assert "proj.leaf:Leaf" in on[0]
    assert report.skipped == 2  # __init__.py and unrelated.py: nothing there to parse


def test_a_base_reexported_by_a_star_import_is_parsed_on_demand(tmp_path, monkeypatch):
    """pkg/__init__.py holds no trigger word (``from .impl import *``): the index asks it for
    ``Base`` while resolving leaf.py's base, and the stub records the question (a star
    import could answer it), so it is parsed and the chain resolves."""
    root = write(tmp_path / "proj", {
        "pkg/__init__.py": "from .impl import *\n",
        "pkg/impl.py": CGP + "class Base(CustomGraphPass):\n    pass\n",
        "leaf.py": "from pkg import Base\nclass Leaf(Base):\n" + CALL,
    })
    off, on, report = lint_both([root], VOCAB, monkeypatch)
    assert on == off
    assert len(on) == 1 and "'leaf:Leaf'" in on[0]
    assert report.skipped == 0  # __init__.py was parsed because the index asked


def test_an_nfkc_spelling_of_a_base_is_parsed(tmp_path, monkeypatch):
    """Python folds identifiers to NFKC: ``ＣustomGraphPass`` (a fullwidth C) is the same name,
    so the prefilter must read the file's words the way Python reads its names."""
    fullwidth = "\uff23ustomGraphPass"
    root = write(tmp_path / "proj", {
        "odd.py": CGP.replace("CustomGraphPass", fullwidth) + f"class Odd({fullwidth}):\n" + CALL,
    })
    off, on, _ = lint_both([root], VOCAB, monkeypatch)
    assert on == off and len(on) == 1 and "'odd:Odd'" in on[0]


def test_a_class_taking_a_graph_in_its_call_is_parsed_and_so_are_its_subclasses(tmp_path,
                                                                              monkeypatch):
    root = write(tmp_path / "proj", {
        "p/__init__.py": "",
        "p/manager.py": "class Manager:\n    def __call__(self, graph):\n"
                        "        graph.eliminate_dead_code()\n",
        "p/sub.py": "from p.manager import Manager\nclass Sub(Manager):\n    pass\n",
    })
    off, on, _ = lint_both([root], VOCAB, monkeypatch)
    assert on == off and [line.split("'")[1] for line in on] == ["p.manager:Manager", "p.sub:Sub"]


def test_a_file_handing_a_backend_is_parsed_and_one_only_saying_backend_is_not(tmp_path,
                                                                               monkeypatch):
    """A value reaches torch.compile's backend only as a keyword argument of a call naming it:
    use.py is parsed (its backend rewrites the graph: LG001); attn.py, with an attention
    'backend' attribute and parameter and an unrelated re.compile, is not (round 8 parsed and
    read whole every such file of transformers: the cold lint took three times as long)."""
    registry = recognising(Registry.load(include_project=False))
    root = write(tmp_path / "proj", {
        "use.py": "import torch\n\ndef rewrite(gm, example_inputs):\n"
                  "    gm.graph.eliminate_dead_code()\n    return gm\n\n"
                  "def build(model):\n    return torch.compile(model, backend=rewrite)\n",
        "attn.py": "import re\nNAME = re.compile(r'\\w+')\n\nclass Attention:\n"
                   "    def set(self, backend):\n        self.backend = backend\n"
                   "        self.passes = [backend]\n",
    })
    off, on, report = lint_both([root], registry, monkeypatch)
    assert on == off and len(on) == 1 and "'use:rewrite'" in on[0]
    assert report.skipped == 1  # attn.py


def test_a_syntax_error_in_a_file_holding_no_trigger_is_reported_with_check_syntax(tmp_path,
                                                                                   monkeypatch):
    root = write(tmp_path / "proj", {"broken.py": "def f(:\n    pass\n", "fine.py": "x = 1\n"})
    monkeypatch.setenv(prefilter.ENV, "1")
    off = [f.text() for f in lint_paths([root], VOCAB, jobs=1).findings]
    monkeypatch.delenv(prefilter.ENV)
    on = lint_paths([root], VOCAB, jobs=1, check_syntax=True)
    assert [f.text() for f in on.findings] == off and len(off) == 1 and " LG900 cannot parse" in off[0]
    assert on.skipped == 1  # fine.py: parsed by CPython's parser only


def test_a_file_holding_no_trigger_is_not_parsed_by_default(tmp_path):
    """Without --check-syntax such a file is never given to a parser: a syntax error there is
    not reported (it cannot hold a pass; documented in lint_rules/prefilter.py)."""
    root = write(tmp_path / "proj", {"broken.py": "def f(:\n    pass\n", "fine.py": "x = 1\n"})
    report = lint_paths([root], VOCAB, jobs=1)
    assert (report.findings, report.skipped) == ([], 2)


# ---- the run record: a warm run reads one file, and trusts nothing it should not ---------------

def test_an_unchanged_tree_is_answered_from_the_run_record(tmp_path):
    root = write(tmp_path / "proj", {"a.py": CGP + "class A(CustomGraphPass):\n" + CALL,
                                     "b.py": "x = 1\n"})
    cache = Cache(tmp_path / "cache")
    first = lint_paths([root], VOCAB, cache=cache)
    for path in root.iterdir():  # older than the run's racy window: times are trusted
        os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns - 10**10))
    second = lint_paths([root], VOCAB, cache=cache)  # records the settled times
    third = lint_paths([root], VOCAB, cache=cache)
    assert first.findings == second.findings == third.findings and len(first.findings) == 1
    assert (first.read, third.read, third.cached) == (2, 0, 2)


def test_an_edit_that_keeps_size_and_mtime_is_still_seen(tmp_path):
    """A stat signature includes ctime and inode, which no edit can restore."""
    alias = "from torch._inductor.custom_graph_pass import CustomGraphPass as C\n"
    root = write(tmp_path / "proj", {"a.py": alias + "class A(object):\n" + CALL})
    cache = Cache(tmp_path / "cache")
    path = root / "a.py"
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns - 10**10))
    assert lint_paths([root], VOCAB, cache=cache).findings == []
    before = path.stat()
    path.write_text(path.read_text().replace("(object)", "(C     )"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns
    report = lint_paths([root], VOCAB, cache=cache)
    assert [f.name for f in report.findings] == ["a:A"]


def test_one_changed_file_reuses_the_rest(tmp_path):
    files = {f"m{n}.py": f"x{n} = {n}\n" for n in range(5)}
    root = write(tmp_path / "proj", {**files, "a.py": CGP + "class A(CustomGraphPass):\n" + CALL})
    cache = Cache(tmp_path / "cache")
    first = lint_paths([root], VOCAB, cache=cache)
    (root / "m0.py").write_text(CGP + "class B(CustomGraphPass):\n" + CALL)
    second = lint_paths([root], VOCAB, cache=cache)
    assert len(first.findings) == 1 and len(second.findings) == 2
    assert second.cached == 5  # every file but the edited one came from the cache
