"""Docs cannot drift from code (after flake8-async's test_messages_documented.py): the registry
reference page and README's rules table are generated (tools/gen_docs.py) and must be current,
every finding code the docs mention exists, every subcommand is documented, and every CPU
section of BENCHMARKS.md has a bench script that rewrites it."""

from __future__ import annotations

import importlib.util
import re
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from lite_guard.registry import Registry

REPO = Path(__file__).resolve().parent.parent
FIX = "; run: .venv/bin/python tools/gen_docs.py"


@pytest.fixture(scope="module")
def gen_docs():
    spec = importlib.util.spec_from_file_location("gen_docs", REPO / "tools" / "gen_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_registry_reference_page_is_current(gen_docs):
    page = gen_docs.REFERENCE
    assert page.exists(), f"{page} is missing{FIX}"
    assert page.read_text(encoding="utf-8") == gen_docs.outputs()[page], f"{page} is stale{FIX}"


def test_readme_rules_table_is_current(gen_docs):
    readme = gen_docs.README.read_text(encoding="utf-8")
    assert readme == gen_docs.with_rules_table(readme), f"README's rules table is stale{FIX}"


def test_every_registry_entry_is_on_the_reference_page(gen_docs, tmp_path):
    # The page is derived: a new entry of any table shows up without anyone writing about it.
    extra = tmp_path / "extra.toml"
    extra.write_text('[[pass]]\nname = "myproj.passes:fold_widgets"\nstage = "post_grad"\n'
                     'lite = "never"\nwhy = "a throwaway entry"\n')
    registry = Registry.from_files([*gen_docs.shipped_registry_files(), extra])
    page = gen_docs.render_reference(registry)
    assert "| `myproj.passes:fold_widgets` | never |" in page
    for entry in registry.passes:
        assert f"`{gen_docs.cell(entry.name)}`" in page, entry.name
    for entry in registry.configs:
        assert f"`{gen_docs.cell(entry.key)}`" in page, entry.key
    for entry in (*registry.pipelines, *registry.bases):
        assert f"`{gen_docs.cell(getattr(entry, 'root', None) or entry.name)}`" in page


def _documented_codes() -> dict[str, set[str]]:
    docs = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md"))]
    return {str(p.relative_to(REPO)): set(re.findall(r"\bLG\d{3}\b", p.read_text(encoding="utf-8")))
            for p in docs if p.exists()}


def test_every_code_the_docs_mention_exists_and_every_code_is_in_the_readme(gen_docs):
    codes = {d["id"] for d in gen_docs.rule_descriptors()}
    unknown = {path: sorted(found - codes) for path, found in _documented_codes().items()
               if found - codes}
    assert unknown == {}, f"docs mention finding codes no rule has: {unknown}"
    readme_codes = _documented_codes()["README.md"]
    assert {c for c in codes if re.fullmatch(r"LG\d{3}", c)} <= readme_codes


def test_every_subcommand_is_documented_in_the_readme():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    commands = {ep.name for ep in entry_points(group="lite_guard.commands")}
    assert commands, "no lite_guard.commands entry points: reinstall with pip install -e ."
    assert {c for c in commands if f"lite_guard {c}" not in readme} == set()


def test_every_cpu_section_of_benchmarks_has_a_script_that_rewrites_it():
    # `make bench` (bench/run_all.py) reruns every bench script with --write; a CPU section no
    # script owns would silently go stale.
    sections = re.findall(r"^## (.+)$", (REPO / "BENCHMARKS.md").read_text(encoding="utf-8"), re.M)
    cpu = [s for s in sections if not re.search(r"GPU|H200|NCCL|CUDA", s)]
    scripts = [p.read_text(encoding="utf-8") for p in (REPO / "bench").glob("*.py")
               if not p.name.startswith("gpu_") and '"--write"' in p.read_text(encoding="utf-8")]
    orphans = [s for s in cpu if not any(f'"{s}"' in text for text in scripts)]
    assert cpu and orphans == [], f"BENCHMARKS.md sections no bench script writes: {orphans}"


RANGE_TEXT = re.compile(r"\b2\.\d+(?:\.\d+)?\s*(?:-|–|to|through)\s*2\.\d+\b")
RANGE_SPEC = re.compile(r"torch\s*>=\s*2\.\d+\s*,\s*<\s*2\.\d+")


def test_supported_torch_range_has_one_home():
    import tomllib

    from lite_guard import SUPPORTED_TORCH, SUPPORTED_TORCH_MINORS, SUPPORTED_TORCH_TEXT

    # Code reads the constant; nothing in the packages spells the range out again.
    spelled = [f"{p.relative_to(REPO)}:{n}: {line.strip()}"
               for package in ("lite_guard", "lint_rules", "lite_compiler")
               for p in sorted((REPO / package).rglob("*.py"))
               for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
               if RANGE_TEXT.search(line) or RANGE_SPEC.search(line)]
    assert spelled == [], "write lite_guard.SUPPORTED_TORCH(_TEXT) instead of:\n" + "\n".join(spelled)
    # What cannot import it (static TOML, prose) must say the same thing.
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert f"torch{SUPPORTED_TORCH}" in extras["torch"] and f"torch{SUPPORTED_TORCH}" in extras["test"]
    prose = [REPO / "README.md", REPO / "CONTRIBUTING.md", REPO / "Makefile",
             *sorted((REPO / "docs").glob("*.md"))]
    disagree = [f"{p.relative_to(REPO)}: {m.group(0)}" for p in prose if p.exists()
                for m in RANGE_TEXT.finditer(p.read_text(encoding="utf-8"))
                if re.sub(r"\s*(?:-|–|through)\s*", " to ", m.group(0)) != SUPPORTED_TORCH_TEXT]
    disagree += [f"{p.relative_to(REPO)}: {m.group(0)}" for p in prose if p.exists()
                 for m in RANGE_SPEC.finditer(p.read_text(encoding="utf-8"))
                 if m.group(0).replace(" ", "") != f"torch{SUPPORTED_TORCH}"]
    assert disagree == [], f"the supported torch range is {SUPPORTED_TORCH_TEXT}, not: {disagree}"
    import lite_compiler.config

    assert lite_compiler.config.SUPPORTED == SUPPORTED_TORCH_MINORS
