"""Recall and precision of `lite_guard check --no-project` on the held-out sets, one per round.

Each set is a labels file ``bench/results/heldout_round<N>.json`` (docs/lint-recall.md, "Round N",
says how it was written): its labels were written *before* that round's lint changes were
measured on it, so the set was held out for the lint of that round's start; the round's fixes
were then made against its misses, and later rounds' lint is scored on it again here. Sources:
third-party snapshots read from bare git mirrors (``--mirrors``, ``owner+name/repo`` as the
workspace's ``fetch`` tool lays them out; pinned commits) and trees written from scratch here
(``tests/data/heldout_round<N>``). Nothing fetched is imported or run.

    python bench/recall_heldout.py                  # every round's set, this checkout's lint
    python bench/recall_heldout.py --rounds 9       # one round's set
    python bench/recall_heldout.py --src /tmp/old   # measure another checkout's lint
    python bench/recall_heldout.py --write          # and rewrite its BENCHMARKS.md section
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
SECTION = "Lint: recall on held-out sets"  # the BENCHMARKS.md section it owns
# Read without importing: the labels, the trees written here, and the lint run as a subprocess.
MEASURES = ("bench/results/heldout_round9.json", "tests/data/heldout_round9",
            "bench/results/heldout_round10.json", "bench/results/heldout_round11.json",
            "bench/results/heldout_round12.json", "bench/results/heldout_round13.json",
            "bench/results/heldout_round14.json", "bench/results/heldout_round15.json")
LABEL_FILE = re.compile(r"heldout_round(\d+)\.json")


def label_files() -> dict[int, Path]:
    """Every round's labels file, by round number."""
    found = {}
    for path in RESULTS.glob("heldout_round*.json"):
        match = LABEL_FILE.fullmatch(path.name)
        if match:
            found[int(match.group(1))] = path
    return dict(sorted(found.items()))


def prepare(name: str, source: dict, trees: Path, mirrors: Path) -> Path:
    root = trees / name
    if source["kind"] == "data":
        if not root.exists():
            shutil.copytree(REPO / source["path"], root)
            for origin, there in source.get("copy", {}).items():  # the same forms, in torch
                shutil.copyfile(REPO / origin, root / there)
        return root
    if not (root / ".complete").exists():
        git_dir = mirrors / source["repo"].replace("/", "+") / "repo"
        if not git_dir.is_dir():
            raise SystemExit(f"recall_heldout: {git_dir}: no mirror of {source['repo']}; fetch it "
                             f"(the workspace's fetch tool, github:{source['repo']}) or pass "
                             "--mirrors DIR holding owner+name/repo")
        root.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "--git-dir", str(git_dir), "archive", source["commit"],
                                  *source["paths"]], check=True, capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(root, filter="data")
        (root / ".complete").write_text("")
    return root


def score(name: str, spec: dict, root: Path, src: Path | None) -> dict:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = f"{src}{os.pathsep}{env.get('PYTHONPATH', '')}"
    target = root / spec["lint"].split("/", 1)[1] if spec["source"]["kind"] == "data" \
        else root / spec["lint"]
    run = subprocess.run([sys.executable, "-m", "lite_guard", "check", "--no-project", "--no-cache",
                          "--format", "json", str(target)], capture_output=True, text=True,
                         env=env, cwd=src or REPO)
    if run.returncode not in (0, 1):
        raise SystemExit(f"lite_guard check {target} failed ({run.returncode}): {run.stderr[-400:]}")
    findings = [f for f in json.loads(run.stdout)["findings"] if f["code"] in ("LG001", "LG005")]
    base = target if spec["source"]["kind"] == "data" else root / spec.get("base", name)
    passes, found, verdicts = spec["passes"], set(), []
    for f in sorted(findings, key=lambda f: (f["path"], f["line"])):
        rel = os.path.relpath(f["path"], base)
        leaf = f["name"].rsplit(":", 1)[-1].rsplit(".", 1)[-1]
        by_name = [i for i, (n, sites) in enumerate(passes)
                   if n == leaf and any(s[0] == rel for s in sites)]
        by_line = [i for i, (_, sites) in enumerate(passes) if [rel, f["line"]] in sites]
        hit = by_name or [i for i in by_line if i not in found][:1] or by_line[:1]
        module = f["code"] == "LG005" and f["line"] == 1 and any(
            s[0] == rel for _, sites in passes for s in sites)
        found.update(hit[:1])
        verdicts.append({"path": rel, "line": f["line"], "code": f["code"], "name": f["name"],
                         "true": bool(hit) or module})
    return {"tree": name, "passes": len(passes), "found": len(found), "findings": len(findings),
            "true": sum(v["true"] for v in verdicts),
            "missed": [p[0] for i, p in enumerate(passes) if i not in found],
            "false": [f"{v['path']}:{v['line']} {v['code']} {v['name']}"
                      for v in verdicts if not v["true"]]}


