"""GPU training-step benchmark on real third-party models: lite mode vs eager, aot_eager, Inductor.

Models (random init, nothing downloaded):
  llama   Hugging Face ``LlamaForCausalLM``: 4 layers, hidden 1024, 16 heads / 8 KV heads, SDPA,
          bf16, batch 4 x 1024 tokens; one step = forward with labels (loss inside), backward.
  resnet  torchvision ``resnet18``, bf16, batch 64 x 3 x 224 x 224, cross-entropy, backward. Its
          ``AdaptiveAvgPool2d`` is replaced by the same mean over H, W: strict deterministic
          mode has no deterministic CUDA backward for AdaptiveAvgPool2d (it raises).

Variants: eager, aot_eager, default Inductor, Dynamo's ``cudagraphs`` backend, upstream
``mode="lite"`` (torch's own), ours (``backend="lite"``), ours + CUDA graphs
(``options={"cudagraphs": True}``), ours + regions (llama only: RMSNorm and MLP of every layer,
one region id, via ``lite_compiler.module_regions``), ours + layer regions (every
``LlamaDecoderLayer`` / resnet ``BasicBlock`` in a region of its own: how a user who wants speed
annotates), each of the last two also + CUDA graphs; and the whole model in one region + CUDA
graphs (the bound of what regions can give).

Honest numbers: every variant runs in its own fresh process with empty Inductor / Triton caches;
its clock starts before ``import torch``; the import of the package under test (lite_compiler
for ours) is reported separately and also added into ``first_call_incl_import_s``. Step time is
the median of ``--iters`` CUDA-event-timed steps after warm-up; peak memory is
``torch.cuda.max_memory_allocated`` over the whole run (first call and its checks included) and,
beside it, over the timed steps alone (``steps_peak_mem_mib``).

Timed runs use ``torch.use_deterministic_algorithms(True, warn_only=True)`` (as the issue's
table): strict mode also excludes the fast SDPA backward on this GPU, which makes every variant
GPU-bound and slower. Bitwise check (separate fresh process per model) is strict:
``torch.use_deterministic_algorithms(True)`` with ``CUBLAS_WORKSPACE_CONFIG=:4096:8``; aot_eager,
ours, ours + CUDA graphs and Dynamo's cudagraphs backend in one process from the same weights and
inputs, three steps each; logits (llama) / output, loss and every parameter's grad compared with
``torch.equal``. All processes get ``CUBLAS_WORKSPACE_CONFIG=:4096:8``.

    python bench/gpu_models.py --json bench/results/gpu_models_h200_llama.json --models llama
    python bench/gpu_models.py --json x.json --models llama --variants ours,ours_cudagraphs
    # one model per GPU, in parallel, then one section from both files:
    CUDA_VISIBLE_DEVICES=0 python bench/gpu_models.py --models llama --json a.json &
    CUDA_VISIBLE_DEVICES=1 python bench/gpu_models.py --models resnet --json b.json; wait
    python bench/gpu_models_render.py a.json b.json   (the section, from results files)
"""

from __future__ import annotations

import time

_T0 = time.perf_counter()  # before torch: the clock of a worker process starts here

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script
from bench.steady_cpu import pin_to_one_cpu  # noqa: E402

VARIANTS = ("eager", "aot_eager", "inductor", "cudagraphs_backend", "upstream_lite", "ours",
            "ours_cudagraphs", "ours_regions", "ours_regions_cudagraphs", "ours_layers",
            "ours_layers_cudagraphs", "ours_model_cudagraphs", "ours_fused", "ours_fused_cudagraphs",
            "ours_layers_fused_cudagraphs", "ours_regions_fused_cudagraphs", "ours_proven_fused_cudagraphs")
# Which modules go into regions: "regions" = llama's RMSNorms + MLP (one id), "layers" = every
# decoder layer / residual block in a region of its own.
REGION_KIND = {"ours_regions": "norm_mlp", "ours_regions_cudagraphs": "norm_mlp",
               "ours_layers": "layers", "ours_layers_cudagraphs": "layers",
               "ours_model_cudagraphs": "model", "ours_layers_fused_cudagraphs": "layers",
               "ours_regions_fused_cudagraphs": "norm_mlp"}
