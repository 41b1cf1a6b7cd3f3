"""Recall and precision of `lite_guard check --no-project` on the round-9 held-out set.

The labels and the sources are in bench/results/heldout_round9.json (docs/lint-recall.md,
"Round 9", says how they were written): four third-party snapshots read from bare git mirrors
(``--mirrors``, ``owner+name/repo`` as the workspace's ``fetch`` tool lays them out) and two trees
written from scratch here (tests/data/heldout_round9). Nothing fetched is imported or run.

    python bench/recall_heldout_round9.py                  # measure this checkout
    python bench/recall_heldout_round9.py --src /tmp/old   # measure another checkout's lint
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LABELS = REPO / "bench" / "results" / "heldout_round9.json"


def prepare(name: str, source: dict, trees: Path, mirrors: Path) -> Path:
    root = trees / name
    if source["kind"] == "data":
        if not root.exists():
            shutil.copytree(REPO / source["path"], root)
            for origin, there in source.get("copy", {}).items():  # the same forms, in torch
                shutil.copyfile(REPO / origin, root / there)
        return root
    if not (root / ".complete").exists():
        root.mkdir(parents=True, exist_ok=True)
        git_dir = mirrors / source["repo"].replace("/", "+") / "repo"
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


def main(labels_path: Path = LABELS, trees: Path = Path("/tmp/heldout_round9"),
         doc: str = __doc__) -> int:
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--trees", type=Path, default=trees)
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--src", type=Path, help="a checkout whose lint_rules to measure")
    args = parser.parse_args()
    labels = json.loads(labels_path.read_text())["trees"]
    total = {"passes": 0, "found": 0, "findings": 0, "true": 0}
    print("| tree | real passes | found | findings | precision | missed | false |")
    print("|---|---:|---:|---:|---:|---|---|")
    for name, spec in labels.items():
        root = prepare(name, spec["source"], args.trees, args.mirrors)
        r = score(name, spec, root, args.src)
        for key in total:
            total[key] += r[key]
        print(f"| {name} | {r['passes']} | {r['found']} | {r['findings']} | {r['true']}/{r['findings']}"
              f" | {', '.join(r['missed']) or '-'} | {'; '.join(r['false']) or '-'} |")
    print(f"| **all** | {total['passes']} | {total['found']} | {total['findings']}"
          f" | {total['true']}/{total['findings']} | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
