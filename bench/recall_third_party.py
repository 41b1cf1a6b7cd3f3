"""Recall and precision of `lite_guard check --no-project` on third-party Inductor pass code.

The snapshots and the hand labels live in bench/results/recall_third_party.json: for each project
its source (a git commit of a public repository, or a PyPI wheel with its sha256), the directory
linted, and every real pass with the identity the runtime guard checks and the lines where a
finding counts (docs/lint-recall.md says how passes were labelled).

    python bench/recall_third_party.py --prepare            # fetch the snapshots into --trees
    python bench/recall_third_party.py                      # measure the code of this checkout
    python bench/recall_third_party.py --src /tmp/old       # measure another checkout's lint_rules
    python bench/recall_third_party.py --json out.json      # also write the per-finding verdicts

Git sources are read from bare mirrors (``--mirrors``, ``owner+name/repo`` inside, as the
workspace's ``fetch`` tool lays them out); wheels are downloaded with pip, checked against their
sha256, and only their .py files are extracted. Nothing fetched is ever imported or run.

A real pass is *found* when a finding names its identity or sits on one of its lines; its
identity is *right* when a finding names exactly the identity the guard checks. A finding is a
true positive when it matches a real pass by either; every other finding is a false positive.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LABELS = REPO / "bench" / "results" / "recall_third_party.json"


def prepare(project: dict, trees: Path, mirrors: Path) -> Path:
    """The project's snapshot under ``trees`` (built once)."""
    root = trees / project["project"]
    if (root / ".complete").exists():
        return root
    root.mkdir(parents=True, exist_ok=True)
    source = project["source"]
    if source["kind"] == "git":
        git_dir = mirrors / source["repo"].replace("/", "+") / "repo"
        archive = subprocess.run(["git", "--git-dir", str(git_dir), "archive", source["commit"],
                                  source["path"]], check=True, capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(root, filter="data")
    else:
        wheels = trees / "_wheels"
        wheel = wheels / source["file"]
        if not wheel.exists():
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary",
                            ":all:", "--python-version", "3.12", "--platform", source["platform"],
                            source["requirement"], "-d", str(wheels)], check=True)
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        if digest != source["sha256"]:
            raise SystemExit(f"{wheel}: sha256 {digest} is not the labelled snapshot's")
        with zipfile.ZipFile(wheel) as archive:
            for name in archive.namelist():
                if name.endswith(".py") and ".dist-info/" not in name:
                    archive.extract(name, root)
    (root / ".complete").write_text("")
    return root


def check(path: Path, src: Path | None) -> list[dict]:
    env = dict(os.environ)
    if src is not None:  # another checkout's lint (e.g. before a change): its packages first
        env["PYTHONPATH"] = f"{src}{os.pathsep}{env.get('PYTHONPATH', '')}"
    run = subprocess.run([sys.executable, "-m", "lite_guard", "check", "--no-project", "--no-cache",
                          "--format", "json", str(path)], capture_output=True, text=True, env=env,
                         cwd=src or REPO)
    if run.returncode not in (0, 1):
        raise SystemExit(f"lite_guard check {path} failed ({run.returncode}): {run.stderr[-400:]}")
    return json.loads(run.stdout)["findings"]


# LG006: a store into Inductor's / functorch's config under a key the lint cannot resolve. It
# names no pass, so it is neither a true nor a false positive of pass finding: counted apart.
NOT_A_PASS = ("LG006",)


def score(project: dict, root: Path, findings: list[dict]) -> dict:
    passes = project["passes"]
    sites = {(p["file"], line): p["name"] for p in passes for line in p["sites"]}
    # run-time replacements of torch's pipeline code (labels of their own: not passes)
    patches = {(p["file"], p["line"]): p for p in project.get("pipeline_patches", ())}
    names = {p["name"] for p in passes}
    verdicts, unresolved = [], []
    for finding in findings:
        relative = os.path.relpath(finding["path"], root)
        if finding["code"] in NOT_A_PASS:  # says what could not be resolved, names no pass
            unresolved.append(f"{relative}:{finding['line']} {finding['code']} {finding['name']}")
            continue
        match = finding["name"] if finding["name"] in names else sites.get((relative, finding["line"]))
        patch = patches.get((relative, finding["line"]))
        verdicts.append({"path": relative, "line": finding["line"], "code": finding["code"],
                         "name": finding["name"], "matches": match,
                         "patch": patch["target"] if patch and not match else None})
    found = {v["matches"] for v in verdicts if v["matches"]}
    patched = {v["patch"] for v in verdicts if v["patch"]}
    right = {v["name"] for v in verdicts if v["name"] in names}
    true = sum(1 for v in verdicts if v["matches"] or v["patch"])
    inside = [p for p in patches.values() if p["in_registry_packages"]]
    return {"project": project["project"], "passes": len(passes), "found": len(found),
            "patches": len(patches), "patches_inside": len(inside),
            "patches_found": len(patched),
            "patches_missed": sorted(p["target"] for p in patches.values()
                                     if p["target"] not in patched),
            "identity_right": len(right), "findings": len(verdicts), "true_positives": true,
            "missed": sorted(names - found), "false_positives": [v for v in verdicts
                                                                if not (v["matches"] or v["patch"])],
            "verdicts": verdicts, "unresolved": len(unresolved), "unresolved_sites": unresolved}


