"""The rendering half of bench/gpu_models.py: results files -> the BENCHMARKS.md section.

Pure formatting (no torch, no processes), kept out of the measuring script so that a change of
how the section reads does not make the numbers it shows stale (bench/provenance.py follows the
measuring script's imports, and it imports nothing from here).

    python bench/gpu_models_render.py RESULTS_JSON [RESULTS_JSON ...]

takes bench/gpu_models.py's results (models split over GPUs or device calls are merged by commit
and ``GPU_BENCH_RUN``), bench/gpu_flex_attention.py's and bench/gpu_graph_breaks.py's, and
rewrites the section; the first run given is the headline.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script

from bench.gpu_models import MODELS, SECTION, median_round  # noqa: E402  (no torch at import)
from bench.markdown_section import replace_section  # noqa: E402


LABELS = {"eager": "eager", "aot_eager": "aot_eager", "inductor": "default Inductor",
          "cudagraphs_backend": "Dynamo `cudagraphs` backend", "upstream_lite": "upstream `mode=\"lite\"`",
          "ours": "ours `backend=\"lite\"`", "ours_cudagraphs": "ours + CUDA graphs",
          "ours_regions": "ours + regions (RMSNorm, MLP)",
          "ours_regions_cudagraphs": "ours + regions (RMSNorm, MLP) + CUDA graphs",
          "ours_layers": "ours + layer regions", "ours_layers_cudagraphs": "ours + layer regions + CUDA graphs",
          "ours_model_cudagraphs": "ours, whole model in one region, + CUDA graphs",
          "ours_fused": "ours + bitwise fusion", "ours_fused_cudagraphs": "ours + bitwise fusion + CUDA graphs",
          "ours_layers_fused_cudagraphs": "ours + layer regions + bitwise fusion + CUDA graphs",
          "ours_regions_fused_cudagraphs": "ours + regions (RMSNorm, MLP) + bitwise fusion + CUDA graphs",
          "ours_proven_fused_cudagraphs": "ours + bitwise fusion (proven signatures only) + CUDA graphs"}


def _peak(row: dict) -> str:
    """Peak MiB over the whole run; with the timed steps' own peak beside it where recorded."""
    steps = row.get("steps_peak_mem_mib")
    return f"{row['peak_mem_mib']:.0f}" + (f"; {steps:.0f}" if steps is not None else "")


def _error_cell(error: str) -> str:
    """The exception's own line out of a failed worker's last lines."""
    parts = [part.strip() for part in error.split(" | ")]
    named = [part for part in parts if re.match(r"[\w.]*(Error|Violation|Exception|InvalidBackend): ", part)]
    return (named[-1] if named else error)[:260]


def _steps(report: dict, model: str) -> dict[str, dict]:
    return {r["variant"]: r for r in report["rows"] if r["model"] == model and "step_ms" in r}