def table(rows: list[dict]) -> list[str]:
    total = {key: sum(r[key] for r in rows) for key in ("passes", "found", "findings", "true")}
    lines = ["| tree | real passes | found | findings | precision | missed | false |",
             "|---|---:|---:|---:|---:|---|---|"]
    for r in rows:
        lines.append(f"| {r['tree']} | {r['passes']} | {r['found']} | {r['findings']} "
                     f"| {r['true']}/{r['findings']} | {', '.join(r['missed']) or '-'} "
                     f"| {'; '.join(r['false']) or '-'} |")
    lines.append(f"| **all** | {total['passes']} | {total['found']} | {total['findings']} "
                 f"| {total['true']}/{total['findings']} | | |")
    return lines


def section(results: dict[int, list[dict]], about: dict[int, str]) -> str:
    parts = [
        "`lite_guard check --no-project --no-cache` on each round's held-out set (labels: "
        "`bench/results/heldout_round<N>.json`; how each was written: docs/lint-recall.md, "
        "\"Round N\"). A round's set was labelled before that round's lint changes were measured "
        "on it; the round then fixed what it missed, so only a round's *before* figure (in "
        "docs/lint-recall.md) is held-out recall, and the rows below show what the current lint "
        "keeps on sets it was since fixed against. A finding is true when it names a label or "
        "sits on one of its sites; LG005's module-level finding on a file holding a labelled pass "
        "is true but finds no pass."]
    for number, rows in results.items():
        found = sum(r["found"] for r in rows)
        passes = sum(r["passes"] for r in rows)
        true = sum(r["true"] for r in rows)
        findings = sum(r["findings"] for r in rows)
        parts.append(f"### Round {number}: recall {found}/{passes}, precision {true}/{findings}\n\n"
                     + about[number] + "\n\n" + "\n".join(table(rows)))
    return "\n\n".join(parts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, nargs="+", help="which rounds' sets (default: all)")
    parser.add_argument("--trees", type=Path, default=Path("/tmp/heldout_sets"),
                        help="where snapshots are unpacked (kept between runs)")
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--src", type=Path, help="a checkout whose lint_rules to measure")
    parser.add_argument("--write", action="store_true",
                        help="rewrite this benchmark's section of BENCHMARKS.md")
    args = parser.parse_args()
    files = label_files()
    unknown = sorted(set(args.rounds or ()) - set(files))
    if unknown:
        parser.error(f"no labels for round {unknown[0]} (have: {', '.join(map(str, files))})")
    results, about = {}, {}
    for number, path in files.items():
        if args.rounds and number not in args.rounds:
            continue
        labels = json.loads(path.read_text())
        about[number] = labels["about"]
        results[number] = [score(name, spec, prepare(name, spec["source"],
                                                     args.trees / f"round{number}", args.mirrors),
                                 args.src)
                           for name, spec in labels["trees"].items()]
        print(f"round {number}:")
        print("\n".join(table(results[number])))
    if args.write:
        if args.src is not None or args.rounds:
            parser.error("--write measures this checkout on every round (no --src, no --rounds)")
        from bench.markdown_section import replace_section
        replace_section(REPO / "BENCHMARKS.md", SECTION, section(results, about))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main())