REGION_VARIANTS = set(REGION_KIND)
OURS = {"ours", "ours_cudagraphs", "ours_fused", "ours_fused_cudagraphs", "ours_proven_fused_cudagraphs",
        *REGION_VARIANTS}
# options={"bitwise_fusion": True}: pointwise ops outside regions fused where proven bitwise
FUSED_VARIANTS = {"ours_fused", "ours_fused_cudagraphs", "ours_layers_fused_cudagraphs",
                  "ours_regions_fused_cudagraphs", "ours_proven_fused_cudagraphs"}  # "proven": exhaustively proven signatures only
CUDAGRAPH_VARIANTS = {"cudagraphs_backend", "ours_cudagraphs", "ours_regions_cudagraphs",
                      "ours_layers_cudagraphs", "ours_model_cudagraphs", "ours_fused_cudagraphs",
                      "ours_layers_fused_cudagraphs", "ours_regions_fused_cudagraphs",
                      "ours_proven_fused_cudagraphs"}
# Variants whose GPU kernels are profiled (one extra step after timing): where the time goes.
PROFILED = {"aot_eager", "inductor", "ours_fused", "ours_cudagraphs", "ours_regions_cudagraphs",
            "ours_layers_cudagraphs", "ours_model_cudagraphs", "ours_fused_cudagraphs"}
# The device: "cuda" for measurements; GPU_MODELS_DEVICE=cpu (with --tiny) smoke-tests the harness.
DEVICE = os.environ.get("GPU_MODELS_DEVICE", "cuda")
MODELS = ("llama", "resnet")
SECTION = "GPU: real models, one training step (H200)"
# What the section measures beyond this script's imports (bench/provenance.py: staleness).
MEASURES = ("bench/gpu_session.sh", "bench/gpu_flex_attention.py", "bench/gpu_graph_breaks.py")
LLAMA = dict(layers=4, hidden=1024, heads=16, kv_heads=8, batch=4, seq=1024)
RESNET = dict(batch=64, size=224, classes=1000)
if os.environ.get("GPU_MODELS_TINY"):  # --tiny: a smoke run of the harness, not a measurement
    LLAMA = dict(layers=2, hidden=256, heads=4, kv_heads=2, batch=2, seq=128)
    RESNET = dict(batch=4, size=64, classes=10)


# ---- models --------------------------------------------------------------------------------------

def build(model_name: str, seed: int = 0):
    """(model, inputs, step) on CUDA, bf16, random init from ``seed``."""
    import torch

    if DEVICE == "cpu":  # a smoke run on a CPU torch, whose torchvision may be a CUDA build
        from lite_compiler.testing import ensure_torchvision_importable

        ensure_torchvision_importable()
    torch.manual_seed(seed)
    if model_name == "llama":
        from transformers import LlamaConfig, LlamaForCausalLM

        config = LlamaConfig(num_hidden_layers=LLAMA["layers"], hidden_size=LLAMA["hidden"],
                             num_attention_heads=LLAMA["heads"], num_key_value_heads=LLAMA["kv_heads"],
                             attn_implementation="sdpa", use_cache=False)
        if os.environ.get("GPU_MODELS_TINY"):
            config.vocab_size, config.intermediate_size = 1000, 512
        model = LlamaForCausalLM(config).to(DEVICE, torch.bfloat16)
        gen = torch.Generator(device=DEVICE).manual_seed(seed + 1)
        ids = torch.randint(0, config.vocab_size, (LLAMA["batch"], LLAMA["seq"]), device=DEVICE,
                            generator=gen)
        return model, (ids, ids.clone())
    import torchvision

    class MeanPool(torch.nn.Module):
        def forward(self, x):
            return x.mean(dim=(2, 3), keepdim=True)

    model = torchvision.models.resnet18(num_classes=RESNET["classes"])
    model.avgpool = MeanPool()
    model = model.to(DEVICE, torch.bfloat16)
    gen = torch.Generator(device=DEVICE).manual_seed(seed + 1)
    x = torch.randn(RESNET["batch"], 3, RESNET["size"], RESNET["size"], device=DEVICE,
                    dtype=torch.bfloat16, generator=gen)
    y = torch.randint(0, RESNET["classes"], (RESNET["batch"],), device=DEVICE, generator=gen)
    return model, (x, y)