def _table(report: dict, model: str) -> list[str]:
    rows = [r for r in report["rows"] if r["model"] == model]
    by = _steps(report, model)
    inductor, aot = by.get("inductor", {}).get("step_ms"), by.get("aot_eager", {}).get("step_ms")
    lines = ["| variant | step ms (median, min) | / default Inductor | / aot_eager | first call s |"
             " package import s | first call + import s | process start to first step s |"
             " peak MiB (whole run; timed steps) |"
             " regions (Triton) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "step_ms" not in r:
            error = r.get("error", "")
            cell = (f"not run in this call ({error[len('not run: '):]})" if error.startswith("not run: ")
                    else f"**failed**: {_error_cell(error)}")  # a deadline is not a failure
            lines.append(f"| {LABELS.get(r['variant'], r['variant'])} | {cell} | | | | | | | | |")
            continue
        ratio = (lambda base: f"{r['step_ms'] / base:.2f}x" if base else "")
        regions = f"{r['region_graphs']} ({r['region_graphs_triton']})" if r.get("region_graphs") else ""
        lines.append(f"| {LABELS.get(r['variant'], r['variant'])} | {r['step_ms']:.2f} ({r['step_ms_min']:.2f})"
                     f" | {ratio(inductor)} | {ratio(aot)} | {r['first_call_s']:.2f} | {r['package_import_s']:.2f}"
                     f" | {r['first_call_incl_import_s']:.2f} | {_seconds(r.get('from_process_start_s'))}"
                     f" | {_peak(r)} | {regions} |")
    rounds = [r for r in rows if r.get("rounds")]
    if rounds:
        lines += ["", f"Each variant ran in {len(rounds[0]['rounds'])} interleaved rounds (fresh processes,"
                  " order rotated); the row is the median round. Step ms of every round:", ""]
        lines += [f"- {LABELS.get(r['variant'], r['variant'])}: "
                  + ", ".join(f"{x['step_ms']:.2f}" if "step_ms" in x else "failed" for x in r["rounds"])
                  for r in rounds]
    return lines


def _seconds(value) -> str:
    return "" if value is None else f"{value:.2f}"


GOALS = (  # (text, variant, baseline variant, limit, field)
    ("ours + CUDA graphs step <= 1.0x default Inductor", "ours_cudagraphs", "inductor", 1.0, "step_ms"),
    ("ours + CUDA graphs step <= 0.5x aot_eager", "ours_cudagraphs", "aot_eager", 0.5, "step_ms"),
    ("ours + bitwise fusion + CUDA graphs step <= 1.0x default Inductor", "ours_fused_cudagraphs",
     "inductor", 1.0, "step_ms"),
    ("ours + bitwise fusion + CUDA graphs step <= 0.5x aot_eager", "ours_fused_cudagraphs",
     "aot_eager", 0.5, "step_ms"),
    ("ours + regions (RMSNorm, MLP) + CUDA graphs step <= 0.8x default Inductor",
     "ours_regions_cudagraphs", "inductor", 0.8, "step_ms"),
    ("ours + regions (RMSNorm, MLP) + bitwise fusion + CUDA graphs step <= 0.8x default Inductor",
     "ours_regions_fused_cudagraphs", "inductor", 0.8, "step_ms"),
    ("ours + layer regions + CUDA graphs step <= 0.8x default Inductor",
     "ours_layers_cudagraphs", "inductor", 0.8, "step_ms"),
    ("(whole model in one region + CUDA graphs <= 0.8x default Inductor)",
     "ours_model_cudagraphs", "inductor", 0.8, "step_ms"),
    ("ours first call <= 1.2x aot_eager's (compile + first step)", "ours", "aot_eager", 1.2, "first_call_s"),
    ("(same, including the import of lite_compiler; the issue sets this one on CPU)", "ours", "aot_eager", 1.2,
     "first_call_incl_import_s"),
    ("(same, from process start: imports, model build, compile and first step)", "ours", "aot_eager",
     1.2, "from_process_start_s"),
)


def _goals(report: dict) -> list[str]:
    """The issue's must-show lines, judged on this run's rows, per model."""
    models = [m for m in MODELS if _steps(report, m)]
    lines = ["| goal | " + " | ".join(models) + " |", "|---|" + "---|" * len(models)]
    for text, variant, base, limit, field in GOALS:
        cells = []
        for model in models:
            by = _steps(report, model)
            if variant not in by or base not in by or field not in by[variant] or field not in by[base]:
                cells.append("not measured")
                continue
            value = by[variant][field] / by[base][field]
            cells.append(f"{value:.2f}x: {'met' if value <= limit else '**not met**'}")
        if any(c != "not measured" for c in cells):
            lines.append(f"| {text} | " + " | ".join(cells) + " |")
    if not report["checks"]:
        return lines if len(lines) > 2 else []
    for variant, text in (("ours_cudagraphs", "ours + CUDA graphs"),
                          ("ours_fused_cudagraphs", "ours + bitwise fusion + CUDA graphs")):
        cells = []
        for model in models:
            check = next((c for c in report["checks"] if c.get("model") == model), {})
            value = check.get(f"{variant}_bitwise_equal_to_aot_eager")
            cells.append("not measured" if value is None else ("met" if value else "**not met**"))
        lines.append(f"| {text} bitwise equal to aot_eager (strict determinism) | " + " | ".join(cells) + " |")
    return lines if len(lines) > 2 else []  # no goal this run could judge: no empty table


def _kernels(report: dict, model: str) -> list[str]:
    """GPU kernel time per step by category, for the profiled variants."""
    rows = [r for r in report["rows"] if r["model"] == model and "kernels" in r]
    if not rows:
        return []
    categories = list(dict.fromkeys(c for r in rows for c in r["kernels"]["by_category_ms"]))
    lines = ["| variant | step ms | kernel time ms | idle (step - kernel) ms | kernels | "
             + " | ".join(categories) + " |", "|---|---|---|---|---|" + "---|" * len(categories)]
    for r in rows:
        k = r["kernels"]
        lines.append(f"| {LABELS.get(r['variant'], r['variant'])} | {r['step_ms']:.2f} | {k['busy_ms']:.2f} |"
                     f" {r['step_ms'] - k['busy_ms']:.2f} | {k['kernels']} | "
                     + " | ".join(f"{k['by_category_ms'].get(c, 0.0):.2f}" for c in categories) + " |")
    return lines


def _flex_rounds(flex: dict) -> dict[str, list[dict]]:
    """Each variant's rows, one per round (a run without rounds has one)."""
    by_variant: dict[str, list[dict]] = {}
    for r in flex["rows"]:
        by_variant.setdefault(r["variant"], []).append(r)
    return by_variant


def _flex(flex: dict) -> list[str]:
    by_variant = _flex_rounds(flex)
    rows = {name: median_round([r for r in runs if "step_ms" in r]) for name, runs in by_variant.items()
            if any("step_ms" in r for r in runs)}
    default = rows.get("default inductor", {}).get("step_ms")
    rounds = max((len(runs) for runs in by_variant.values()), default=1)
    lines = ["| variant | step ms (median round) | / default mode | host ms | first call s |"
             " peak MiB (whole run; timed steps) |"
             + (" rounds' step ms |" if rounds > 1 else "") + " CUDA graphs |",
             "|---|---|---|---|---|---|" + ("---|" if rounds > 1 else "") + "---|"]
    for name, runs in by_variant.items():
        if name not in rows:
            lines.append(f"| {name} | **failed**: {_error_cell(runs[-1].get('error', ''))} | | | | |"
                         + (" |" if rounds > 1 else "") + " |")
            continue
        r = rows[name]
        ratio = f"{r['step_ms'] / default:.2f}x" if default else ""
        each = (" " + " / ".join(f"{x['step_ms']:.3f}" if "step_ms" in x else "failed" for x in runs)
                + " |") if rounds > 1 else ""
        host = f"{r['host_ms']:.3f}" if "host_ms" in r else ""
        lines.append(f"| {name} | {r['step_ms']:.4f} | {ratio} | {host} | {r['first_call_s']:.2f} |"
                     f" {_peak(r)} |{each} {'; '.join(r.get('cudagraphs', []))} |")
    checks = {k: v for k, v in flex.get("checks", {}).items() if k not in ("process_s", "variant")}
    if "error" in checks:
        checks["error"] = _error_cell(checks["error"])
    lines += ["", "Checks: " + "; ".join(f"{k}: {v}" for k, v in checks.items()) + "."]
    for name in ("lite-guard lite", "lite-guard lite + cudagraphs", "lite-guard lite + bitwise fusion",
                 "lite-guard lite + cudagraphs + bitwise fusion"):
        if name in rows and default:
            lines.append(_flex_goal(name, rows[name]["step_ms"] / default,
                                    _round_ratios(by_variant.get(name, []),
                                                  by_variant.get("default inductor", []))))
    return lines


def _round_ratios(runs: list[dict], defaults: list[dict]) -> list[float]:
    """A variant's step over default mode's, within each round both measured (interleaved
    processes: a slow stretch of the machine falls on both)."""
    base = {r.get("round"): r["step_ms"] for r in defaults if "step_ms" in r}
    return [r["step_ms"] / base[r.get("round")] for r in runs
            if "step_ms" in r and base.get(r.get("round"))]


def _flex_goal(name: str, median_ratio: float, per_round: list[float]) -> str:
    """The goal line: with several rounds it is met only when met within every round (the median of
    an even number of rounds would be the faster one)."""
    if len(per_round) < 2:
        return (f"Goal \"region step <= 1.0x default mode\", {name}: {median_ratio:.2f}x:"
                f" {'met' if median_ratio <= 1.0 else '**not met**'}.")
    met = sum(ratio <= 1.0 for ratio in per_round)
    verdict = "met" if met == len(per_round) else "**not met**"
    return (f"Goal \"region step <= 1.0x default mode\", {name}: "
            + ", ".join(f"{ratio:.2f}x" for ratio in per_round)
            + f" within its rounds, met in {met} of {len(per_round)}: {verdict}.")


def markdown(report: dict, flex: dict | None = None) -> str:
    out = [f"Produced by `{report.get('command', 'python bench/gpu_models.py')}`"
           f" with the device tool on one {report['device']} (torch {report['torch']});"
           f" code: {report['commit']}{_note(report)}.",
           "",
           "Each variant is a fresh process with empty Inductor/Triton caches; its clock starts before"
           " `import torch`; the package under test (`lite_compiler`) is imported after that and its import"
           f" time is its own column. Step = forward + loss + backward, median of {report['iters']} CUDA-event"
           f" timed steps after 5 warm-ups (min in brackets).{_pinning(report)} Timing runs use"
           f" `{report.get('deterministic_timing')}`; the bitwise check uses `{report.get('deterministic_check')}`"
           " (strict); every process has `CUBLAS_WORKSPACE_CONFIG=:4096:8`. Regions are put on with"
           " `lite_compiler.module_regions` (no edit of the model): *regions (RMSNorm, MLP)* = every"
           " layer's norms and MLP under one id; *layer regions* = every `LlamaDecoderLayer` (resnet:"
           " every `BasicBlock`) in a region of its own, attention and residual adds included. The"
           " *regions* column counts region graphs (forward and backward) and how many compiled to Triton.",
           "",
           *_model_tables(report)]
    out += ["**Bitwise check** (strict determinism; three training steps from the same weights and inputs in"
            " one process; output, loss and every parameter's grad, `torch.equal` against aot_eager):", ""]
    if not report["checks"]:
        out.append("Not run in this call (`--no-check`); the newest check is in the runs below.")
    else:
        out += ["| model | tensors per step | ours | ours + CUDA graphs | ours + bitwise fusion + CUDA graphs"
                " | Dynamo `cudagraphs` backend |",
                "|---|---|---|---|---|---|"]
    for c in report["checks"]:
        if "error" in c:
            out.append(f"| {c['model']} | **failed**: {c['error'][:160]} | | | | |")
            continue
        cell = (lambda v: "not checked" if f"{v}_bitwise_equal_to_aot_eager" not in c
                else "bitwise equal" if c[f"{v}_bitwise_equal_to_aot_eager"]
                else "differs: " + ", ".join(c[f"{v}_differs"]))
        out.append(f"| {c['model']} | {c['tensors_per_step']} x {c['steps']} steps | {cell('ours')} |"
                   f" {cell('ours_cudagraphs')} | {cell('ours_fused_cudagraphs')} | {cell('cudagraphs_backend')} |")
    out += ["", "**Goals of issue #13** (this run):", "", *_goals(report)]
    for model in MODELS:
        lines = _kernels(report, model)
        if lines:
            out += ["", f"**Where the step time goes** ({model}; one profiled step after timing, torch.profiler;"
                    " kernel time by category, ms; kernels inside a CUDA-graph replay counted one by one):", "",
                    *lines]
    breakdown = next((r for r in report["rows"] if "region_breakdown" in r and r["model"] == "llama"), None)
    if breakdown:
        b, a = breakdown["region_breakdown"]["through_inductor_call"], breakdown["region_breakdown"]["direct"]
        out += ["", f"**Region boundaries** (llama, {LABELS[breakdown['variant']]}, one step without CUDA graphs,"
                f" host side): {a['region_calls_per_step']} region calls per step; host time per step"
                f" {a['host_ms_per_step']} ms, of which {a['host_ms_in_regions']} ms inside region calls,"
                f" {a['host_ms_in_generated_code']} ms of that in Inductor's generated code (kernel launches);"
                f" boundary overhead per call {b['host_us_boundary_per_call']} us through"
                f" `CompiledFxGraph.__call__` vs {a['host_us_boundary_per_call']} us calling its"
                f" `current_callable` directly (what lite does); misaligned-input copies per step:"
                f" {a['misaligned_input_copies_per_step']}."]
    if flex:  # (markdown_runs renders flex runs itself)
        out += ["", f"**Seed flex-attention example** (`{flex.get('command', 'python bench/gpu_flex_attention.py')}`,"
                " same run; sin -> flex_attention(score_mod, block mask) -> cos, bf16, 1 x 1 x 768 x 64,"
                " forward + backward; each variant a fresh process with empty caches; ours and upstream"
                " lite compile flex_attention as a region, default mode compiles everything):", "",
                *_flex(flex)]
    return "\n".join(out)


def _model_tables(report: dict) -> list[str]:
    """The step table of each model the run measured."""
    heads = {"llama": f"**HF `LlamaForCausalLM`** (random init; {report['llama']}; SDPA, bf16; vocab and MLP"
                      " width are LlamaConfig's defaults, 32000 and 11008):",
             "resnet": f"**torchvision `resnet18`** (random init; {report['resnet']}; bf16; AdaptiveAvgPool2d"
                       " replaced by the same mean, which strict determinism needs):"}
    out = []
    for model in MODELS:
        if any(r["model"] == model for r in report["rows"]):
            out += [heads[model], "", *_table(report, model), ""]
    return out


def _breaks(rows: list[dict]) -> list[str]:
    lines = ["| model | regions | Dynamo graphs | first break reason |", "|---|---|---|---|"]
    for r in rows:
        reason = (r.get("error") or (r.get("break_reasons") or [""])[0]).split("\n")[0][:140]
        where = (r.get("break_where") or [""])[0]
        where = where[where.find("lite_compiler"):].split(">")[0] if "lite_compiler" in where else ""
        lines.append(f"| {r['model']} | {r['regions']} | {r.get('graphs', '')} |"
                     f" {reason}{' (' + where + ')' if where else ''} |")
    return lines


def markdown_runs(loaded: list[dict]) -> str:
    """The section from every results file: runs of bench/gpu_models.py grouped by commit (the
    first is the main run), flex-attention runs, graph-break diagnoses."""
    models = [r for r in loaded if isinstance(r, dict) and "rows" in r and r.get("benchmark") != "flex_attention"]
    flex = [r for r in loaded if isinstance(r, dict) and r.get("benchmark") == "flex_attention"]
    breaks = [r for r in loaded if isinstance(r, list)]
    runs: dict[str, list[dict]] = {}
    for report in models:  # one run: one commit and one GPU_BENCH_RUN label (one device call)
        runs.setdefault((report["commit"], report.get("run", "")), []).append(report)
    groups = [merge(group) for group in runs.values()]
    out = [markdown(groups[0])]
    for later in groups[1:]:
        measured = ", ".join(m for m in MODELS if any(r["model"] == m for r in later["rows"]))
        out += ["", f"### Another run: {measured} (code {later['commit']}{_note(later)})", "",
                f"`{later.get('command', '')}`. Same harness; default Inductor measured again in this run,"
                " so the ratios below are within the run." + _pinning(later), "", *_model_tables(later),
                *_goals(later)]
        for model in MODELS:
            lines = _kernels(later, model)
            if lines:
                out += ["", f"Kernel time per step ({model}, ms, as above):", "", *lines]
        row = next((r for r in later["rows"] if "region_breakdown" in r), None)
        if row:
            b, a = row["region_breakdown"]["through_inductor_call"], row["region_breakdown"]["direct"]
            out += ["", f"Region boundaries ({LABELS[row['variant']]}, no CUDA graphs, host side):"
                    f" {a['region_calls_per_step']} region calls per step, {a['host_us_boundary_per_call']} us"
                    f" each calling the generated code directly ({b['host_us_boundary_per_call']} us through"
                    f" `CompiledFxGraph.__call__`), {a['misaligned_input_copies_per_step']} misaligned-input copies."]
    for report in flex:
        out += ["", f"### Seed flex-attention example (code {report.get('commit')}{_note(report)})", "",
                f"`{report.get('command', 'python bench/gpu_flex_attention.py')}`."
                " sin -> flex_attention(score_mod, block mask) -> cos, bf16, 1 x 1 x 768 x 64, forward +"
                " backward, median of 50; each variant a fresh process with empty caches; ours and upstream"
                " lite compile flex_attention as a region, default mode compiles everything."
                + _pinning(report), "", *_flex(report)]
    for rows in breaks:
        out += ["", f"### Does `module_regions` break the Dynamo graph? (torch {rows[0].get('torch', '')},"
                " `bench/gpu_graph_breaks.py`, tiny sizes, `torch._dynamo.explain`)", "", *_breaks(rows)]
    return "\n".join(out)


def _pinning(report: dict) -> str:
    """Where the timed steps ran: pinned to one core (bench/steady_cpu.py) or wherever the
    scheduler put them (runs before it, whose rows have no "cpu")."""
    cpus = {r.get("cpu") for r in report.get("rows", []) if "step_ms" in r}
    if not cpus or None in cpus:
        return " Steady state not pinned to a core."
    return f" Steady state pinned to core {', '.join(map(str, sorted(cpus)))} after each first call."


def _note(report: dict) -> str:
    """"; machine; code note" where a results file says them."""
    return "".join(f"; {report[k]}" for k in ("machine", "code_note") if report.get(k))


def merge(reports: list[dict]) -> dict:
    """One report from several runs of the same code (e.g. one model per GPU, in parallel)."""
    merged = {**reports[0], "rows": [], "checks": []}
    for key in ("llama", "resnet"):
        merged[key] = next((r[key] for r in reports if any(row["model"] == key for row in r["rows"])),
                           reports[0][key])
    merged["command"] = "; ".join(dict.fromkeys(r.get("command", "") for r in reports))
    for report in reports:
        merged["rows"] += report["rows"]
        merged["checks"] += report["checks"]
    return merged


def provenance_lines(loaded: list) -> str:
    """One ``Measured:`` line per commit the results files say they measured (not this
    checkout's HEAD), naming the commands those files say ran (not the session script, which a
    device call may not have used), so a reader can rerun exactly them."""
    commands: dict[str, dict[str, None]] = {}
    for r in loaded:
        if isinstance(r, dict) and r.get("commit"):
            commands.setdefault(r["commit"].split()[0], {})[r.get("command", "")] = None
    return "\n".join(f"Measured: `{'; '.join(c for c in ran if c) or 'bench/gpu_session.sh'}`"
                     f" at commit `{commit}` (a clean snapshot on the H200; rendered by"
                     " `python bench/gpu_models_render.py`)."
                     for commit, ran in commands.items())


def main(paths: list[str]) -> int:
    loaded = [json.loads(Path(path).read_text()) for path in paths]
    body = (provenance_lines(loaded) + "\n\n" + markdown_runs(loaded) + "\n\n"
            + (Path(__file__).parent / "gpu_models_notes.md").read_text())
    replace_section(Path(__file__).parent.parent / "BENCHMARKS.md", SECTION, body)
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if len(sys.argv) > 1 else 2)
    sys.exit(main(sys.argv[1:]))
