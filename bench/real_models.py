"""Real-model suite: every model of bench/real_model_zoo.py, training and inference, fp32 and bf16.

Usage: .venv/bin/python bench/real_models.py [--device cpu|cuda] [--models SUBSTRING ...]
                                             [--json PATH] [--write]
       .venv/bin/python bench/real_models.py --render PATH.json --write   (table from saved JSON)
       .venv/bin/python bench/real_models.py --models swin --update     (rerun some, keep the rest)
       .venv/bin/python bench/real_models.py --merge other.json --write  (add another run's rows)

Each model runs in a fresh process (``--worker NAME``): aot_eager as the reference, then ours
(``backend="lite"``, compared with torch.equal on every output, parameter gradient and floating
buffer), torch's own ``mode="lite"`` the same way, and ours with regions put on the model's own
modules by ``lite_compiler.module_regions`` (region code is Inductor's: expected to differ in the
last bits; the column says whether it ran, how many region graphs compiled, and the difference).
All with ``fullgraph=False``. Results go to bench/results/real_models_<device>.json; with
--write the "Real models" section of BENCHMARKS.md is replaced (bench/markdown_section.py).
About 3 hours of one core for all models (measured one at a time); --jobs runs several at once.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

SECTION = "Real models (torchvision, timm, transformers)"


def worker(name: str, device: str) -> int:
    from bench.real_model_zoo import measure

    print(json.dumps(measure(name, device=device)))
    return 0


def _run_worker(name: str, device: str, timeout: float) -> dict:
    # A private Inductor cache per process: nothing carried over, and nothing another process
    # on the machine cleans up can vanish under the run.
    cache = tempfile.mkdtemp(prefix="real_models_inductor_")
    env = dict(os.environ, TORCHINDUCTOR_COMPILE_THREADS="1", TORCHINDUCTOR_CACHE_DIR=cache)
    env.setdefault("OMP_NUM_THREADS", "1" if device == "cpu" else env.get("OMP_NUM_THREADS", "4"))
    try:
        run = subprocess.run([sys.executable, __file__, "--worker", name, "--device", device],
                             capture_output=True, text=True, env=env, timeout=timeout, cwd=REPO)
    except subprocess.TimeoutExpired:
        return {"model": name, "error": f"timed out after {timeout:.0f} s", "rows": []}
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
    if run.returncode != 0 or not lines:
        tail = [line for line in run.stderr.strip().splitlines() if line.strip()][-1:] or ["no output"]
        return {"model": name, "error": f"could not build or run: {tail[0][:300]}", "rows": []}
    return json.loads(lines[-1])


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], capture_output=True, text=True, cwd=REPO,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def measure_all(names: list[str], device: str, timeout: float, out: Path,
                kept: list[dict] | None = None, jobs: int = 1) -> dict:
    """Every model in its own process, ``jobs`` processes at a time (each uses one thread on
    CPU: OMP_NUM_THREADS=1); the JSON is rewritten after each (a long run that is stopped keeps
    what it measured). ``kept``: earlier results of other models, kept in order."""
    results: list[dict] = [r for r in (kept or []) if r.get("model") not in names]
    order = {n: i for i, n in enumerate(_case_names())}
    commit = _commit()
    data = _document(results, device) if not names else {}

    def one(name: str) -> dict:
        start = time.perf_counter()
        result = _run_worker(name, device, timeout)
        result["seconds"] = round(time.perf_counter() - start, 1)
        result["commit"] = commit
        return result

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for result in pool.map(one, names):  # in the zoo's order, whichever finishes first
            print(f"{result['model']}: {result['seconds']} s"
                  + (f" ({result['error']})" if "error" in result else ""),
                  file=sys.stderr, flush=True)
            results.append(result)
            results.sort(key=lambda r: order.get(r.get("model"), len(order)))
            data = _document(results, device)
            out.write_text(json.dumps(data, indent=1) + "\n")
    return data


def _commit() -> str:
    dirty = _git("status", "--porcelain", "--", "lite_compiler", "lite_guard")
    commit = _git("rev-parse", "--short", "HEAD") or os.environ.get("LITE_BENCH_COMMIT", "unknown")
    return commit + (" (with uncommitted compiler edits)" if dirty else "")


def merge(out: Path, others: list[Path]) -> dict:
    """``out``'s results with every row of ``others`` added (a model present in several is taken
    from the last), in the zoo's order; each row keeps the commit it was measured at, and the
    document's commit lists them all. Rewrites ``out``."""
    data = json.loads(out.read_text())
    by_model = {r["model"]: {"commit": data["meta"]["commit"], **r} for r in data["results"]}
    for path in others:
        other = json.loads(path.read_text())
        if other["meta"].get("device") != data["meta"].get("device"):
            raise SystemExit(f"real_models: {path}: measured on {other['meta'].get('device')}, "
                             f"not {data['meta'].get('device')}; merge runs of one device")
        for result in other["results"]:
            by_model[result["model"]] = {"commit": other["meta"]["commit"], **result}
    order = {n: i for i, n in enumerate(_case_names())}
    results = sorted(by_model.values(), key=lambda r: order.get(r["model"], len(order)))
    commits = sorted({r["commit"] for r in results})
    data = {**data, "meta": {**data["meta"], "commit": ", ".join(commits),
                             "command": "python bench/real_models.py --merge "
                                        + " ".join(str(p) for p in others)},
            "results": results}
    out.write_text(json.dumps(data, indent=1) + "\n")
    return data


