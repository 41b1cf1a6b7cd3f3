"""What ``import lite_compiler`` and a first compile without regions cost, next to Dynamo's own.

Usage: python bench/import_probe.py [--device cuda|cpu] [--model mlp|llama|resnet] [--repeats R]
                                   [--json FILE] [--no-profile]

Every measurement is a fresh interpreter (``python bench/import_probe.py --child KIND``) with new
empty ``TORCHINDUCTOR_CACHE_DIR`` / ``TRITON_CACHE_DIR``; its clock starts before ``import torch``.
Children:

* ``dynamo``: ``import torch; import torch._dynamo`` (what every ``torch.compile`` imports);
* ``ours_import``: ``import torch; import lite_compiler``;
* ``ours_after_dynamo``: ``import torch; import torch._dynamo; import lite_compiler`` (our own part);
* ``transformers``: ``import torch; from transformers import LlamaForCausalLM`` (does a model
  library import Dynamo before any compile? then a benchmark that builds the model outside its
  clock has paid aot_eager's Dynamo import there);
* ``aot_eager`` / ``ours``: import (ours: lite_compiler), build the ``--model`` (a small MLP, or
  bench/gpu_models.py's ``llama`` / ``resnet``: their library is imported while building), then
  its first training step on ``--device``; each phase timed, clock from before ``import torch``;
  whether Dynamo was already imported before the first call (by the model's library).

Facts per child: wall seconds of each phase; how many modules of ``torch._inductor``,
``torch._dynamo`` and ``triton`` are loaded (and which of Inductor's); whether a CUDA context was
created (``torch.cuda.is_initialized()``, which is what ``_lazy_init`` sets). Once each, under
``python -X importtime``: the imports of ``dynamo`` and ``ours_import``, their largest entries
(cumulative and self), and the modules ours imports that Dynamo's import does not. With profiling
(default), ``cProfile`` of the whole ``aot_eager`` and ``ours`` first-call processes, compared
by source file (own time, ours minus aot_eager's): where ours spends what aot_eager does not.
"""

from __future__ import annotations

import time

_T0 = time.perf_counter()  # a child's clock: before any other import (torch's above all)

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
KINDS = ("dynamo", "ours_import", "ours_after_dynamo", "aot_eager", "ours")


# ---- in a child process ---------------------------------------------------------------------------

def _facts() -> dict:
    mods = list(sys.modules)
    torch = sys.modules.get("torch")
    cuda = bool(torch is not None and torch.cuda.is_initialized())
    return {"inductor_modules": sum(m.startswith("torch._inductor") for m in mods),
            "dynamo_modules": sum(m == "torch._dynamo" or m.startswith("torch._dynamo.") for m in mods),
            "triton_modules": sum(m == "triton" or m.startswith("triton.") for m in mods),
            "modules": len(mods), "cuda_initialized": cuda,
            "inductor": sorted(m for m in mods if m.startswith("torch._inductor")),
            "lite_compiler": sorted(m for m in mods if m.startswith("lite_compiler"))}


def _build(model_name: str, device: str):
    """(model, step): ``mlp`` (small, defined here) or ``llama``/``resnet`` (bench/gpu_models.py's
    models, the issue's benchmark: transformers / torchvision are imported here)."""
    import torch

    if model_name in ("llama", "resnet"):
        os.environ.setdefault("GPU_MODELS_DEVICE", device)
        sys.path.insert(0, str(REPO / "bench"))
        import gpu_models

        model, inputs = gpu_models.build(model_name)
        return model, lambda fn: gpu_models.step(model_name, fn, inputs)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.LayerNorm(512), torch.nn.GELU(),
                                torch.nn.Linear(512, 256)).to(device)
    x = torch.randn(64, 256, device=device)
    target = torch.zeros(64, dtype=torch.long, device=device)
    return model, lambda fn: torch.nn.functional.cross_entropy(fn(x), target).backward()


def _first_call(backend: str, device: str, model, step) -> None:
    import torch

    step(torch.compile(model, backend=backend))
    if device == "cuda":
        torch.cuda.synchronize()


def child(kind: str, device: str, model_name: str = "mlp") -> dict:
    times: dict[str, float] = {}
    mark = _T0

    def lap(name: str) -> None:
        nonlocal mark
        now = time.perf_counter()
        times[name] = round(now - mark, 4)
        mark = now

    import torch
    lap("import_torch")
    facts: dict = {}
    if kind == "dynamo":
        import torch._dynamo  # noqa: F401
        lap("import_package")
    elif kind == "ours_import":
        import lite_compiler  # noqa: F401
        lap("import_package")
    elif kind == "ours_after_dynamo":
        import torch._dynamo  # noqa: F401,F811
        lap("import_dynamo")
        import lite_compiler  # noqa: F401,F811
        lap("import_package")
    elif kind == "transformers":
        try:
            from transformers import LlamaForCausalLM  # noqa: F401
        except Exception as error:  # noqa: BLE001 - a fact to report, not a failure of the probe
            facts["error"] = f"{type(error).__name__}: {str(error)[:200]}"
        lap("import_transformers")
        facts["dynamo_imported_by_transformers"] = "torch._dynamo" in sys.modules
    elif kind in ("aot_eager", "ours"):
        if kind == "ours":
            import lite_compiler  # noqa: F401,F811
        lap("import_package")
        facts["after_import"] = {k: v for k, v in _facts().items() if k not in ("inductor", "lite_compiler")}
        model, step = _build(model_name, device)
        lap("build")
        # Whether building the model (its library's import) already imported Dynamo: then the
        # first call no longer pays Dynamo's import.
        facts["dynamo_before_first_call"] = "torch._dynamo" in sys.modules
        _first_call("lite" if kind == "ours" else "aot_eager", device, model, step)
        lap("first_call")
    else:
        raise SystemExit(f"import_probe: unknown child {kind!r}")
    times["total"] = round(time.perf_counter() - _T0, 4)
    return {"kind": kind, "times": times, **_facts(), **facts}