def table(results: list[dict]) -> str:
    rows = ["| project | real passes | found | identity as the guard checks | run-time pipeline"
            " patches found (labelled; in the registry's packages) | findings | precision"
            " | unresolved config stores (LG006) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]
    total = {"passes": 0, "found": 0, "identity_right": 0, "findings": 0, "true_positives": 0,
             "unresolved": 0, "patches": 0, "patches_inside": 0, "patches_found": 0}
    for r in results:
        for key in total:
            total[key] += r[key]
        rows.append(_row(r["project"], r))
    rows.append(_row("**all**", total))
    return "\n".join(rows)


def _row(name: str, r: dict) -> str:
    precision = f"{r['true_positives']}/{r['findings']}" if r["findings"] else "-"
    return (f"| {name} | {r['passes']} | {r['found']} ({100 * r['found'] // max(r['passes'], 1)}%)"
            f" | {r['identity_right']} | {r['patches_found']} ({r['patches']}; {r['patches_inside']})"
            f" | {r['findings']} | {precision} | {r['unresolved']} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", type=Path, default=Path("/tmp/recall_third_party"),
                        help="where the snapshots are (or go, with --prepare)")
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"),
                        help="bare git mirrors, owner+name/repo")
    parser.add_argument("--prepare", action="store_true", help="fetch missing snapshots first")
    parser.add_argument("--src", type=Path, help="a checkout whose lint_rules to measure")
    parser.add_argument("--json", type=Path, help="write every finding's verdict here")
    parser.add_argument("--write", action="store_true",
                        help="fetch missing snapshots (--prepare), then rewrite this benchmark's "
                             "BENCHMARKS.md section")
    args = parser.parse_args()
    args.prepare = args.prepare or args.write
    labels = json.loads(LABELS.read_text())
    results, subdirs = [], []
    for project in labels["projects"]:
        root = args.trees / project["project"]
        if args.prepare:
            try:
                root = prepare(project, args.trees, args.mirrors)
            except subprocess.CalledProcessError as exc:
                print(f"{root}: cannot fetch the snapshot ({' '.join(map(str, exc.cmd[:4]))} ... exited "
                      f"{exc.returncode}); fetch it where there is network access (the fetch tool's "
                      f"mirror under --mirrors, or pip download), then rerun", file=sys.stderr)
                return 2
        if not (root / ".complete").exists():
            print(f"{root}: no snapshot; run with --prepare", file=sys.stderr)
            return 2
        results.append(score(project, root, check(root / project["lint"], args.src)))
        for sub in project.get("also_lint", ()):  # a pass directory linted on its own
            part = {**project, "project": f"{project['project']} {sub}/",
                    "passes": [p for p in project["passes"] if p["file"].startswith(sub + "/")],
                    "pipeline_patches": [p for p in project.get("pipeline_patches", ())
                                         if p["file"].startswith(sub + "/")]}
            subdirs.append(score(part, root, check(root / sub, args.src)))
    print(table(results))
    print("\nPass directories linted on their own:\n")
    print(table(subdirs))
    results += subdirs
    for r in results:
        for name in r["missed"]:
            print(f"missed  {r['project']}: {name}")
        for target in r["patches_missed"]:
            print(f"patch missed  {r['project']}: {target}")
        for v in r["false_positives"]:
            print(f"extra   {r['project']}: {v['path']}:{v['line']} {v['code']} {v['name']}")
        for site in r["unresolved_sites"]:
            print(f"LG006   {r['project']}: {site}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    if args.write:
        write_section(table(results[:len(results) - len(subdirs)]), table(subdirs), args.src)
    return 0


SECTION = "Lint: recall on third-party pass code"
# The hand labels are an input: a change to them changes the numbers (bench/provenance.py).
MEASURES = ("bench/results/recall_third_party.json",)


def write_section(whole: str, alone: str, src: Path | None) -> None:
    """Replace BENCHMARKS.md's section with these tables, the command and the commit measured."""
    sys.path.insert(0, str(REPO))
    from bench.markdown_section import replace_section

    checkout = src or REPO
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=checkout).stdout.strip()
    body = (f"Command: `python bench/recall_third_party.py --write`, commit `{commit}`"
            + (f" (lint_rules of {src})" if src else "")
            + ". `lite_guard check --no-project` over snapshots of third-party Inductor pass code "
            "(pinned by commit or wheel sha256 in `bench/results/recall_third_party.json`, with the "
            "hand labels: which classes, functions, observers and pattern passes are real passes, "
            "and the identity the guard checks). "
            "Caveat: the labels are ours, and the lint was fixed against the misses they showed "
            "(70/87 found at 89d99ba), so this is recall on code the lint was tuned to. Every miss "
            "and label rule: [docs/lint-recall.md](docs/lint-recall.md). Since round 6 a finding"
            " on a labelled run-time patch of torch's pipeline code (`pipeline_patches` in the JSON:"
            " `Scheduler.dead_node_elimination = ...`, `exec` into `torch._functorch.partitioners`)"
            " counts as true; those labels were written by grepping each snapshot for assignments"
            " to names imported from torch, after the lint learnt to report them.\n\n"
            f"Each project's package linted whole:\n\n{whole}\n\n"
            f"Pass directories linted on their own:\n\n{alone}\n")
    replace_section(REPO / "BENCHMARKS.md", SECTION, body)


if __name__ == "__main__":
    sys.exit(main())