def _case_names() -> list[str]:
    from bench.real_model_zoo import CASES

    return list(CASES)


def _document(results: list[dict], device: str) -> dict:
    import torch

    from bench.real_model_zoo import UNBUILDABLE

    commits = sorted({r.get("commit", "") for r in results} - {""})
    return {
        "meta": {
            "command": "python bench/real_models.py " + " ".join(sys.argv[1:]),
            "commit": ", ".join(commits) or _commit(),
            "torch": torch.__version__, "device": device, "python": platform.python_version(),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores",
            "versions": _library_versions(),
        },
        "results": results,
        "unbuildable": UNBUILDABLE,
    }


def _library_versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in ("torchvision", "timm", "transformers"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "not installed"
    return found


def _cell(result: dict | None, reference_only: bool = False) -> str:
    if result is None:
        return "not run"
    if "error" in result:
        return f"error: {result['error']}".replace("|", "\\|")
    text = "bitwise" if result.get("bitwise") else f"differs ({result.get('detail', '')})"
    if "region_graphs" in result:
        text += f", {result['region_graphs']} region graphs"
    if result.get("skipped_region_modules"):
        text += f", {len(result['skipped_region_modules'])} region modules skipped (reported)"
    return text.replace("|", "\\|")


def measured_lines(data: dict) -> list[str]:
    """One provenance line per commit the rows were measured at (bench/provenance.py reads
    them): rows kept by --update from an earlier run keep their own commit and command."""
    by_commit: dict[str, list[str]] = {}
    for result in data["results"]:
        by_commit.setdefault(result.get("commit") or data["meta"]["commit"], []).append(result["model"])
    lines = []
    for commit, models in by_commit.items():
        sha, _, note = commit.partition(" ")
        command = (data["meta"]["command"] if len(by_commit) == 1 else
                   "python bench/real_models.py --models " + " ".join(
                       f"'{m}'" for m in models) + f" --device {data['meta']['device']}")
        lines.append(f"Measured: `{command}` at commit `{sha}`"
                     + (f" {note.strip('()')}" if note else "") + f" ({len(models)} model(s)).")
    return lines


def render(data: dict) -> str:
    meta = data["meta"]
    lines = [
        *measured_lines(data),
        "",
        # The commands and commits are the Measured lines above (one per commit); this line
        # says what every row ran on.
        f"Environment: torch {meta['torch']}, device {meta['device']} ({meta['machine']}); "
        + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()) + ".",
        "",
        "Models built offline from their classes with random init and tiny configs (nothing"
        " downloaded), `fullgraph=False`. *train*: forward + backward with fixed random output"
        " gradients, compared on every output, parameter gradient and floating buffer; *infer*:"
        " `eval()` under `no_grad`. bf16 is `torch.autocast(dtype=torch.bfloat16)`."
        " Reference: `backend=\"aot_eager\"`; *bitwise* means `torch.equal` on every tensor."
        " *ours + regions* puts the model's own modules (named in the row) into regions with"
        " `lite_compiler.module_regions`; region code is Inductor's, so a difference there is"
        " expected, and the column shows that the regions compiled.",
        "",
        "| model | mode | dtype | ours (`backend=\"lite\"`) | torch `mode=\"lite\"` | ours + regions |",
        "|---|---|---|---|---|---|",
    ]
    counts = {"ours": [0, 0], "upstream": [0, 0], "regions": [0, 0]}
    for result in data["results"]:
        if not result.get("rows"):
            lines.append(f"| {result['model']} | - | - | {result.get('error', 'no result')} | | |")
            continue
        if "," in meta["commit"] and result.get("commit"):
            result = {**result, "rows": [{**row, "model": f"{row['model']} ({result['commit']})"}
                                         for row in result["rows"]]}
        for row in result["rows"]:
            if "not_run" in row:  # a mode the model cannot run here, and why (never silent)
                lines.append(f"| {row['model']} | {row['mode']} | - | not run: {row['not_run']} | | |")
                continue
            for key, variant in (("ours", "lite"), ("upstream", "upstream_lite")):
                counts[key][1] += 1
                counts[key][0] += bool(row.get(variant, {}).get("bitwise"))
            counts["regions"][1] += 1
            counts["regions"][0] += "region_graphs" in row.get("lite_regions", {})
            if "error" in row.get("aot_eager", {}):
                lines.append(f"| {row['model']} | {row['mode']} | {row['dtype']} |"
                             f" reference failed: {_cell(row['aot_eager'])} | | |")
                continue
            lines.append(f"| {row['model']} | {row['mode']} | {row['dtype']} | {_cell(row.get('lite'))}"
                         f" | {_cell(row.get('upstream_lite'))} | {_cell(row.get('lite_regions'))} |")
    lines += [
        "",
        f"Ours bitwise on {counts['ours'][0]} of {counts['ours'][1]} runs; torch's `mode=\"lite\"`"
        f" on {counts['upstream'][0]} of {counts['upstream'][1]}. Ours with regions compiled and ran on"
        f" {counts['regions'][0]} of {counts['regions'][1]}.",
        "",
        "Not built here:",
        "",
    ]
    lines += [f"- {name}: {why}" for name, why in data.get("unbuildable", {}).items()] or ["- none"]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--models", nargs="*", default=[],
                        help="substrings of model names to run (default: all)")
    parser.add_argument("--json", type=Path, help="where to write the results JSON")
    parser.add_argument("--write", action="store_true", help="replace the BENCHMARKS.md section")
    parser.add_argument("--render", type=Path, help="render a saved results JSON instead of measuring")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per model process")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="models measured at once, each in its own one-thread process "
                             "(default: the CPU count; nothing in the section is timed)")
    parser.add_argument("--update", action="store_true",
                        help="keep the other models' results already in the JSON (rerun a few)")
    parser.add_argument("--merge", type=Path, nargs="+", metavar="JSON",
                        help="add the rows of other runs' results JSON (each row keeps its own "
                             "commit; a model in both is taken from the later file) to the "
                             "default results JSON, then render")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker, args.device)
    if args.render:
        data = json.loads(args.render.read_text())
    elif args.merge:
        data = merge(REPO / "bench" / "results" / f"real_models_{args.device}.json", args.merge)
    else:
        from bench.real_model_zoo import CASES

        names = [n for n in CASES if not args.models or any(s.lower() in n.lower() for s in args.models)]
        if not names:
            print(f"real_models: no model matches {args.models}; names: {', '.join(CASES)}",
                  file=sys.stderr)
            return 2
        out = args.json or REPO / "bench" / "results" / f"real_models_{args.device}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        kept, earlier = [], None
        if args.update and out.exists():
            earlier = json.loads(out.read_text())
            kept = [{"commit": earlier["meta"]["commit"], **r} for r in earlier["results"]]
        data = measure_all(names, args.device, args.timeout, out, kept, jobs=args.jobs)
        if earlier is not None:  # the table came from two commands: say both
            data["meta"]["command"] = f"{earlier['meta']['command']}`, then `{data['meta']['command']}"
            out.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {out}", file=sys.stderr)
    section = render(data)
    if args.write:
        from bench.markdown_section import replace_section

        replace_section(REPO / "BENCHMARKS.md", SECTION, section)
        print(f"wrote the '{SECTION}' section of BENCHMARKS.md", file=sys.stderr)
    else:
        print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