# ---- the parent ------------------------------------------------------------------------------------

def _env(tmp: str) -> dict:
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": os.path.join(tmp, "inductor"),
           "TRITON_CACHE_DIR": os.path.join(tmp, "triton")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


def run_child(kind: str, device: str, flags: tuple[str, ...] = (), model: str = "mlp") -> tuple[dict, str]:
    with tempfile.TemporaryDirectory(prefix="import_probe_") as tmp:
        command = [sys.executable, *flags, str(Path(__file__).resolve()), "--child", kind, "--device", device,
                   "--model", model]
        done = subprocess.run(command, capture_output=True, text=True, env=_env(tmp), cwd=tmp, timeout=600)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return {"kind": kind, "error": done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]}, done.stderr
    return json.loads(lines[-1]), done.stderr


def parse_importtime(stderr: str) -> list[tuple[str, int, int, int]]:
    """(module, self us, cumulative us, depth) for each line of ``-X importtime``, in order."""
    rows = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, cumulative, name = line[len("import time:"):].split("|", 2)
        depth = (len(name) - len(name.lstrip(" ")) - 1) // 2
        rows.append((name.strip(), int(own), int(cumulative), depth))
    return rows


def after_torch(rows: list[tuple[str, int, int, int]]) -> list[tuple[str, int, int, int]]:
    """The rows imported after ``import torch`` finished (its top-level row)."""
    for index, row in enumerate(rows):
        if row[0] == "torch" and row[3] == 0:
            return rows[index + 1:]
    return rows


def importtime_report(device: str, top: int) -> dict:
    report = {}
    loaded = {}
    for kind in ("dynamo", "ours_import"):
        _, stderr = run_child(kind, device, ("-X", "importtime"))
        rows = after_torch(parse_importtime(stderr))
        loaded[kind] = {name: own for name, own, _, _ in rows}
        report[kind] = {
            "modules": len(rows), "self_ms_sum": round(sum(r[1] for r in rows) / 1e3, 1),
            "top_cumulative_ms": [(n, round(c / 1e3, 1)) for n, _, c, _ in sorted(rows, key=lambda r: -r[2])[:top]],
            "top_self_ms": [(n, round(s / 1e3, 1)) for n, s, _, _ in sorted(rows, key=lambda r: -r[1])[:top]]}
    extra = {n: s for n, s in loaded["ours_import"].items() if n not in loaded["dynamo"]}
    report["ours_not_dynamo"] = {"modules": len(extra), "self_ms_sum": round(sum(extra.values()) / 1e3, 1),
                                 "top_self_ms": [(n, round(s / 1e3, 1)) for n, s in
                                                 sorted(extra.items(), key=lambda kv: -kv[1])[:top]]}
    missing = [n for n in loaded["dynamo"] if n not in loaded["ours_import"]]
    report["dynamo_not_ours"] = {"modules": len(missing), "examples": missing[:top]}
    return report