def step(model_name: str, fn, inputs):
    """One training step: forward, loss, backward. Returns (output, loss)."""
    import torch

    if model_name == "llama":
        ids, labels = inputs
        out = fn(input_ids=ids, labels=labels)
        out.loss.backward()
        return out.logits, out.loss
    x, y = inputs
    out = fn(x)
    loss = torch.nn.functional.cross_entropy(out.float(), y)
    loss.backward()
    return out, loss


def apply_regions(model_name: str, model, kind: str) -> dict:
    """Put modules into regions with ``lite_compiler.module_regions`` (no edit of the model).

    ``norm_mlp`` (llama): every layer's RMSNorms and MLP in one region id, so a norm and the MLP
    right after it compile as one region (one call, one Inductor graph).
    ``layers``: every ``LlamaDecoderLayer`` (resnet: every ``BasicBlock``) in a region of its own,
    attention and residual adds included: the annotation a user who wants speed writes.
    ``model``: the whole model (loss included) in one region: nothing left to lite's fallback,
    the upper bound of what regions can give (not one of the issue's goals)."""
    import lite_compiler

    if kind == "model":
        rules = [lite_compiler.RegionRule("", id="model")]
    elif kind == "layers":
        if model_name == "llama":
            from transformers.models.llama.modeling_llama import LlamaDecoderLayer as block
        else:
            from torchvision.models.resnet import BasicBlock as block
        rules = [lite_compiler.RegionRule(block, id="{name}")]
    elif model_name == "llama":
        rules = [lite_compiler.RegionRule(f"model.layers.*.{name}", id="norm_mlp")
                 for name in ("input_layernorm", "post_attention_layernorm", "mlp")]
    else:
        raise SystemExit(f"regions {kind!r} are defined for the llama model only")
    return lite_compiler.module_regions(model, rules).assignments


def compiled(variant: str, model):
    import torch

    upstream = getattr(torch.compile, "__wrapped__", torch.compile)  # torch's own, unwrapped
    if variant == "eager":
        return model
    if variant == "aot_eager":
        return upstream(model, backend="aot_eager")
    if variant == "inductor":
        return upstream(model)
    if variant == "cudagraphs_backend":
        return upstream(model, backend="cudagraphs")
    if variant == "upstream_lite":
        return upstream(model, mode="lite")
    options = {"cudagraphs": True} if variant in CUDAGRAPH_VARIANTS else {}
    if variant in FUSED_VARIANTS:
        options["bitwise_fusion"] = "proven" if "proven" in variant else True
    return torch.compile(model, backend="lite", options=options or None)


# ---- one variant in this (fresh) process ---------------------------------------------------------

