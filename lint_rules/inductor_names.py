"""LEFTOVER, to be deleted: LG002's name-based config classification (issue 11.3 replaces it with
the registry's complete config inventory, LINT-B). The pass vocabulary that used to live here
(observer and pattern-pass names, pass base classes, custom-hook keys, the byte prefilter) now
comes from the registry's [[base]] rows and custom_hook entries; see lint_rules/index.py.
"""

from __future__ import annotations

import re

# Config keys that install a user function as a pass: registered as passes, not configs.
CUSTOM_HOOK_KEY = re.compile(r"(custom.*pass|custom_partitioner_fn)$")
# Private keys that still gate passes.
PRIVATE_GATING_KEYS = frozenset({
    "_fuse_ddp_communication", "_micro_pipeline_tp", "_pre_fusion_custom_pass",
    "_post_fusion_custom_pass",
})
# Which config keys gate a pass or reorder. tools/scan_torch_passes.py (the scanner behind the
# shipped registry) imports this block too, so the linter and the registry agree on one set.
# Config keys whose *name* marks them as pass / reorder / fusion / layout / numerics gates.
CONFIG_GATING = re.compile(
    r"(^|[._])("
    r"use_(pre_grad|joint_graph|post_grad)_passes|use_dce|dce|allow_buffer_reuse|inplace_buffers"
    r"|memory_planning|inplace_padding|can_inplace_pad_graph_input"
    r"|reorder[a-z_]*|sink_waits|raise_comms"
    r"|pattern_matcher|[a-z_]*_pass|[a-z_]*_passes|[a-z_]*_fx_passes"
    r"|[a-z_]*fusion[a-z_]*|[a-z_]*fuse[a-z_]*|combo_kernels|aggressive_fusion"
    r"|layout_optimization|force_layout_optimization|keep_output_stride"
    r"|shape_padding|comprehensive_padding|pad_[a-z_]+|force_shape_pad|padding_[a-z_]+"
    r"|freezing[a-z_]*|[a-z_]*constant_folding|constant_and_index_propagation"
    r"|[a-z_]*decompos[a-z_]*|decompose_[a-z_]+|selective_decompose|fallback_by_default"
    r"|fallback_random|implicit_fallbacks|split_reductions|online_softmax|apply_gumbel_max_trick"
    r"|bucket_[a-z_]+|[a-z_]*bucketing[a-z_]*|enable_overlap_scheduling|dedup_reduce_scatters"
    r"|_micro_pipeline_tp|_fuse_ddp_communication|partitioned_scatter_enabled"
    r"|enable_low_contention_collectives|allow_comms_decompositions"
    r"|loop_ordering_after_fusion|loop_reindexing_after_fusion|loop_index_inversion_in_fusion"
    r"|cse|recompute_views|aggressive_recomputation|activation_memory_budget"
    r"|enable_activation_offloading|functionalize_rng_ops|graphsafe_rng_functionalization"
    r"|conv_1x1_as_mm|optimize_scatter_upon_const_tensor|b2b_gemm_pass|group_fusion|batch_fusion"
    r"|emulate_precision_casts[a-z_]*|division_rounding|disable_ftz|use_fast_math"
    r"|deterministic|batch_invariant|persistent_reductions|cooperative_reductions"
    r"|mix_order_reduction|multi_kernel|use_mixed_mm|force_fuse_int_mm_with_mul"
    r"|keep_addmm_fused_for_half_dtypes|enable_linear_binary_folding|auto_chunker\.enable"
    r"|enable_concat_linear|keep_output_stride"
    r"|enable_fusion_regions|unsafe_allow_optimization_of_collectives|graph_partition"
    r")$"
)
# Keys that match CONFIG_GATING by name but were reviewed: tuning knobs, thresholds, debug
# switches, or hooks registered as custom_hook passes instead. Keep a reason next to each group.
CONFIG_NOT_GATING = {
    # debug / logging only
    "debug_fusion", "reorder_for_peak_memory_debug", "fx_passes_numeric_check",
    "benchmark_fusion", "benchmark_epilogue_fusion", "benchmark_combo_kernel",
    "aten_distributed_optimizations.pre_bucketing_fsdp_collectives_verbose",
    # tuning knobs / thresholds of a pass that has its own on/off key
    "max_fusion_size", "max_fusion_buffer_group_pairwise_attempts", "max_fusion_unique_io_buffers",
    "score_fusion_memory_threshold", "max_epilogue_benchmarked_choices",
    "reorder_prefetch_limit", "padding_alignment_bytes", "padding_stride_threshold",
    "_fuse_ddp_bucket_size", "_fuse_ddp_communication_passes",
    "reorder_for_compute_comm_overlap_passes", "pre_grad_fusion_options",
    "post_grad_fusion_options", "add_pre_grad_passes", "remove_pre_grad_passes", "disabled_passes",
    "pre_grad_pass_timing", "bucket_all_gathers_fx_bucket_size_determinator",
    "bucket_reduce_scatters_fx_bucket_size_determinator",
    "bucket_all_reduces_fx_bucket_size_determinator", "bucket_all_gathers_bucket_mode",
    "bucket_reduce_scatters_bucket_mode", "aten_distributed_optimizations.bucket_mode",
    "aten_distributed_optimizations.bucket_exposed_first",
    "aten_distributed_optimizations.bucket_only_internode_comms",
    "aten_distributed_optimizations.prioritize_bucketing_during_scheduling",
    "aten_distributed_optimizations.collective_bucketing",
    "aten_distributed_optimizations.pre_bucketing_fsdp_collectives",
    "aten_distributed_optimizations.pre_bucketing_fsdp_collectives_bucket_cap_mb",
    "aten_distributed_optimizations.pre_bucketing_fsdp_collectives_min_bucket_cap_mb",
    "aten_distributed_optimizations.pre_bucketing_fsdp_collectives_max_bucket_cap_mb",
    "aten_distributed_optimizations.pre_bucketing_fsdp_collectives_saturation_calibration_multiplier",
    "aten_distributed_optimizations.enable_fusion_regions",
    "triton.decompose_k_threshold", "triton.num_decompose_k_splits",
    "triton.mix_order_reduction_initial_xblock", "triton.mix_order_reduction_split_size",
    "triton.mix_order_reduction_autotune_split_size", "triton.mix_order_reduction_non_strict_mode",
    "triton.mix_order_reduction_max_reads", "triton.mix_order_reduction_allow_multi_stages",
    "cpp.max_horizontal_fusion_size", "combo_kernel_allow_mixed_sizes",
    "activation_memory_budget_runtime_estimator", "activation_memory_budget_solver",
    "visualize_memory_budget_pareto", "memory_budget_pareto_dir",
    "epilogue_fusion_with_atomic_add", "epilogue_fusion_first",
    "epilogue_fusion_user_defined_triton_kernel",
    "triton.tiling_prevents_pointwise_fusion", "triton.tiling_prevents_reduction_fusion",
    "cutlass.cutlass_epilogue_fusion_enabled", "triton.cudagraph_partition_memory_budget",
    "force_pointwise_cat", "cpp.use_decompose_tanh", "triton.decompose_sort_ops",
    "loop_index_inversion_in_fusion", "loop_reindexing_after_fusion",
    "graph_partition", "custom_should_partition_ops", "split_reductions",
    # correctness/numerics switches of kernels Inductor generates (regions only); never forced
    "deterministic", "batch_invariant", "use_fast_math", "cutlass.use_fast_math",
    "rocm.use_fast_math", "fallback_random", "implicit_fallbacks", "emulate_precision_casts",
    "emulate_precision_casts_on_saved_tensors", "eager_numerics.division_rounding",
    "eager_numerics.disable_ftz", "online_softmax", "persistent_reductions",
    "triton.persistent_reductions", "triton.cooperative_reductions",
    "triton.force_cooperative_reductions", "triton.multi_kernel", "triton.mix_order_reduction",
    "use_mixed_mm", "force_fuse_int_mm_with_mul", "keep_addmm_fused_for_half_dtypes",
    "conv_1x1_as_mm", "constant_and_index_propagation", "cpp.weight_prepack",
    # region-level kernel fusion: Inductor fuses inside annotated regions only (fallback nodes
    # are extern kernels and never fuse), so these are not forced
    "epilogue_fusion", "prologue_fusion", "loop_ordering_after_fusion",
    # not gates: artifact dumping, autoheuristic data collection, AOTInductor-only, functorch
    # mirror of inductor's selective_decompose (compile_fx passes it explicitly)
    "trace.ir_pre_fusion", "trace.ir_post_fusion", "autoheuristic_collect.pad_mm",
    "autoheuristic_use.pad_mm", "aot_inductor.use_runtime_constant_folding",
    "freezing_discard_parameters", "functorch:decompose_custom_triton_ops",
    "functorch:selective_decompose", "test_configs.assume_bucketing_reduces_latency",
    # AOTAutograd partitioner knobs shared with aot_eager (forcing them would change aot_eager too)
    "cse", "recompute_views", "aggressive_recomputation", "activation_memory_budget",
    "functionalize_rng_ops", "graphsafe_rng_functionalization",
    "unsafe_allow_optimization_of_collectives", "enable_activation_offloading",
    "activation_offload_separate_stream", "activation_offload_sink_wait",
    "activation_reload_prefetch",
    # test-only
    "test_configs.force_custom_op_decomposition", "test_configs.bisect_keep_custom_backend_for_inductor",
    "test_configs.graphsafe_rng_func_ignores_fallback_random",
}


def is_gating_key(key: str, module: str) -> bool:
    """Does this config key turn a pass on or off, or reorder (so it must be registered)?"""
    if key.startswith("_") and key not in PRIVATE_GATING_KEYS:
        return False
    if CUSTOM_HOOK_KEY.search(key.rsplit(".", 1)[-1]):
        return True
    if key in CONFIG_NOT_GATING or f"{module}:{key}" in CONFIG_NOT_GATING:
        return False
    return CONFIG_GATING.search(key) is not None
