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


def _bench_provenance():
    import sys

    if "bench_provenance" not in sys.modules:  # (dataclasses look their module up there)
        spec = importlib.util.spec_from_file_location("bench_provenance",
                                                      REPO / "bench" / "provenance.py")
        sys.modules["bench_provenance"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules["bench_provenance"])
    return sys.modules["bench_provenance"]


def test_every_benchmarks_section_names_its_command_and_a_commit_of_this_repository():
    # Issue #13: a number without the command and the code that produced it cannot be checked.
    provenance = _bench_provenance()
    found = provenance.sections((REPO / "BENCHMARKS.md").read_text(encoding="utf-8"))
    assert found, "BENCHMARKS.md has no ## sections"
    missing = [s.title for s in found if not s.runs]
    assert missing == [], f"sections with no 'Measured: `command` at commit `sha`' line: {missing}"
    unknown = [f"{s.title}: {run['commit']}" for s in found for run in s.runs
               if provenance.git("cat-file", "-e", f"{run['commit']}^{{commit}}").returncode != 0]
    assert unknown == [], f"sections naming commits this repository does not have: {unknown}"


def test_every_cpu_section_of_benchmarks_has_a_script_that_reruns_it():
    # `make bench` (bench/run_all.py) reruns every CPU section's script with --write; a section
    # no script owns would silently go stale.
    provenance = _bench_provenance()
    found = provenance.sections((REPO / "BENCHMARKS.md").read_text(encoding="utf-8"))
    orphans = [s.title for s in found if provenance.owner(s.title) is None]
    assert orphans == [], f"BENCHMARKS.md sections no bench script writes: {orphans}"
    cannot_rerun = [s.title for s in found if not s.gpu and not provenance.owner(s.title).writes]
    assert cannot_rerun == [], f"CPU sections whose script has no --write: {cannot_rerun}"
    # The command a section names is its owner's (or, on the GPU, the session that runs it, or
    # the flex-attention example the GPU section renders beside the models).
    gpu_scripts = ("bench/gpu_session.sh", "bench/gpu_flex_attention.py")
    foreign = [f"{s.title}: {run['command']}" for s in found for run in s.runs
               if f"bench/{provenance.owner(s.title).path.name}" not in run["command"]
               and not (s.gpu and any(script in run["command"] for script in gpu_scripts))]
    assert foreign == [], f"Measured: commands that are not the section's script: {foreign}"


def _git(repo: Path, *args: str) -> str:
    import subprocess

    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo,
                          check=True, capture_output=True, text=True).stdout.strip()


def _measured_repo(repo: Path, files: dict[str, str], commands: str, sections: dict[str, str]):
    """A git repository holding ``files`` and a pyproject with these ``lite_guard.commands``
    entry points, committed, and a BENCHMARKS.md whose sections (title -> bench script) were
    measured at that commit. Returns ``stale()``: each section's verdict, by title."""
    provenance = _bench_provenance()
    (repo / "pyproject.toml").write_text(
        f'[project]\nname = "x"\n[project.entry-points."lite_guard.commands"]\n{commands}')
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "measured")
    measured = _git(repo, "rev-parse", "--short", "HEAD")
    (repo / "BENCHMARKS.md").write_text("# B\n" + "".join(
        f"\n## {title}\n\nMeasured: `python {script} --write` at commit `{measured}`.\n"
        for title, script in sections.items()))
    return lambda: {v.section.title: v.stale for v in provenance.verdicts(repo)}


def test_a_section_is_stale_exactly_when_a_later_commit_touches_the_code_its_script_exercises(tmp_path):
    repo = tmp_path
    stale = _measured_repo(repo, {
        "lite_compiler/__init__.py": "A = 1\n", "lint_rules/command.py": "B = 1\n",
        "bench/helper.py": "C = 1\n",
        "bench/speed.py": 'import lite_compiler\nfrom bench import helper\nSECTION = "Speed"\n'
                          'ARGS = ["--write"]\n',
        "bench/lint.py": 'import sys\nCMD = [sys.executable, "-m", "lite_guard", "check"]\n'
                         'SECTION = "Lint"\nARGS = ["--write"]\n',
    }, 'check = "lint_rules.command:register"\n', {"Speed": "bench/speed.py", "Lint": "bench/lint.py"})
    assert stale() == {"Speed": False, "Lint": False}
    (repo / "lint_rules" / "command.py").write_text("B = 2\n")  # reached through the CLI only
    _git(repo, "commit", "-qam", "lint change")
    assert stale() == {"Speed": False, "Lint": True}
    (repo / "bench" / "helper.py").write_text("C = 2\n")  # reached through an import
    _git(repo, "commit", "-qam", "helper change")
    newest = _git(repo, "rev-parse", "--short", "HEAD")
    verdicts = {v.section.title: v for v in _bench_provenance().verdicts(repo)}
    assert verdicts["Speed"].stale and f"1 later commit(s) (newest {newest})" in verdicts["Speed"].why
    assert "bench/helper.py" in verdicts["Speed"].paths and "lite_compiler" in verdicts["Speed"].paths