def worker(model_name: str, variant: str, iters: int) -> dict:
    import torch
    torch_import = time.perf_counter() - _T0
    package_import = 0.0
    if variant in OURS:
        started = time.perf_counter()
        import lite_compiler  # noqa: F401  (the package under test)
        package_import = time.perf_counter() - started
    inductor_modules_after_import = sum(m.startswith("torch._inductor") for m in sys.modules)
    torch.use_deterministic_algorithms(True, warn_only=True)  # timing; the check is strict
    model, inputs = build(model_name)
    regions = apply_regions(model_name, model, REGION_KIND[variant]) if variant in REGION_VARIANTS else {}
    gpu = DEVICE == "cuda"
    sync = torch.cuda.synchronize if gpu else (lambda: None)
    sync()
    if gpu:
        torch.cuda.reset_peak_memory_stats()
    mark = (torch.compiler.cudagraph_mark_step_begin if variant in CUDAGRAPH_VARIANTS
            else (lambda: None))

    started = time.perf_counter()
    fn = compiled(variant, model)
    mark()
    step(model_name, fn, inputs)
    sync()
    first_call = time.perf_counter() - started
    # Everything from before `import torch` to the end of the first step (imports, model build and
    # compile included): the same work for every variant, whoever imports Dynamo first.
    from_process_start = time.perf_counter() - _T0
    cpu = pin_to_one_cpu()  # after the compile: every variant's steady state on the same core
    for _ in range(5):
        model.zero_grad(set_to_none=True)
        mark()
        step(model_name, fn, inputs)
    sync()
    if gpu:  # the whole run's peak so far; then the timed steps' own (what training holds)
        run_peak = torch.cuda.max_memory_allocated()
        torch.cuda.reset_peak_memory_stats()
    times, host_times = [], []
    for _ in range(iters):
        model.zero_grad(set_to_none=True)
        if gpu:
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
        host_begin = time.perf_counter()
        mark()
        step(model_name, fn, inputs)
        # The host's own time for the step (no sync): above the step time, the GPU waits on it.
        host_times.append((time.perf_counter() - host_begin) * 1e3)
        if gpu:
            end.record()
            torch.cuda.synchronize()
            times.append(begin.elapsed_time(end))
        else:
            times.append((time.perf_counter() - host_begin) * 1e3)
    row = {"model": model_name, "variant": variant, "step_ms": round(statistics.median(times), 3),
           "step_ms_min": round(min(times), 3), "host_ms": round(statistics.median(host_times), 3),
           "cpu": cpu,
           "first_call_s": round(first_call, 3),
           "package_import_s": round(package_import, 3),
           "first_call_incl_import_s": round(first_call + package_import, 3),
           "torch_import_s": round(torch_import, 3),
           "from_process_start_s": round(from_process_start, 3),
           "peak_mem_mib": round(max(run_peak, torch.cuda.max_memory_allocated()) / 2**20, 1) if gpu else 0.0,
           "steps_peak_mem_mib": round(torch.cuda.max_memory_allocated() / 2**20, 1) if gpu else 0.0,
           "inductor_modules_after_package_import": inductor_modules_after_import}
    if variant in OURS:
        row.update(_ledger_summary())
    if regions:
        row["regions"] = len(regions)
        if variant not in CUDAGRAPH_VARIANTS:  # a replay calls no region from Python
            row["region_breakdown"] = region_breakdown(model_name, fn, inputs, model, mark)
    if variant in PROFILED and os.environ.get("GPU_MODELS_PROFILE"):
        row["kernels"] = kernel_profile(model_name, fn, inputs, model, mark)
    return row


# Kernel categories by name (cuBLAS/CUTLASS GEMMs, attention, Inductor's Triton, ATen's own).
KERNEL_CATEGORIES = (
    ("attention", ("flash", "fmha", "attention", "attn")),
    ("gemm", ("gemm", "cutlass", "xmma", "nvjet", "cublas", "wgmma", "sm90_", "splitk")),
    ("conv", ("conv", "cudnn", "implicit", "wgrad", "dgrad", "winograd", "fft")),
    ("triton (Inductor)", ("triton",)),
    ("memcpy/memset", ("memcpy", "memset")),
    ("norm", ("norm",)),
    ("reduction", ("reduce", "softmax", "nll", "cross_entropy", "sum_")),
    ("elementwise", ("elementwise", "vectorized", "unrolled", "copy", "index", "fill", "cat")),
)


