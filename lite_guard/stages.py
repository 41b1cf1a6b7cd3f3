"""The pipeline stages a pass can run in, and the one heuristic that guesses a new pass's stage."""

from __future__ import annotations

STAGES = ("pre_grad", "joint_graph", "aot", "post_grad", "lowering", "scheduler", "codegen")

# Files whose passes run in a stage their name does not say (torch/_inductor/fx_passes/...).
_PRE_GRAD_FILES = ("pre_grad", "split_cat", "efficient_conv_bn_eval", "misc_patterns")
_JOINT_GRAPH_FILES = ("joint_graph", "replace_random", "pad_mm", "fuse_attention",
                      "binary_folding", "freezing_patterns", "auto_chunker")
_SCHEDULER_FILES = ("scheduler", "comms", "memory")


def guess_stage(path_or_module: str, name: str = "") -> str:
    """The stage a new pass found in ``path_or_module`` (a file path or dotted module) most likely
    runs in. A guess for hints and proposals only; a person confirms it in the registry."""
    text = path_or_module.replace("\\", "/").replace(".", "/")
    parts = [p for p in text.split("/") if p and p != "py"]
    stem = parts[-1] if parts else ""
    if "_functorch" in parts or "functorch" in parts:
        return "aot"
    if any(stem.startswith(f) for f in _PRE_GRAD_FILES) or name.startswith("pre_grad"):
        return "pre_grad"
    if any(stem.startswith(f) for f in _JOINT_GRAPH_FILES) or name.startswith("joint"):
        return "joint_graph"
    if stem in _SCHEDULER_FILES or "sched" in stem:
        return "scheduler"
    if "codegen" in parts:
        return "codegen"
    if "fx_passes" in parts or stem in ("post_grad", "pattern_matcher") or name.startswith("post_grad"):
        return "post_grad"
    if stem in ("lowering", "graph", "ir", "decomposition"):
        return "lowering"
    return "post_grad"