def test_a_cli_command_module_is_measured_only_by_sections_that_run_that_command(tmp_path):
    """A package is measured whole, except the module of a `lite_guard` subcommand (its
    arguments and output) that the section's script never runs."""
    repo = tmp_path
    stale = _measured_repo(repo, {
        "lite_guard/__init__.py": "A = 1\n", "lite_guard/commands/registry.py": "B = 1\n",
        "bench/speed.py": 'import lite_guard\nSECTION = "Speed"\nARGS = ["--write"]\n',
        "bench/listing.py": 'import sys\nCMD = [sys.executable, "-m", "lite_guard", "registry",'
                            ' "list"]\nSECTION = "Listing"\nARGS = ["--write"]\n',
    }, 'registry = "lite_guard.commands.registry:register"\n',
        {"Speed": "bench/speed.py", "Listing": "bench/listing.py"})
    (repo / "lite_guard" / "commands" / "registry.py").write_text("B = 2\n")
    _git(repo, "commit", "-qam", "registry command change")
    assert stale() == {"Speed": False, "Listing": True}
    (repo / "lite_guard" / "__init__.py").write_text("A = 2\n")  # the package itself
    _git(repo, "commit", "-qam", "package change")
    assert stale() == {"Speed": True, "Listing": True}


def test_replace_section_writes_the_command_and_the_commit_that_measured(tmp_path):
    import subprocess
    import sys

    repo = tmp_path
    (repo / "bench").mkdir()
    for name in ("markdown_section.py", "provenance.py"):
        (repo / "bench" / name).write_text((REPO / "bench" / name).read_text())
    (repo / "bench" / "speed.py").write_text(
        "import sys\nsys.path.insert(0, sys.argv[1])\nfrom bench.markdown_section import replace_section\n"
        "from pathlib import Path\nreplace_section(Path(sys.argv[1]) / 'BENCHMARKS.md', 'Speed', '| 1 s |')\n")
    (repo / "BENCHMARKS.md").write_text("# B\n\n## Speed\n\nold numbers\n\n## Other\n\nkept\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "c")
    head = _git(repo, "rev-parse", "--short", "HEAD")
    subprocess.run([sys.executable, "bench/speed.py", str(repo), "--fast"], cwd=repo, check=True,
                   env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    text = (repo / "BENCHMARKS.md").read_text()
    section = _bench_provenance().sections(text)[0]
    assert [(r["command"], r["commit"]) for r in section.runs] == [
        (f".venv/bin/python bench/speed.py {repo} --fast", head)]
    assert "old numbers" not in text and "| 1 s |" in text and "kept" in text


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


def test_run_all_worktree_measures_the_committed_code_and_copies_the_section_back(tmp_path):
    # The rerun recipe of issue #13: a section rerun from a clean worktree of HEAD names HEAD
    # and shows what HEAD's code measures, whatever is being edited in the checkout meanwhile.
    import subprocess
    import sys

    repo = tmp_path / "repo"
    (repo / "bench").mkdir(parents=True)
    for name in ("markdown_section.py", "provenance.py", "run_all.py"):
        (repo / "bench" / name).write_text((REPO / "bench" / name).read_text())
    (repo / "bench" / "__init__.py").write_text("")
    speed = ("import sys\nfrom pathlib import Path\nREPO = Path(__file__).resolve().parent.parent\n"
             "sys.path.insert(0, str(REPO))\nfrom bench.markdown_section import replace_section\n"
             "SECTION = 'Speed'\nARGS = [\"--write\"]\nVALUE = '{value}'\n"
             "replace_section(REPO / 'BENCHMARKS.md', SECTION, f'| {{VALUE}} |')\n")
    (repo / "bench" / "speed.py").write_text(speed.format(value="committed"))
    (repo / "BENCHMARKS.md").write_text("# B\n\n## Speed\n\nold\n\n## Other\n\nkept\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "c")
    head = _git(repo, "rev-parse", "--short", "HEAD")
    (repo / "bench" / "speed.py").write_text(speed.format(value="uncommitted edit"))
    result = subprocess.run([sys.executable, "bench/run_all.py", "--worktree", "--only", "speed"],
                            cwd=repo, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    text = (repo / "BENCHMARKS.md").read_text()
    section = _bench_provenance().sections(text)[0]
    assert [r["commit"] for r in section.runs] == [head]
    assert "from a clean git worktree" in section.runs[0]["note"]
    assert "| committed |" in text and "uncommitted edit |" not in text and "kept" in text
    assert _git(repo, "worktree", "list").count("\n") == 0  # the worktree is gone again


def test_stale_label_is_written_once_into_the_stale_section_only(tmp_path):
    import subprocess
    import sys

    repo = tmp_path / "repo"
    (repo / "bench").mkdir(parents=True)
    (repo / "lite_compiler").mkdir()
    for name in ("markdown_section.py", "provenance.py", "run_all.py"):
        (repo / "bench" / name).write_text((REPO / "bench" / name).read_text())
    (repo / "bench" / "__init__.py").write_text("")
    (repo / "lite_compiler" / "__init__.py").write_text("A = 1\n")
    (repo / "bench" / "speed.py").write_text('import lite_compiler\nSECTION = "Speed"\nW = ["--write"]\n')
    (repo / "bench" / "other.py").write_text('SECTION = "Other"\nW = ["--write"]\n')
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "measured")
    measured = _git(repo, "rev-parse", "--short", "HEAD")
    (repo / "BENCHMARKS.md").write_text(
        f"# B\n\n## Speed\n\nMeasured: `python bench/speed.py --write` at commit `{measured}`.\n\n"
        f"| 1 s |\n\n## Other\n\nMeasured: `python bench/other.py --write` at commit `{measured}`.\n\nok\n")
    (repo / "lite_compiler" / "__init__.py").write_text("A = 2\n")
    _git(repo, "commit", "-qam", "compiler change")
    newest = _git(repo, "rev-parse", "--short", "HEAD")
    for _ in range(2):  # idempotent: labelling twice leaves one label
        result = subprocess.run([sys.executable, "bench/run_all.py", "--stale", "--label"], cwd=repo,
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 1, result.stdout + result.stderr
    text = (repo / "BENCHMARKS.md").read_text()
    assert text.count("Stale: ") == 1
    speed, other = _bench_provenance().sections(text)
    stale_line = next(line for line in speed.body.splitlines() if line.startswith("Stale: "))
    assert f"1 later commit(s) (newest {newest}) changed the code it measured since {measured}" in stale_line
    assert "| 1 s |" in speed.body and "Stale: " not in other.body


def test_the_flex_goal_over_several_rounds_is_met_only_when_met_within_every_round():
    """Two interleaved rounds: the median of two would be the faster one; the goal line judges
    each round's ratio to default mode in that round instead."""
    import sys

    sys.path.insert(0, str(REPO))
    from bench.gpu_models_render import _flex

    def row(variant: str, number: int, step: float) -> dict:
        return {"variant": variant, "round": number, "step_ms": step, "host_ms": step,
                "first_call_s": 1.0, "peak_mem_mib": 60.0}

    report = {"rows": [row("default inductor", 1, 1.0), row("lite-guard lite", 1, 1.4),
                       row("lite-guard lite + cudagraphs", 1, 0.9), row("default inductor", 2, 1.0),
                       row("lite-guard lite", 2, 0.9), row("lite-guard lite + cudagraphs", 2, 0.95)]}
    goals = [line for line in _flex(report) if line.startswith("Goal")]
    assert goals == [
        'Goal "region step <= 1.0x default mode", lite-guard lite: 1.40x, 0.90x within its rounds,'
        " met in 1 of 2: **not met**.",
        'Goal "region step <= 1.0x default mode", lite-guard lite + cudagraphs: 0.90x, 0.95x within'
        " its rounds, met in 2 of 2: met.",
    ]