def kernel_profile(model_name: str, fn, inputs, model, mark) -> dict:
    """GPU kernel time of one step, by category (torch.profiler; kernels inside a CUDA-graph
    replay are reported one by one). ``busy_ms`` vs the step time is what launch gaps cost."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    model.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    # GPU_PROFILE_SHAPES=1: also the ATen ops by input shapes (which copy, which fill).
    shapes = bool(os.environ.get("GPU_PROFILE_SHAPES"))
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=shapes) as prof:
        mark()
        step(model_name, fn, inputs)
        torch.cuda.synchronize()
    by_category: dict[str, float] = {}
    count, busy_us, first, last = 0, 0.0, None, None
    top: dict[str, float] = {}
    kernels, host = [], []
    for event in prof.events():
        if event.device_type != torch.autograd.DeviceType.CUDA:
            host.append(event)
            continue
        if event.name.startswith("## "):
            continue  # (a "## Call CompiledFxGraph ..." row is an annotation spanning kernels, not one)
        kernels.append(event)
    for event in kernels:
        name = event.name.lower()
        category = next((c for c, keys in KERNEL_CATEGORIES if any(k in name for k in keys)), "other")
        duration = event.time_range.elapsed_us()
        by_category[category] = by_category.get(category, 0.0) + duration
        top[event.name[:160]] = top.get(event.name[:160], 0.0) + duration
        count += 1
        busy_us += duration
        first = event.time_range.start if first is None else min(first, event.time_range.start)
        last = event.time_range.end if last is None else max(last, event.time_range.end)
    # Which ATen ops the kernel time belongs to (self device time; without CUDA graphs only,
    # a replay launches no op from Python). GPU_PROFILE_TOP widens both top lists.
    keep = int(os.environ.get("GPU_PROFILE_TOP", "12"))
    ops = {}
    for average in prof.key_averages():
        device_us = getattr(average, "self_device_time_total", 0.0) or 0.0
        if average.key.startswith("aten::") and device_us > 0:
            ops[average.key] = device_us
    by_shape = {}
    if shapes:
        for average in prof.key_averages(group_by_input_shape=True):
            device_us = getattr(average, "self_device_time_total", 0.0) or 0.0
            if average.key.startswith("aten::") and device_us > 0:
                key = f"{average.key} {average.input_shapes} x{average.count}"
                by_shape[key] = by_shape.get(key, 0.0) + device_us
    return {"kernels": count, "busy_ms": round(busy_us / 1e3, 3),
            **({"top_aten_ops_by_shape_ms": {k: round(v / 1e3, 3) for k, v in sorted(
                by_shape.items(), key=lambda kv: -kv[1])[:keep]}} if shapes else {}),
            "top_aten_ops_ms": {k: round(v / 1e3, 3) for k, v in sorted(ops.items(), key=lambda kv: -kv[1])[:keep]},
            "span_ms": round((last - first) / 1e3, 3) if count else 0.0,
            "idle_gaps": _idle_gaps(kernels, host, first, keep=6),
            "by_category_ms": {k: round(v / 1e3, 3) for k, v in sorted(by_category.items(), key=lambda kv: -kv[1])},
            "top_kernels_ms": {k: round(v / 1e3, 3) for k, v in sorted(top.items(), key=lambda kv: -kv[1])[:keep]}}


def _idle_gaps(kernels: list, host: list, first, keep: int) -> dict:
    """Where the GPU waits inside one step: the longest stretches with no kernel running, each with
    its offset from the step's first kernel, the kernels either side and the host-side annotations
    (record_function ranges: Dynamo, AOTAutograd, cudagraph trees, the autograd engine) that were
    running on the CPU meanwhile: what the CPU was doing while the GPU starved."""
    spans = sorted((e.time_range.start, e.time_range.end, e.name[:80]) for e in kernels)
    gaps, reach, before = [], None, None
    for start, end, name in spans:
        if reach is not None and start - reach > 0:
            gaps.append((start - reach, reach, start, before, name))
        if reach is None or end > reach:
            reach, before = end, name
    total = sum(g[0] for g in gaps)
    top = []
    for length, begin, end, before, after in sorted(gaps, reverse=True)[:keep]:
        meanwhile = dict.fromkeys(
            e.name[:80] for e in sorted(host, key=lambda e: e.time_range.start)
            if e.time_range.start < end and e.time_range.end > begin
            and not e.name.startswith(("aten::", "cuda", "cudaLaunch")))
        top.append({"us": round(length, 1), "at_us": round(begin - first, 1), "after": before,
                    "before": after, "host": list(meanwhile)[:8]})
    step_start = min((e.time_range.start for e in host), default=first)
    return {"count": len(gaps), "total_ms": round(total / 1e3, 3),
            "host_before_first_kernel_ms": round((first - step_start) / 1e3, 3), "longest": top}


def _sync() -> None:
    import torch

    if DEVICE == "cuda":
        torch.cuda.synchronize()


def _ledger_summary() -> dict:
    import lite_compiler

    rows = [e for ledger in lite_compiler.all_ledgers("lite") for e in ledger.entries
            if e.kind == "cudagraphs"]
    codes = [c for ledger in lite_compiler.all_ledgers("lite") for c in ledger.region_code.values()]
    fusion = [e for ledger in lite_compiler.all_ledgers("lite") for e in ledger.entries
              if e.kind == "fusion"]  # options={"bitwise_fusion": True}
    summary = {"cudagraph_rows": [f"{e.graph}: {'captured' if e.allowed else 'skipped'}: {e.reason}"
                                  for e in rows],
               "region_graphs": len(codes), "region_graphs_triton": sum("triton" in c for c in codes)}
    if fusion:
        summary["fusion_groups_fused"] = sum(e.stage == "runtime" and e.allowed for e in fusion)
        summary["fusion_groups_copying_inputs"] = sum(e.stage == "runtime" and e.allowed
                                                      and "copied into the compiled layout" in e.reason
                                                      for e in fusion)
        summary["fusion_groups_fell_back"] = [f"{e.graph}: {e.reason}" for e in fusion
                                              if e.stage == "runtime" and not e.allowed]
        summary["fusion_signatures_not_bitwise"] = [f"{e.name}: {e.reason}" for e in fusion
                                                    if e.stage == "fusion" and not e.allowed]
        judged = [e for e in fusion if e.stage == "fusion" and e.allowed and e.name != "bitwise_fusion"]
        summary["fusion_signatures_proven"] = sum("bitwise, proven" in e.reason for e in judged)
        summary["fusion_signatures_sampled"] = sum("not proven" in e.reason for e in judged)
    return summary


def region_breakdown(model_name: str, fn, inputs, model, mark) -> dict:
    """Where a region call's host time goes, over one step without CUDA graph replay (with CUDA
    graphs the host does none of this per step). Per region call: the whole boundary (lite's
    ``CompiledRegion`` -> Inductor's input-alignment wrapper -> generated ``call``) versus the
    generated code alone (which launches the kernels), and how many inputs Inductor had to copy
    because they were misaligned (a boundary copy)."""
    import gc

    import torch
    import torch._inductor.utils as inductor_utils

    from lite_compiler.regions import CompiledRegion

    # type(), not isinstance(): gc also holds weakref proxies, and isinstance() on a dead one raises.
    regions = [o for o in gc.get_objects() if type(o) is CompiledRegion]
    totals = {"calls": 0, "outer": 0.0, "generated": 0.0, "copies": 0}
    original_copy = inductor_utils.copy_misaligned_inputs

    def counting_copy(new_inputs, check_inputs_idxs, *rest, **kw):
        totals["copies"] += sum(1 for i in check_inputs_idxs if isinstance(new_inputs[i], torch.Tensor)
                                and new_inputs[i].data_ptr() % inductor_utils.ALIGNMENT)
        return original_copy(new_inputs, check_inputs_idxs, *rest, **kw)

    saved = []
    for region in regions:
        compiled = region.compiled
        generated = getattr(compiled, "current_callable", None)
        # The generated module's ``call`` sits under Inductor's alignment wrapper, if any.
        module_call = getattr(generated, "__wrapped__", None) or generated
        if generated is None:
            continue

        def timed_generated(args, _call=module_call):
            begin = time.perf_counter()
            try:
                return _call(args)
            finally:
                totals["generated"] += time.perf_counter() - begin

        saved.append((compiled, generated))
        compiled.current_callable = timed_generated if module_call is generated else generated
    original_call = CompiledRegion.__call__

    def outer(self, *args):
        begin = time.perf_counter()
        totals["calls"] += 1
        try:
            return original_call(self, *args)
        finally:
            totals["outer"] += time.perf_counter() - begin

    def measure(through_output_code: bool) -> dict:
        """One instrumented step; ``through_output_code``: every call goes through Inductor's
        ``CompiledFxGraph.__call__`` as before the cheap-boundary change."""
        for key in totals:
            totals[key] = 0
        for region in regions:
            region._call = region.compiled if through_output_code else (
                getattr(region.compiled, "current_callable", None) or region.compiled)
        model.zero_grad(set_to_none=True)
        _sync()
        host_begin = time.perf_counter()
        mark()
        step(model_name, fn, inputs)
        host_step = time.perf_counter() - host_begin
        _sync()
        calls = max(totals["calls"], 1)
        return {"region_calls_per_step": totals["calls"],
                "host_ms_per_step": round(host_step * 1e3, 3),
                "host_ms_in_regions": round(totals["outer"] * 1e3, 3),
                "host_ms_in_generated_code": round(totals["generated"] * 1e3, 3),
                "host_us_boundary_per_call": round((totals["outer"] - totals["generated"]) * 1e6 / calls, 2),
                "misaligned_input_copies_per_step": totals["copies"]}

    CompiledRegion.__call__ = outer
    inductor_utils.copy_misaligned_inputs = counting_copy
    try:
        before, after = measure(True), measure(False)
        before, after = measure(True), measure(False)  # second round: both warm
    finally:
        CompiledRegion.__call__ = original_call
        inductor_utils.copy_misaligned_inputs = original_copy
        for compiled, generated in saved:
            compiled.current_callable = generated
        for region in regions:
            region._call = getattr(region.compiled, "current_callable", None) or region.compiled
    return {"region_objects": len(regions), "through_inductor_call": before, "direct": after}


# ---- the bitwise check ---------------------------------------------------------------------------

def check_worker(model_name: str, steps: int = 3) -> dict:
    import copy

    import torch

    import lite_compiler  # noqa: F401

    torch.use_deterministic_algorithms(True)
    base, inputs = build(model_name)
    results = {}
    for variant in ("aot_eager", "ours", "ours_cudagraphs", "cudagraphs_backend", "ours_fused_cudagraphs"):
        torch._dynamo.reset()
        model = copy.deepcopy(base)
        fn = compiled(variant, model)
        mark = (torch.compiler.cudagraph_mark_step_begin if variant in CUDAGRAPH_VARIANTS
                else (lambda: None))
        per_step = []
        for _ in range(steps):
            model.zero_grad(set_to_none=True)
            mark()
            out, loss = step(model_name, fn, inputs)
            per_step.append({"out": out.detach().clone(), "loss": loss.detach().clone(),
                             **{f"grad:{n}": p.grad.clone() for n, p in model.named_parameters()}})
        if DEVICE == "cuda":
            torch.cuda.synchronize()
        results[variant] = per_step
        del model, fn
    reference = results["aot_eager"]
    report = {"model": model_name, "steps": steps, "tensors_per_step": len(reference[0])}
    for variant in ("ours", "ours_cudagraphs", "cudagraphs_backend", "ours_fused_cudagraphs"):
        different = sorted({name for ref, got in zip(reference, results[variant])
                            for name in ref if not torch.equal(ref[name], got[name])})
        report[f"{variant}_bitwise_equal_to_aot_eager"] = not different
        report[f"{variant}_differs"] = different[:10]
    return report


# ---- the driver ----------------------------------------------------------------------------------

def run_child(args: list[str], timeout: int) -> dict:
    cache = tempfile.mkdtemp(prefix="gpu_models_cache_")
    # Fresh caches, lite-guard's own too (bitwise-fusion verdicts, the registry cache): a first
    # call must not reuse what the check or an earlier variant proved.
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache, "TRITON_CACHE_DIR": os.path.join(cache, "triton"),
           "LITE_GUARD_CACHE_DIR": os.path.join(cache, "lite_guard"),
           "CUBLAS_WORKSPACE_CONFIG": ":4096:8", "PYTHONUNBUFFERED": "1"}
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
        out = handle.name
    began = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, __file__, *args, "--result", out], env=env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    wall = round(time.perf_counter() - began, 2)
    if proc.returncode != 0 or not os.path.getsize(out):
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        # The exception's own lines (torch appends hints after them).
        first = next((i for i, line in enumerate(lines) if "Error" in line and ":" in line
                      and not line.startswith(" ")), max(len(lines) - 8, 0))
        return {"error": " | ".join(lines[first:first + 8])[-2000:], "process_s": wall}
    result = json.loads(Path(out).read_text())
    result["process_s"] = wall
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--json", default=None, help="write all results here (after every row)")
    parser.add_argument("--timeout", type=int, default=240, help="per process, seconds")
    parser.add_argument("--no-check", action="store_true", help="skip the bitwise check")
    parser.add_argument("--tiny", action="store_true", help="tiny sizes: a smoke run of the harness")
    parser.add_argument("--profile", action="store_true",
                        help="add one torch.profiler step per variant: GPU kernel time by category")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run every variant this many times, interleaved (each round in its own"
                             " fresh processes, the order rotated); a row reports the median round")
    parser.add_argument("--deadline", type=float, default=None,
                        help="seconds: start no variant after this (the rest are recorded as skipped)")
    parser.add_argument("--worker", nargs=2, metavar=("MODEL", "VARIANT"), help=argparse.SUPPRESS)
    parser.add_argument("--check-worker", metavar="MODEL", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker or args.check_worker:
        row = worker(*args.worker, args.iters) if args.worker else check_worker(args.check_worker)
        Path(args.result).write_text(json.dumps(row))
        return 0

    if args.tiny:
        os.environ["GPU_MODELS_TINY"] = "1"  # the workers inherit it
    if args.profile:
        os.environ["GPU_MODELS_PROFILE"] = "1"
    import torch

    if DEVICE == "cuda" and not torch.cuda.is_available():
        print("gpu_models: no CUDA device; this benchmark needs a GPU", file=sys.stderr)
        return 2
    report = {"torch": torch.__version__,
              "device": torch.cuda.get_device_name() if DEVICE == "cuda" else DEVICE,
              "commit": _commit(), "run": os.environ.get("GPU_BENCH_RUN", ""), "command": " ".join(["python bench/gpu_models.py", *sys.argv[1:]]),
              "deterministic_timing": "torch.use_deterministic_algorithms(True, warn_only=True)",
              "deterministic_check": "torch.use_deterministic_algorithms(True)",
              "cublas_workspace_config": ":4096:8", "iters": args.iters,
              "llama": LLAMA if not args.tiny else "tiny", "resnet": RESNET if not args.tiny else "tiny",
              "rows": [], "checks": []}
    began = time.perf_counter()
    late = (lambda: args.deadline is not None and time.perf_counter() - began > args.deadline)
    for model_name in args.models.split(","):
        if not args.no_check:  # first: the bitwise verdict matters most if time runs out
            check = run_child(["--check-worker", model_name], args.timeout)
            check.setdefault("model", model_name)
            report["checks"].append(check)
            print(json.dumps(check), flush=True)
            _write(report, args.json)
        variants = [v for v in args.variants.split(",")
                    if not (REGION_KIND.get(v) == "norm_mlp" and model_name != "llama")]
        runs: dict[str, list[dict]] = {v: [] for v in variants}
        for number in range(args.rounds):
            # Interleaved and rotated: a slow stretch of the machine (clocks, another tenant)
            # falls on every variant alike instead of on whichever ran then.
            shift = number % len(variants) if variants else 0
            for variant in variants[shift:] + variants[:shift]:
                if late():
                    row = {"error": f"not run: the --deadline of {args.deadline:.0f} s had passed"}
                else:
                    row = run_child(["--worker", model_name, variant, "--iters", str(args.iters)],
                                    args.timeout)
                row.setdefault("model", model_name)
                row.setdefault("variant", variant)
                row["round"] = number + 1
                runs[variant].append(row)
                print(json.dumps(row), flush=True)
                report["rows"] = [r for r in report["rows"] if r["model"] != model_name]
                report["rows"] += [median_round(rows) for rows in runs.values() if rows]
                _write(report, args.json)
    return 0


def median_round(rows: list[dict]) -> dict:
    """One row for a variant run in several rounds: the round whose step time is the median (its
    first call, memory and profile go with it), with every round's step time and first call
    beside it. A failed round is kept as an error only when no round succeeded."""
    measured = sorted((r for r in rows if "step_ms" in r), key=lambda r: r["step_ms"])
    if not measured:
        return rows[-1]
    row = dict(measured[(len(measured) - 1) // 2])
    if len(rows) > 1:
        row["rounds"] = [{"round": r["round"], **({"step_ms": r["step_ms"], "first_call_s": r["first_call_s"]}
                                                  if "step_ms" in r else {"error": r.get("error", "")[:200]})}
                         for r in rows]
        row["step_ms_min"] = min(r.get("step_ms_min", r["step_ms"]) for r in measured)
    return row


def _write(report: dict, path: str | None) -> None:
    if path:
        Path(path).write_text(json.dumps(report, indent=2) + "\n")


def _commit() -> str:
    if os.environ.get("GPU_BENCH_COMMIT"):  # a copy without .git: the caller says what it holds
        return os.environ["GPU_BENCH_COMMIT"]
    marker = Path(__file__).resolve().parent.parent / "COMMIT"  # a snapshot says what it holds
    if marker.exists():
        return marker.read_text().strip()
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, cwd=Path(__file__).parent).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