def profile_report(device: str, top: int, model: str) -> dict:
    """cProfile of each first-call process, own time per source file, ours minus aot_eager's."""
    import pstats

    per_file = {}
    for kind in ("aot_eager", "ours"):
        with tempfile.TemporaryDirectory(prefix="import_probe_prof_") as tmp:
            out = os.path.join(tmp, "prof")
            command = [sys.executable, "-m", "cProfile", "-o", out, str(Path(__file__).resolve()),
                       "--child", kind, "--device", device, "--model", model]
            done = subprocess.run(command, capture_output=True, text=True, env=_env(tmp), cwd=tmp, timeout=600)
            if done.returncode != 0:
                return {"error": done.stderr.strip().splitlines()[-1:]}
            files: dict[str, float] = {}
            for (filename, _, _), (_, _, tottime, _, _) in pstats.Stats(out).stats.items():  # type: ignore[attr-defined]
                short = filename
                for marker in ("site-packages/", "lib/python3"):
                    if marker in short:
                        short = short.split(marker, 1)[1]
                short = short.replace(str(REPO) + "/", "")
                files[short] = files.get(short, 0.0) + tottime
            per_file[kind] = files
    names = set(per_file["aot_eager"]) | set(per_file["ours"])
    diff = {n: per_file["ours"].get(n, 0.0) - per_file["aot_eager"].get(n, 0.0) for n in names}
    return {"total_s": {k: round(sum(v.values()), 3) for k, v in per_file.items()},
            "ours_minus_aot_eager_ms": [(n, round(d * 1e3, 1)) for n, d in
                                        sorted(diff.items(), key=lambda kv: -kv[1])[:top]],
            "aot_eager_minus_ours_ms": [(n, round(-d * 1e3, 1)) for n, d in
                                        sorted(diff.items(), key=lambda kv: kv[1])[:top // 2]]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--device", default=None, help="cuda when available, else cpu")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--model", default="mlp", choices=("mlp", "llama", "resnet"),
                        help="first-call model: mlp (small), or bench/gpu_models.py's llama / resnet")
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--json", help="write the full results here")
    parser.add_argument("--no-profile", action="store_true", help="skip the cProfile comparison")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.device or "cpu", args.model)))
        return 0
    device = args.device
    if device is None:
        found = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
                               capture_output=True, text=True)
        device = "cuda" if found.stdout.strip() == "True" else "cpu"
    versions = subprocess.run(
        [sys.executable, "-c", "import importlib.metadata as m, torch, json\n"
         "def v(n):\n  try: return m.version(n)\n  except Exception: return None\n"
         "print(json.dumps({'torch': torch.__version__, 'triton': v('triton'), 'transformers': v('transformers'),"
         " 'gpu': torch.cuda.get_device_name() if torch.cuda.is_available() else None}))"],
        capture_output=True, text=True)
    results: dict = {"device": device, "model": args.model, "python": sys.version.split()[0],
                     "versions": json.loads(versions.stdout.strip().splitlines()[-1]) if versions.returncode == 0 else None,
                     "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                                              capture_output=True, text=True).stdout.strip() or None,
                     "samples": {}}
    print(f"import_probe: device {device}, {results['versions']}, commit {results['commit']}", flush=True)
    for _ in range(args.repeats):  # interleaved: a load spike hits every kind alike
        for kind in KINDS:
            row, _ = run_child(kind, device, model=args.model)
            results["samples"].setdefault(kind, []).append(row)
    results["transformers"], _ = run_child("transformers", device)
    print(f"\n{'kind':<18} {'import torch':>12} {'import pkg':>10} {'build':>6} {'first call':>10} {'total':>7}"
          f"  {'inductor':>8} {'dynamo':>6} {'triton':>6} cuda  (median s of {args.repeats})")
    for kind, rows in results["samples"].items():
        good = [r for r in rows if "error" not in r]
        if not good:
            print(f"{kind:<18} error: {rows[0].get('error')}")
            continue

        def med(key: str) -> str:
            values = [r["times"][key] for r in good if key in r["times"]]
            return f"{statistics.median(values):.3f}" if values else "-"
        last = good[-1]
        print(f"{kind:<18} {med('import_torch'):>12} {med('import_package'):>10} {med('build'):>6} {med('first_call'):>10}"
              f" {med('total'):>7}  {last['inductor_modules']:>8} {last['dynamo_modules']:>6}"
              f" {last['triton_modules']:>6} {last['cuda_initialized']}")
        if "after_import" in last:
            a = last["after_import"]
            print(f"{'  after import':<18} inductor {a['inductor_modules']}, dynamo {a['dynamo_modules']},"
                  f" triton {a['triton_modules']}, cuda {a['cuda_initialized']};"
                  f" Dynamo imported before the first call: {last.get('dynamo_before_first_call')}")
    inductor = {k: set(v[-1].get("inductor", ())) for k, v in results["samples"].items()}
    if "ours" in inductor and "aot_eager" in inductor:
        print("inductor modules ours loads and aot_eager does not:", sorted(inductor["ours"] - inductor["aot_eager"]))
    print("inductor modules after import lite_compiler:", sorted(inductor.get("ours_import", ())))
    t = results["transformers"]
    print("transformers import:", t.get("error") or
          f"{t['times'].get('import_transformers')} s, imports torch._dynamo: {t.get('dynamo_imported_by_transformers')}")
    results["importtime"] = importtime_report(device, args.top)
    for kind in ("dynamo", "ours_import"):
        r = results["importtime"][kind]
        print(f"\n-X importtime after torch, {kind}: {r['modules']} modules, self sum {r['self_ms_sum']} ms")
        print("  top cumulative ms:", r["top_cumulative_ms"])
        print("  top self ms:", r["top_self_ms"])
    extra = results["importtime"]["ours_not_dynamo"]
    print(f"\nours imports, Dynamo's import does not: {extra['modules']} modules, {extra['self_ms_sum']} ms self:",
          extra["top_self_ms"])
    if not args.no_profile:
        results["profile"] = profile_report(device, args.top, args.model)
        p = results["profile"]
        print("\ncProfile first-call process, own time by file:", p.get("total_s") or p)
        for key in ("ours_minus_aot_eager_ms", "aot_eager_minus_ours_ms"):
            if key in p:
                print(f"  {key}:", p[key])
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
        print(f"\nwritten: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
