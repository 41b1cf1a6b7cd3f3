"""Mutation benchmark for the lint on torch itself: inject new passes and config keys into copies of
torch's ``_inductor`` / ``_functorch`` tree, written the way Inductor developers write them, and
count how many ``lite_guard check --no-project <tree>`` reports.

Each injection is a small set of edits anchored on lines that exist in every supported release
(2.11.0, 2.12.0, 2.12.1, 2.13.0, 2.14.1 and a checkout layout), modelled on how passes really
land in torch's history: a function called in ``post_grad_passes``, a new ``fx_passes`` module,
a ``PatternMatcherPass`` named by a variable, a config key gating a call, a new scheduler method
called from ``Scheduler._init``, ... An injection is *found* when every name it expects is
reported (a finding whose name is that name, or whose message quotes it). Controls are edits that
add no pass: any finding there is a false positive.

    python bench/injected_torch.py                    # all trees, writes bench/results/injected_torch.json
    python bench/injected_torch.py --trees 2.13.0 --only post_grad_plain_call -v
    python bench/injected_torch.py --dry-run          # apply every edit and parse it, no lint
    python bench/injected_torch.py --render           # BENCHMARKS.md section from the results JSON
    python bench/injected_torch.py --write            # run all, then write the section (make bench)

Each tree is copied once to a scratch directory; an injection edits the copy, the lint runs (with
its cache on: only the edited files are re-read), and the touched files are restored.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREES = Path(os.environ.get("LITE_GUARD_TREES", "/work/trees"))
VERSIONS = ("2.11.0", "2.12.0", "2.12.1", "2.13.0", "2.14.1", "checkout-2.13")
RESULTS = ROOT / "bench" / "results" / "injected_torch.json"

CONFIG = "torch/_inductor/config.py"
FCONFIG = "torch/_functorch/config.py"
POST = "torch/_inductor/fx_passes/post_grad.py"
JOINT = "torch/_inductor/fx_passes/joint_graph.py"
PRE = "torch/_inductor/fx_passes/pre_grad.py"
SCHED = "torch/_inductor/scheduler.py"
COMPILE = "torch/_inductor/compile_fx.py"
PART = "torch/_functorch/partitioners.py"
COMMS = "torch/_inductor/comms.py"
GRAPH = "torch/_inductor/graph.py"
WRAPPER = "torch/_inductor/codegen/wrapper.py"
SPLIT_CAT = "torch/_inductor/fx_passes/split_cat.py"
GRAPH_COMPILE = "torch/_functorch/_aot_autograd/graph_compile.py"


@dataclass(frozen=True)
class Edit:
    """Insert ``code`` before/after the first line holding ``anchor`` (searched from the first line
    holding ``inside``), indented like that line plus ``indent`` levels; or ``append`` to / create
    (``new``) a file."""

    path: str
    code: str
    anchor: str = ""
    inside: str = ""
    where: str = "before"  # before | after | append | new
    indent: int = 0


@dataclass(frozen=True)
class Injection:
    id: str
    form: str  # what kind of change, for the per-form table
    edits: tuple[Edit, ...]
    expect: tuple[tuple[str, ...], ...] = ()  # each group: names, any of which counts
    control: bool = False  # adds no pass: a finding here is a false positive
    note: str = ""


def _e(path, code, anchor="", inside="", where="before", indent=0) -> Edit:
    return Edit(path, textwrap.dedent(code).strip("\n") + "\n", anchor, inside, where, indent)


def _i(id, form, *edits, expect=(), control=False, note="") -> Injection:
    groups = tuple((g,) if isinstance(g, str) else tuple(g) for g in expect)
    return Injection(id, form, tuple(edits), groups, control, note)


PG_ROOT = "def post_grad_passes("
PG_AT = "if config.pattern_matcher:"  # a statement of post_grad_passes' body in every release
JG_ROOT = "def joint_graph_passes("
JG_AT = "if config.pattern_matcher:"
PRE_ROOT = "def pre_grad_passes("
PRE_AT = "if config.pattern_matcher:"
SCHED_ROOT = "def _init(self, nodes"
SCHED_AT = "self.nodes = self.fuse_nodes(self.nodes)"
SCHED_CLASS_AT = "def get_donated_buffers(self)"  # a Scheduler method: new methods go before it

INJECTIONS: list[Injection] = [
    # ---- post_grad_passes -------------------------------------------------------------------
    _i("post_grad_plain_call", "call in post_grad_passes",
       _e(POST, "drop_dead_nodes(gm.graph)", PG_AT, PG_ROOT),
       _e(POST, """
          def drop_dead_nodes(graph: torch.fx.Graph) -> None:
              for node in reversed(graph.nodes):
                  if node.op == "call_function" and not node.users:
                      graph.erase_node(node)
          """, where="append"),
       expect=["drop_dead_nodes"]),
    _i("post_grad_gated_observer", "observer gated by a new config key (digits)",
       _e(CONFIG, """
          # fuse rotary embeddings (v3 patterns) in post-grad
          fuse_rope_v3: bool = False
          """, "pattern_matcher = True"),
       _e(POST, """
          if config.fuse_rope_v3:
              GraphTransformObserver(gm, "fuse_rope_v3").apply_graph_pass(fuse_rope_v3_pass)
          """, PG_AT, PG_ROOT),
       _e(POST, """
          def fuse_rope_v3_pass(graph: torch.fx.Graph) -> None:
              for node in graph.find_nodes(op="call_function", target=aten.mul.Tensor):
                  pass
          """, where="append"),
       expect=["fuse_rope_v3", ("fuse_rope_v3_pass", "fuse_rope_v3")]),
    _i("post_grad_observer_new_name", "GraphTransformObserver(gm, 'x') in post_grad_passes",
       _e(POST, """
          GraphTransformObserver(gm, "remove_redundant_views").apply_graph_pass(
              remove_redundant_views
          )
          """, PG_AT, PG_ROOT),
       _e(POST, """
          def remove_redundant_views(graph: torch.fx.Graph) -> None:
              for node in graph.find_nodes(op="call_function", target=aten.view.default):
                  if node.args[0].meta.get("val") is not None:
                      pass
          """, where="append"),
       expect=["remove_redundant_views"]),
    _i("new_fx_passes_module_called", "new fx_passes/*.py module, imported inside the root",
       _e("torch/_inductor/fx_passes/softmax_rewrite.py", """
          import torch
          from torch._inductor.pattern_matcher import fwd_only

          aten = torch.ops.aten


          def rewrite_softmax(graph: torch.fx.Graph) -> None:
              for node in graph.find_nodes(op="call_function", target=aten._softmax.default):
                  node.target = aten._safe_softmax.default
          """, where="new"),
       _e(POST, """
          if config.pattern_matcher:
              from .softmax_rewrite import rewrite_softmax

              rewrite_softmax(gm.graph)
          """, PG_AT, PG_ROOT),
       expect=[("rewrite_softmax", "torch/_inductor/fx_passes/softmax_rewrite.py")]),
    _i("new_fx_passes_module_alone", "new fx_passes/*.py module with a PatternMatcherPass",
       _e("torch/_inductor/fx_passes/rope_fusion.py", """
          import functools

          import torch
          from ..pattern_matcher import (
              CallFunction,
              KeywordArg,
              Match,
              PatternMatcherPass,
              register_graph_pattern,
          )

          aten = torch.ops.aten
          rope_patterns = PatternMatcherPass(pass_name="rope_fusion_pass")


          @register_graph_pattern(
              CallFunction(aten.cat.default, KeywordArg("parts"), -1),
              pass_dict=rope_patterns,
          )
          def _fuse_rope(match: Match, parts):
              pass


          def fuse_rope(gm: torch.fx.GraphModule) -> None:
              rope_patterns.apply(gm.graph)
          """, where="new"),
       expect=[("rope_fusion_pass", "torch/_inductor/fx_passes/rope_fusion.py")]),
    _i("alias_import_call", "pass imported under an alias, called in post_grad_passes",
       _e("torch/_inductor/fx_passes/dedup_views.py", """
          import torch


          def dedup_views(gm: torch.fx.GraphModule) -> None:
              seen = {}
              for node in gm.graph.nodes:
                  key = (node.target, node.args)
                  if key in seen:
                      node.replace_all_uses_with(seen[key])
                  seen[key] = node
          """, where="new"),
       _e(POST, "from .dedup_views import dedup_views as _dedup_views", "from .. import config"),
       _e(POST, "_dedup_views(gm)", PG_AT, PG_ROOT),
       expect=["dedup_views"]),
    _i("module_attribute_call", "pass called through a module attribute fx_passes.foo.bar(gm)",
       _e("torch/_inductor/fx_passes/fold_reshapes.py", """
          import torch


          def fold_reshapes(gm: torch.fx.GraphModule) -> None:
              for node in gm.graph.nodes:
                  pass
          """, where="new"),
       _e(COMPILE, "torch._inductor.fx_passes.fold_reshapes.fold_reshapes(gm)",
          "post_grad_passes(gm, is_inference)", "def _recursive_post_grad_passes"),
       expect=[("fold_reshapes", "torch/_inductor/fx_passes/fold_reshapes.py")]),
    _i("module_attribute_call_imported", "from .fx_passes import mod; mod.fn(gm) in a root",
       _e("torch/_inductor/fx_passes/merge_slices.py", """
          import torch


          def merge_slices(gm: torch.fx.GraphModule) -> None:
              for node in gm.graph.nodes:
                  pass
          """, where="new"),
       _e(POST, """
          from . import merge_slices as merge_slices_mod

          merge_slices_mod.merge_slices(gm)
          """, PG_AT, PG_ROOT),
       expect=["merge_slices"]),
    _i("pattern_pass_name_variable", "PatternMatcherPass(pass_name=CONSTANT)",
       _e(POST, """
          _SOFTMAX_PASS_NAME = "softmax_fusion_pass"
          softmax_patterns = PatternMatcherPass(pass_name=_SOFTMAX_PASS_NAME)
          """, "def post_grad_passes("),
       _e(POST, "softmax_patterns.apply(gm.graph)", PG_AT, PG_ROOT),
       expect=["softmax_fusion_pass"]),
    _i("pattern_pass_fstring", "PatternMatcherPass(pass_name=f'...') in a comprehension",
       _e(POST, """
          rope_passes = [PatternMatcherPass(pass_name=f"rope_pass_{i}") for i in range(2)]
          """, "def post_grad_passes("),
       _e(POST, """
          for i, rope_pass in enumerate(rope_passes):
              GraphTransformObserver(gm, f"rope_pass_{i}").apply_graph_pass(rope_pass.apply)
          """, PG_AT, PG_ROOT),
       expect=[("rope_pass_*", "rope_pass_{i}", "rope_pass_")]),
    _i("register_graph_pattern_new_dict", "@register_graph_pattern(pass_dict=new PatternMatcherPass)",
       _e(POST, """
          int8_patterns = PatternMatcherPass()


          @register_graph_pattern(
              CallFunction(aten.mul.Tensor, KeywordArg("x"), 1),
              pass_dict=int8_patterns,
          )
          def _mul_by_one(match: Match, x):
              match.replace_by_example(lambda x: x, [x])
          """, "def post_grad_passes("),
       _e(POST, """
          if config.pattern_matcher:
              int8_patterns.apply(gm.graph)
          """, PG_AT, PG_ROOT),
       expect=["int8_patterns"]),
    _i("partial_call_in_root", "functools.partial(new_pass, ...)(graph) in post_grad_passes",
       _e(POST, "functools.partial(fuse_int8_matmuls, is_inference=is_inference)(gm.graph)",
          PG_AT, PG_ROOT),
       _e(POST, """
          def fuse_int8_matmuls(graph: torch.fx.Graph, is_inference: bool) -> None:
              pass
          """, where="append"),
       expect=["fuse_int8_matmuls"]),
    _i("loop_over_pass_tuple", "for p in (a, b): p(gm.graph) in post_grad_passes",
       _e(POST, """
          for extra_pass in (fold_transposes, fold_expands):
              extra_pass(gm.graph)
          """, PG_AT, PG_ROOT),
       _e(POST, """
          def fold_transposes(graph: torch.fx.Graph) -> None:
              pass


          def fold_expands(graph: torch.fx.Graph) -> None:
              pass
          """, where="append"),
       expect=["fold_transposes", "fold_expands"]),
    _i("custom_graph_pass_class_in_root", "CustomGraphPass subclass instantiated and run in the root",
       _e(POST, """
          from torch._inductor.custom_graph_pass import CustomGraphPass


          class _FoldClones(CustomGraphPass):
              def __call__(self, graph: torch.fx.Graph) -> None:
                  for node in graph.find_nodes(op="call_function", target=aten.clone.default):
                      node.replace_all_uses_with(node.args[0])

              def uuid(self):
                  return None
          """, "def post_grad_passes("),
       _e(POST, "_FoldClones()(gm.graph)", PG_AT, PG_ROOT),
       expect=["_FoldClones"]),
    _i("run_and_log_helper", "a pass run through a new local run-and-log helper",
       _e(POST, """
          def _run_and_log(name: str, fn, graph: torch.fx.Graph) -> None:
              log.debug("running %s", name)
              fn(graph)


          def fold_slices(graph: torch.fx.Graph) -> None:
              pass
          """, "def post_grad_passes("),
       _e(POST, '_run_and_log("fold_slices", fold_slices, gm.graph)', PG_AT, PG_ROOT),
       expect=["fold_slices"]),
    _i("dynamo_timed_with", "a pass called inside `with dynamo_timed(...)` in the root",
       _e(POST, """
          with torch._dynamo.utils.dynamo_timed("dedupe_slices"):
              dedupe_slices(gm.graph)
          """, PG_AT, PG_ROOT),
       _e(POST, """
          def dedupe_slices(graph: torch.fx.Graph) -> None:
              pass
          """, where="append"),
       expect=["dedupe_slices"]),
    _i("post_grad_hook_config_callable", "new Callable | None hook key called in post_grad_passes",
       _e(CONFIG, """
          # a user pass run after the post-grad cleanup
          post_grad_custom_cleanup_pass: Callable[[torch.fx.graph.Graph], None] | None = None
          """, "pattern_matcher = True"),
       _e(POST, """
          if config.post_grad_custom_cleanup_pass is not None:
              GraphTransformObserver(gm, "post_grad_custom_cleanup_pass").apply_graph_pass(
                  config.post_grad_custom_cleanup_pass
              )
          """, PG_AT, PG_ROOT),
       expect=["post_grad_custom_cleanup_pass"]),
    _i("config_list_of_passes", "new list-of-pass-names key looped over in post_grad_passes",
       _e(CONFIG, """
          # extra post-grad pattern passes to run, by name
          extra_post_grad_passes: list[str] = []
          """, "pattern_matcher = True"),
       _e(POST, """
          for extra_name in config.extra_post_grad_passes:
              GraphTransformObserver(gm, extra_name).apply_graph_pass(
                  POST_GRAD_PATTERNS[extra_name].apply
              )
          """, PG_AT, PG_ROOT),
       expect=["extra_post_grad_passes"]),
    _i("config_patch_install", "pass installed via config.patch(hook=fn) around post_grad_passes",
       _e(COMPILE, """
          with config.patch(post_grad_custom_post_pass=_fold_views_pass):
              post_grad_passes(gm, is_inference)
          """, "post_grad_passes(gm, is_inference)", "def _recursive_post_grad_passes"),
       _e(COMPILE, """
          def _fold_views_pass(graph: torch.fx.Graph) -> None:
              pass
          """, "def _recursive_post_grad_passes", where="before"),
       expect=["_fold_views_pass"]),
    _i("config_patch_dict_install", "pass installed via config.patch(DICT) with a module constant",
       _e(COMPILE, """
          def _dedupe_joint_views(graph: torch.fx.Graph) -> None:
              pass


          _JOINT_EXTRA_PASSES = {"joint_custom_pre_pass": _dedupe_joint_views}
          """, "def _recursive_post_grad_passes", where="before"),
       _e(COMPILE, """
          with config.patch(_JOINT_EXTRA_PASSES):
              post_grad_passes(gm, is_inference)
          """, "post_grad_passes(gm, is_inference)", "def _recursive_post_grad_passes"),
       expect=["_dedupe_joint_views"]),
    _i("functorch_patch_joint_custom_pass", "functorch config.patch(joint_custom_pass=fn)",
       _e(COMPILE, """
          def _fuse_joint_rng(joint_gm, joint_inputs):
              return joint_gm
          """, "def _recursive_post_grad_passes", where="before"),
       _e(COMPILE, """
          with torch._functorch.config.patch(joint_custom_pass=_fuse_joint_rng):
              post_grad_passes(gm, is_inference)
          """, "post_grad_passes(gm, is_inference)", "def _recursive_post_grad_passes"),
       expect=["_fuse_joint_rng"]),
    # ---- joint graph -------------------------------------------------------------------------
    _i("joint_plain_call", "call in joint_graph_passes",
       _e(JOINT, "remove_redundant_clones(graph)", JG_AT, JG_ROOT),
       _e(JOINT, """
          def remove_redundant_clones(gm: torch.fx.GraphModule) -> None:
              pass
          """, where="append"),
       expect=["remove_redundant_clones"]),
    _i("joint_observer_gm_pass", "GraphTransformObserver(...).apply_gm_pass in joint_graph_passes",
       _e(JOINT, """
          if config.joint_graph_constant_folding:
              GraphTransformObserver(graph, "fold_constant_views").apply_gm_pass(
                  fold_constant_views
              )
          """, JG_AT, JG_ROOT),
       _e(JOINT, """
          def fold_constant_views(gm: torch.fx.GraphModule) -> None:
              pass
          """, where="append"),
       expect=["fold_constant_views"]),
    _i("joint_unnamed_pattern_pass", "unnamed module-level PatternMatcherPass applied in joint_graph_passes",
       _e(JOINT, "late_patterns = PatternMatcherPass()", JG_ROOT),
       _e(JOINT, """
          if config.pattern_matcher:
              count += late_patterns.apply(graph.graph)
          """, JG_AT, JG_ROOT),
       expect=["late_patterns"]),
    _i("recursive_joint_plain_call", "call in compile_fx._recursive_joint_graph_passes",
       _e(COMPILE, "_canonicalize_joint_views(gm)", "with dynamo_timed(",
          "def _recursive_joint_graph_passes"),
       _e(COMPILE, """
          def _canonicalize_joint_views(gm: GraphModule) -> None:
              pass
          """, "def _recursive_joint_graph_passes", where="before"),
       expect=["_canonicalize_joint_views"]),
    # ---- pre grad ----------------------------------------------------------------------------
    _i("pre_grad_plain_call", "call in pre_grad_passes",
       _e(PRE, "normalize_split_v2(gm)", PRE_AT, PRE_ROOT),
       _e(PRE, """
          def normalize_split_v2(gm: torch.fx.GraphModule) -> None:
              pass
          """, where="append"),
       expect=["normalize_split_v2"]),
    _i("pre_grad_observer", "GraphTransformObserver in pre_grad_passes",
       _e(PRE, """
          GraphTransformObserver(gm, "fuse_split_gelu").apply_graph_pass(fuse_split_gelu)
          """, PRE_AT, PRE_ROOT),
       _e(PRE, """
          def fuse_split_gelu(graph: torch.fx.Graph) -> None:
              pass
          """, where="append"),
       expect=["fuse_split_gelu"]),
    _i("pre_dispatch_pass_list", "new entry in _run_pre_dispatch_passes' pass list",
       _e(PRE, "fuse_chunk_gelu_pass,", "remove_noop_pass,", "def _run_pre_dispatch_passes",
          where="after"),
       _e(PRE, """
          def fuse_chunk_gelu_pass(graph: torch.fx.Graph) -> None:
              pass
          """, "def _run_pre_dispatch_passes", where="before"),
       expect=["fuse_chunk_gelu_pass"]),
    _i("split_cat_pass_name_list", "new name in split_cat's pre_grad_pass_names (PatternMatcherPass per name)",
       _e(SPLIT_CAT, '"int8_split_cat_pass",', '"remove_split_with_size_one_pass",',
          "pre_grad_pass_names = ["),
       expect=["int8_split_cat_pass"]),
    # ---- scheduler ---------------------------------------------------------------------------
    _i("scheduler_new_method_assign", "self.nodes = self.new_reorder(self.nodes) in Scheduler._init",
       _e(SCHED, "self.nodes = self.reorder_for_int8_overlap(self.nodes)", SCHED_AT, SCHED_ROOT),
       _e(SCHED, """
          def reorder_for_int8_overlap(
              self, nodes: list[BaseSchedulerNode]
          ) -> list[BaseSchedulerNode]:
              return nodes
          """, SCHED_CLASS_AT),
       expect=["reorder_for_int8_overlap"]),
    _i("scheduler_new_method_stmt", "self.new_step() in Scheduler._init",
       _e(SCHED, "self.merge_small_kernels()", SCHED_AT, SCHED_ROOT, where="after"),
       _e(SCHED, """
          def merge_small_kernels(self) -> None:
              pass
          """, SCHED_CLASS_AT),
       expect=["merge_small_kernels"]),
    _i("scheduler_gated_comms", "comms.new_reorder gated by a new env-var config key in Scheduler._init",
       _e(CONFIG, """
          # try the alternative comm ordering (experimental)
          use_alt_scheduler_order = os.environ.get("TORCHINDUCTOR_ALT_SCHEDULER_ORDER") == "1"
          """, "pattern_matcher = True"),
       _e(COMMS, """
          def alt_comm_order(snodes: list[BaseSchedulerNode]) -> list[BaseSchedulerNode]:
              return snodes
          """, "def sink_waits("),
       _e(SCHED, """
          if config.use_alt_scheduler_order:
              self.nodes = comms.alt_comm_order(self.nodes)
          """, SCHED_AT, SCHED_ROOT),
       expect=["use_alt_scheduler_order", "alt_comm_order"]),
    _i("scheduler_init_wrapper", "a step added to Scheduler.__init__ after self._init",
       _e(SCHED, "self._reorder_for_cache_reuse()", "self._init(nodes)", "def __init__(self, nodes",
          where="after"),
       _e(SCHED, """
          def _reorder_for_cache_reuse(self) -> None:
              self.nodes = list(self.nodes)
          """, SCHED_CLASS_AT),
       expect=["_reorder_for_cache_reuse"]),
    _i("comms_new_reorder_pass", "new builtin reorder pass in comms.py, usable by name in reorder lists",
       _e(COMMS, """
          def sink_waits_v2(snodes: list[BaseSchedulerNode]) -> list[BaseSchedulerNode]:
              \"\"\"Sink waits, but keep them grouped by process group.\"\"\"
              return _schedule_for_comm(
                  snodes, raise_comms=False, sink_waits=True, reorder_for_overlap=False
              )
          """, "def raise_comms("),
       expect=["sink_waits_v2"]),
    _i("comms_reorder_list_default", "a reorder pass added to the default reorder pass list",
       _e(CONFIG, """
          # reorder passes always run first (before the user's list)
          default_reorder_passes: list[str] = ["sink_waits", "raise_comms"]
          """, "pattern_matcher = True"),
       expect=["default_reorder_passes"]),
    # ---- compile_fx / partitioners / lowering / wrapper ----------------------------------------
    _i("recursive_post_grad_call", "call in compile_fx._recursive_post_grad_passes",
       _e(COMPILE, "fold_layout_views(gm)", "post_grad_passes(gm, is_inference)",
          "def _recursive_post_grad_passes"),
       _e(COMPILE, """
          def fold_layout_views(gm: GraphModule) -> None:
              pass
          """, "def _recursive_post_grad_passes", where="before"),
       expect=["fold_layout_views"]),
    _i("codegen_and_compile_step", "a pass next to view_to_reshape in codegen_and_compile",
       _e(COMPILE, "remove_dead_placeholders(gm)", "view_to_reshape(gm)", where="after"),
       _e(COMPILE, """
          def remove_dead_placeholders(gm: GraphModule) -> None:
              pass
          """, "def _recursive_post_grad_passes", where="before"),
       expect=["remove_dead_placeholders"]),
    _i("aot_inference_step", "a step in AOTAutograd's aot_stage2_inference",
       _e(GRAPH_COMPILE, "fw_module = _fold_inference_constants(fw_module)",
          "_apply_tensorify_python_scalars(fw_module)", "def aot_stage2_inference(", where="after"),
       _e(GRAPH_COMPILE, """
          def _fold_inference_constants(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
              return gm
          """, "def aot_stage2_inference("),
       expect=["_fold_inference_constants"]),
    _i("aot_joint_step", "a joint-graph step before AOTAutograd partitions (torch >= 2.12)",
       _e(GRAPH_COMPILE, "fx_g = _canonicalize_joint_rng(fx_g)", "fx_g = run_joint_graph_passes_on_hops(",
          "def _partition_joint_graph_into_fw_bw("),
       _e(GRAPH_COMPILE, """
          def _canonicalize_joint_rng(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
              return gm
          """, "def _partition_joint_graph_into_fw_bw("),
       expect=["_canonicalize_joint_rng"]),
    _i("partitioner_min_cut_call", "call in min_cut_rematerialization_partition",
       _e(PART, "joint_module = dedupe_recompute_chains(joint_module)", "if config.cse:",
          "def min_cut_rematerialization_partition"),
       _e(PART, """
          def dedupe_recompute_chains(joint_module: fx.GraphModule) -> fx.GraphModule:
              return joint_module
          """, "def min_cut_rematerialization_partition"),
       expect=["dedupe_recompute_chains"]),
    _i("partitioner_default_call", "call in default_partition",
       _e(PART, "joint_module = _strip_unused_outputs(joint_module)",
          "graph_has_recomputable_ops = has_recomputable_ops(joint_module)", "def default_partition"),
       _e(PART, """
          def _strip_unused_outputs(joint_module: fx.GraphModule) -> fx.GraphModule:
              return joint_module
          """, "def default_partition"),
       expect=["_strip_unused_outputs"]),
    _i("graph_lowering_scheduler_step", "a scheduler step added in GraphLowering._update_scheduler",
       _e(GRAPH, "self.scheduler.nodes = reorder_kernels_for_locality(self.scheduler.nodes)",
          "self.scheduler = Scheduler(self.operations)", "def _update_scheduler", where="after"),
       _e(GRAPH, """
          def reorder_kernels_for_locality(nodes):
              return nodes
          """, "class GraphLowering("),
       expect=["reorder_kernels_for_locality"]),
    _i("wrapper_ir_pass", "a new wrapper IR pass in PythonWrapperCodegen.run_wrapper_ir_passes",
       _e(WRAPPER, "self.compact_buffer_lines()", "self.memory_plan_reuse()",
          "def run_wrapper_ir_passes", where="after"),
       _e(WRAPPER, """
          def compact_buffer_lines(self) -> None:
              self.lines = [line for line in self.lines if line is not None]
          """, "def run_wrapper_ir_passes"),
       expect=["compact_buffer_lines"]),
    _i("freezing_passes_call", "call in freezing_patterns.freezing_passes",
       _e("torch/_inductor/fx_passes/freezing_patterns.py", "fold_frozen_views(gm)", "lazy_init()",
          "def freezing_passes("),
       _e("torch/_inductor/fx_passes/freezing_patterns.py", """
          def fold_frozen_views(gm: torch.fx.GraphModule) -> None:
              pass
          """, where="append"),
       expect=["fold_frozen_views"]),
    _i("graph_lowering_codegen_step", "a step after the scheduler is built in GraphLowering.codegen",
       _e(GRAPH, "self.scheduler.nodes = fuse_epilogue_chains(self.scheduler.nodes)",
          "self._update_scheduler()", "def codegen(self)", where="after"),
       _e(GRAPH, """
          def fuse_epilogue_chains(nodes):
              return nodes
          """, "class GraphLowering("),
       expect=["fuse_epilogue_chains"]),
    _i("partition_fn_step", "a joint-graph step in compile_fx.partition_fn",
       _e(COMPILE, "gm = _dedupe_rng_states(gm)", "gm = _recursive_joint_graph_passes(",
          "def partition_fn("),
       _e(COMPILE, """
          def _dedupe_rng_states(gm: GraphModule) -> GraphModule:
              return gm
          """, "def _recursive_post_grad_passes", where="before"),
       expect=["_dedupe_rng_states"]),
    _i("register_fusion_class", "@register_fusion class deriving from an Optimus fusion base",
       _e("torch/_inductor/fx_passes/group_batch_fusion.py", """
          @register_fusion("batch_int8_linear", pre_grad=False)
          class BatchInt8LinearFusion(BatchFusion):
              def match(self, node: torch.fx.Node):
                  return None

              def fuse(self, graph: torch.fx.GraphModule, subset: list[torch.fx.Node]):
                  pass
          """, '@register_fusion("batch_linear_post_grad"'),
       expect=[("batch_int8_linear", "BatchInt8LinearFusion")]),
    _i("custom_graph_pass_new_module", "CustomGraphPass subclass in a new _inductor module",
       _e("torch/_inductor/rope_pass.py", """
          import torch
          from torch._inductor.custom_graph_pass import CustomGraphPass, get_hash_for_files


          class RopeFusionPass(CustomGraphPass):
              def __call__(self, graph: torch.fx.Graph) -> None:
                  for node in graph.nodes:
                      pass

              def uuid(self):
                  return get_hash_for_files((__file__,))
          """, where="new"),
       expect=["RopeFusionPass"]),
    _i("observer_outside_roots", "GraphTransformObserver in a new helper outside the pipelines",
       _e(POST, """
          def _cleanup_views(gm: torch.fx.GraphModule) -> None:
              torch.fx.passes.graph_transform_observer.GraphTransformObserver(
                  gm, "cleanup_views"
              ).apply_graph_pass(remove_noop_ops)
          """, where="append"),
       expect=["cleanup_views"]),
    _i("config_if_fbcode", "key defined in both branches of an if",
       _e(CONFIG, """
          if is_fbcode():
              enable_rope_fusion_v2 = True
          else:
              enable_rope_fusion_v2 = False
          """, "pattern_matcher = True"),
       expect=["enable_rope_fusion_v2"]),
    _i("config_typed_literal", "Literal-typed mode key",
       _e(CONFIG, """
          # which int8 matmul lowering to use
          int8_mm_mode: Literal["default", "fused", "decomposed"] = "default"
          """, "pattern_matcher = True"),
       expect=["int8_mm_mode"]),
    # ---- config keys -------------------------------------------------------------------------
    _i("config_bool_digits", "bool pass gate with digits in the name",
       _e(CONFIG, """
          # overlap int8 matmuls with communication
          reorder_for_int8_overlap: bool = False
          """, "pattern_matcher = True"),
       expect=["reorder_for_int8_overlap"]),
    _i("config_plain_name", "bool key outside any naming convention",
       _e(CONFIG, "drop_dead_nodes = True", "pattern_matcher = True"),
       expect=["drop_dead_nodes"]),
    _i("config_env_default", "key with an os.environ default",
       _e(CONFIG, """
          enable_softmax_rewrite = (
              os.environ.get("TORCHINDUCTOR_ENABLE_SOFTMAX_REWRITE", "0") == "1"
          )
          """, "pattern_matcher = True"),
       expect=["enable_softmax_rewrite"]),
    _i("config_nested_triton", "key in the nested class triton",
       _e(CONFIG, "enable_fast_rope_v2 = True", "cudagraphs = ", "class triton:"),
       expect=["triton.enable_fast_rope_v2"]),
    _i("config_nested_cpp_env", "env-var key in the nested class cpp",
       _e(CONFIG, """
          enable_int8_gemm_fusion: bool = (
              os.environ.get("TORCHINDUCTOR_CPP_INT8_GEMM_FUSION", "1") == "1"
          )
          """, "threads = ", "class cpp:"),
       expect=["cpp.enable_int8_gemm_fusion"]),
    _i("config_new_nested_class", "a new nested config class",
       _e(CONFIG, """
          class aten_passes:
              # rewrite softmax into the safe variant
              enable_softmax_rewrite = False
              max_rewrites: int = 8
          """, "class triton:"),
       expect=["aten_passes.enable_softmax_rewrite", "aten_passes.max_rewrites"]),
    _i("config_optional_callable", "Optional[Callable] custom hook key",
       _e(CONFIG, """
          # custom pass run on the scheduler nodes after fusion
          post_fusion_custom_reorder: Optional[Callable[[list[Any]], list[Any]]] = None
          """, "pattern_matcher = True"),
       expect=["post_fusion_custom_reorder"]),
    _i("config_list_of_callables", "list of custom passes key",
       _e(CONFIG, """
          # user passes run after the built-in post-grad passes, in order
          post_grad_extra_passes: list[Callable[[torch.fx.Graph], None]] = []
          """, "pattern_matcher = True"),
       expect=["post_grad_extra_passes"]),
    _i("functorch_bool", "functorch config bool key",
       _e(FCONFIG, "enable_remat_v2 = False", "activation_memory_budget = "),
       expect=["enable_remat_v2"]),
    _i("functorch_env", "functorch config env-var key",
       _e(FCONFIG, """
          use_fast_min_cut = os.environ.get("TORCH_FUNCTORCH_FAST_MIN_CUT", "0") == "1"
          """, "activation_memory_budget = "),
       expect=["use_fast_min_cut"]),
    _i("functorch_callable_hook", "functorch Optional[Callable] hook key",
       _e(FCONFIG, """
          # a pass run on the joint graph before partitioning
          custom_joint_rewrite_fn: Optional[Callable] = None
          """, "activation_memory_budget = "),
       expect=["custom_joint_rewrite_fn"]),
    # ---- written after the fixes above, as a check on forms not targeted --------------------
    _i("unnamed_pass_object_from_new_module", "module-level unnamed PatternMatcherPass imported and applied",
       _e("torch/_inductor/fx_passes/int8_mm.py", """
          from ..pattern_matcher import PatternMatcherPass

          INT8_MM_PASS = PatternMatcherPass()
          """, where="new"),
       _e(POST, """
          from .int8_mm import INT8_MM_PASS

          INT8_MM_PASS.apply(gm.graph)
          """, PG_AT, PG_ROOT),
       expect=[("INT8_MM_PASS", "torch/_inductor/fx_passes/int8_mm.py")]),
    _i("fourth_pass_pattern", "a fourth PatternMatcherPass in post_grad's pass_patterns list",
       _e(POST, "PatternMatcherPass(),", "PatternMatcherPass(),", "pass_patterns = [", where="after"),
       expect=[("pass_pattern_3", "pass_patterns")],
       note="the observer's f\"pass_pattern_{i}\" over enumerate(pass_patterns) is expanded by"
            " the list's length: pass_pattern_3 is new (missed before round 4, when the glob"
            " matched the registered pass_pattern_0..2)"),
    _i("config_callable_list_loop", "a new list-of-callables key whose entries the root calls",
       _e(CONFIG, "post_grad_extra_fns: list[Callable[[torch.fx.Graph], None]] = []",
          "pattern_matcher = True"),
       _e(POST, """
          for extra_fn in config.post_grad_extra_fns:
              extra_fn(gm.graph)
          """, PG_AT, PG_ROOT),
       expect=["post_grad_extra_fns"]),
    _i("config_nested_trace", "a key in the nested class trace",
       _e(CONFIG, "log_rewrites: bool = False", "enabled = ", "class trace:"),
       expect=["trace.log_rewrites"]),
    _i("graph_module_pass_class", "CustomGraphModulePass subclass in a new fx_passes module",
       _e("torch/_inductor/fx_passes/layout_fix.py", """
          import torch
          from torch._inductor.custom_graph_pass import CustomGraphModulePass


          class LayoutFixPass(CustomGraphModulePass):
              def __call__(self, gm: torch.fx.GraphModule) -> None:
                  gm.recompile()

              def uuid(self):
                  return "layout_fix"
          """, where="new"),
       expect=["LayoutFixPass"]),
    _i("absolute_import_joint_call", "absolute import of a new pass, called in joint_graph_passes",
       _e("torch/_inductor/fx_passes/rng_dedupe.py", """
          import torch


          def dedupe_rng(gm: torch.fx.GraphModule) -> None:
              pass
          """, where="new"),
       _e(JOINT, """
          from torch._inductor.fx_passes.rng_dedupe import dedupe_rng

          dedupe_rng(graph)
          """, JG_AT, JG_ROOT),
       expect=["dedupe_rng"]),
    # ---- controls: no new pass ---------------------------------------------------------------
    _i("control_helper_not_called", "a helper added to post_grad.py, called by no pipeline",
       _e(POST, """
          def _count_nodes(graph: torch.fx.Graph) -> int:
              return len(graph.nodes)
          """, where="append"),
       control=True),
    _i("control_pattern_into_existing_dict", "a replacement registered into an existing pass dict",
       _e(POST, """
          @register_graph_pattern(
              CallFunction(aten.add.Tensor, KeywordArg("x"), 0),
              pass_dict=pass_patterns[1],
          )
          def _add_zero(match: Match, x):
              match.replace_by_example(lambda x: x, [x])
          """, "def post_grad_passes("),
       control=True, note="the registered pass pass_pattern_1 gains a pattern; no new pass"),
    _i("control_comment_and_docstring", "a comment in post_grad_passes and a docstring edit",
       _e(POST, "# TODO: move the profiler-op removal into the pattern passes", PG_AT, PG_ROOT),
       control=True),
    # ---- hook keys that are not written whole (round 4) --------------------------------------
    _i("setattr_concatenated_hook_key", "setattr(config, 'post_grad_' + 'custom_pre_pass', fn)",
       _e(COMPILE, """
          def _canonicalize_views(graph: torch.fx.Graph) -> None:
              for node in graph.find_nodes(op="call_function", target=torch.ops.aten.view.default):
                  pass
          """, "def _recursive_post_grad_passes", where="before"),
       _e(COMPILE, """
          setattr(config, "post_grad_" + "custom_pre_pass", _canonicalize_views)
          """, "post_grad_passes(gm, is_inference)", "def _recursive_post_grad_passes"),
       expect=["_canonicalize_views"]),
    _i("patch_implicitly_concatenated_key", "config.patch({'post_grad_custom_' 'post_pass': fn})",
       _e(COMPILE, """
          def _reorder_casts(graph: torch.fx.Graph) -> None:
              pass
          """, "def _recursive_post_grad_passes", where="before"),
       _e(COMPILE, """
          with config.patch(
              {
                  "post_grad_custom_"
                  "post_pass": _reorder_casts,
              }
          ):
              post_grad_passes(gm, is_inference)
          """, "post_grad_passes(gm, is_inference)", "def _recursive_post_grad_passes"),
       expect=["_reorder_casts"]),
    _i("setattr_loop_over_hook_keys", "setattr(config, key, fn) looping over a tuple of hook keys",
       _e(COMPILE, """
          _GRAPH_LOGGING_HOOKS = (
              "post_grad_custom_pre_pass",
              "post_grad_custom_post_pass",
          )


          def _log_graph_shape(graph: torch.fx.Graph) -> None:
              log.debug("post-grad graph: %d nodes", len(graph.nodes))
          """, "def _recursive_post_grad_passes", where="before"),
       _e(COMPILE, """
          if config.trace.enabled:
              for hook_name in _GRAPH_LOGGING_HOOKS:
                  setattr(config, hook_name, _log_graph_shape)
          """, "post_grad_passes(gm, is_inference)", "def _recursive_post_grad_passes"),
       expect=["_log_graph_shape"]),
    _i("fstring_hook_key_from_parameter", "setattr(config, f'{stage}_custom_post_pass', fn), stage"
       " a parameter", _e(COMPILE, """
          def _install_stage_hook(stage: str, fn: Callable[[torch.fx.Graph], None]) -> None:
              setattr(config, f"{stage}_custom_post_pass", fn)


          def _drop_identity_permutes(graph: torch.fx.Graph) -> None:
              pass
          """, "def _recursive_post_grad_passes", where="before"),
       _e(COMPILE, """
          _install_stage_hook("post_grad", _drop_identity_permutes)
          """, "post_grad_passes(gm, is_inference)", "def _recursive_post_grad_passes"),
       expect=["torch._inductor.config:stage + '_custom_post_pass'"],
       note="LG006: the key cannot be resolved (a parameter), so the store is reported"),
    _i("functorch_dunder_dict_hook", "torch._functorch.config.__dict__[key] = fn, key joined",
       _e(COMPILE, """
          def _split_joint_rng(joint_gm, joint_inputs):
              return joint_gm
          """, "def _recursive_post_grad_passes", where="before"),
       _e(COMPILE, """
          torch._functorch.config.__dict__["_".join(["joint", "custom", "pass"])] = _split_joint_rng
          """, "post_grad_passes(gm, is_inference)", "def _recursive_post_grad_passes"),
       expect=["_split_joint_rng"]),
    _i("control_setattr_loop_over_cache_keys", "setattr(config, key, False) over cache keys",
       _e(COMPILE, """
          for cache_key in ("fx_graph_cache", "autotune_local_cache"):
              setattr(config, cache_key, False)
          """, "post_grad_passes(gm, is_inference)", "def _recursive_post_grad_passes"),
       control=True, note="keys resolved to two non-hook config keys: nothing to report"),
]


# ---- applying edits ----------------------------------------------------------------------------

# ---- round 6 (LINT4): forms none of the above uses, written before any was run ---------------
# Styles taken from how passes entered torch 2.12-2.14 and third-party code: pattern-matcher
# decorators wrapped in a helper of one's own, an observer used as a context manager, a pass
# list imported from another module, dict dispatch and getattr in a root, CustomGraphPass built
# by type(...), torch.fx PassBase passes, setattr through functools.partial / an alias /
# starred arguments, config.patch(dict(...)), and (outside torch, at the tree's root: an
# extension package) monkeypatches of the pipeline, entries written into Inductor's lowering
# and decomposition tables, exec into a torch module, and a helper registering patterns into
# torch's own pattern pass.
EXT = "acme_ext"  # an extension package beside torch/ in the linted tree: linted as third-party
ROUND6: list[Injection] = [
    _i("r6_lowering_pattern_helper_module", "register_lowering_pattern wrapped in a helper of the module, new pass dict",
       _e("torch/_inductor/fx_passes/mm_lowering.py", """
          import functools

          import torch
          from ..pattern_matcher import Arg, CallFunction, PatternMatcherPass, register_lowering_pattern

          aten = torch.ops.aten
          mm_lower_patterns = PatternMatcherPass()


          def _register_mm_lowering(pattern):
              return register_lowering_pattern(pattern, pass_dict=mm_lower_patterns)


          @_register_mm_lowering(CallFunction(aten.mm.default, Arg(), Arg()))
          def _lower_mm(match, a, b):
              return None
          """, where="new"),
       _e(POST, """
          from .mm_lowering import mm_lower_patterns

          mm_lower_patterns.apply(gm.graph)
          """, PG_AT, PG_ROOT),
       expect=[("mm_lower_patterns", "torch/_inductor/fx_passes/mm_lowering.py")]),
    _i("r6_observer_context_manager", "with GraphTransformObserver(gm, 'x'): pass(gm.graph) in post_grad_passes",
       _e(POST, """
          with GraphTransformObserver(gm, "fold_casts"):
              fold_casts(gm.graph)
          """, PG_AT, PG_ROOT),
       _e(POST, """
          def fold_casts(graph: torch.fx.Graph) -> None:
              for node in graph.find_nodes(op="call_function", target=aten._to_copy.default):
                  pass
          """, where="append"),
       expect=[("fold_casts",)]),
    _i("r6_pass_list_from_other_module", "a pass list defined in a new module, looped over in post_grad_passes",
       _e("torch/_inductor/fx_passes/late_passes.py", """
          import torch


          def strip_asserts(graph: torch.fx.Graph) -> None:
              for node in graph.nodes:
                  pass


          def fold_reshapes(graph: torch.fx.Graph) -> None:
              for node in graph.nodes:
                  pass


          LATE_PASSES = [strip_asserts, fold_reshapes]
          """, where="new"),
       _e(POST, """
          from .late_passes import LATE_PASSES

          for late_pass in LATE_PASSES:
              late_pass(gm.graph)
          """, PG_AT, PG_ROOT),
       expect=["strip_asserts", "fold_reshapes"]),
    _i("r6_dict_dispatch_in_root", "a module-level dict of passes indexed and called in post_grad_passes",
       _e(POST, """
          def dedup_getitems(graph: torch.fx.Graph) -> None:
              for node in graph.nodes:
                  pass


          _EXTRA_PASSES = {"dedup": dedup_getitems}
          """, where="append"),
       _e(POST, '_EXTRA_PASSES["dedup"](gm.graph)', PG_AT, PG_ROOT),
       expect=["dedup_getitems"]),
    _i("r6_getattr_scheduler_method", "getattr(self, name)() over a tuple of names in Scheduler._init",
       _e(SCHED, """
          for step_name in ("late_reorder_loads",):
              getattr(self, step_name)()
          """, SCHED_AT, SCHED_ROOT, where="after"),
       _e(SCHED, """
          def late_reorder_loads(self) -> None:
              pass
          """, SCHED_CLASS_AT),
       expect=["late_reorder_loads"]),
    _i("r6_type_built_pass_class", "a CustomGraphPass subclass built by type(...) in a new module",
       _e("torch/_inductor/fx_passes/type_pass.py", """
          import torch
          from torch._inductor.custom_graph_pass import CustomGraphPass


          def _strip(self, graph: torch.fx.Graph) -> None:
              for node in graph.nodes:
                  pass


          StripPass = type("StripPass", (CustomGraphPass,), {"__call__": _strip, "uuid": lambda self: None})
          """, where="new"),
       expect=["StripPass"]),
    _i("r6_setattr_partial_install", "a hook installed through functools.partial(setattr, config)",
       _e("torch/_inductor/fx_passes/auto_install.py", """
          import functools

          import torch
          from torch._inductor import config

          _install = functools.partial(setattr, config)


          def _tidy(graph: torch.fx.Graph) -> None:
              pass


          def enable_tidy() -> None:
              _install("post_grad_custom_post_pass", _tidy)
          """, where="new"),
       expect=["_tidy"]),
    _i("r6_setattr_starred_install", "setattr(*ARGS) with ARGS a tuple naming a functorch hook",
       _e("torch/_functorch/rng_fix.py", """
          import torch
          from torch._inductor import config


          def _rng_fix(graph: torch.fx.Graph) -> None:
              pass


          _ARGS = (config, "joint_custom_post_pass", _rng_fix)


          def enable_rng_fix() -> None:
              setattr(*_ARGS)
          """, where="new"),
       expect=["_rng_fix"]),
    _i("r6_config_patch_dict_call", "config.patch(dict(post_grad_custom_pre_pass=f))",
       _e("torch/_inductor/fx_passes/pre_fix.py", """
          import torch
          from torch._inductor import config


          def _pre_fix(graph: torch.fx.Graph) -> None:
              pass


          def compile_with_pre_fix(fn):
              with config.patch(dict(post_grad_custom_pre_pass=_pre_fix)):
                  return fn()
          """, where="new"),
       expect=["_pre_fix"]),
    _i("r6_fx_passbase_module", "a torch.fx PassBase subclass in a new torch/fx/passes module",
       _e("torch/fx/passes/dedup_getattr.py", """
          import torch
          from torch.fx.passes.infra.pass_base import PassBase, PassResult


          class DedupGetattr(PassBase):
              def call(self, graph_module: torch.fx.GraphModule) -> PassResult:
                  return PassResult(graph_module, False)
          """, where="new"),
       expect=["DedupGetattr"]),
    _i("r6_partitioner_loop_over_tuple", "a tuple of new passes looped over in min_cut_rematerialization_partition",
       _e(PART, """
          for joint_pass in (_drop_dead_views, _fold_saved_casts):
              joint_module = joint_pass(joint_module)
          """, "if config.cse:", "def min_cut_rematerialization_partition"),
       _e(PART, """
          def _drop_dead_views(joint_module: fx.GraphModule) -> fx.GraphModule:
              return joint_module


          def _fold_saved_casts(joint_module: fx.GraphModule) -> fx.GraphModule:
              return joint_module
          """, "def min_cut_rematerialization_partition"),
       expect=["_drop_dead_views", "_fold_saved_casts"]),
    # ---- outside torch: an extension package in the same tree --------------------------------
    _i("r6_ext_monkeypatch_root", "extension: post_grad.post_grad_passes replaced by its own function",
       _e(f"{EXT}/__init__.py", "", where="new"),
       _e(f"{EXT}/patch.py", """
          import torch
          import torch._inductor.fx_passes.post_grad as post_grad

          _original = post_grad.post_grad_passes


          def acme_post_grad_passes(gm: torch.fx.GraphModule, is_inference: bool):
              _original(gm, is_inference)


          def install() -> None:
              post_grad.post_grad_passes = acme_post_grad_passes
          """, where="new"),
       expect=["acme_ext.patch:acme_post_grad_passes"]),
    _i("r6_ext_alias_setattr", "extension: s = setattr; s(config, hook, pass)",
       _e(f"{EXT}/__init__.py", "", where="new"),
       _e(f"{EXT}/install.py", """
          import torch
          import torch._inductor.config as inductor_config


          def acme_cleanup(graph: torch.fx.Graph) -> None:
              pass


          _set = setattr
          _set(inductor_config, "post_grad_custom_post_pass", acme_cleanup)
          """, where="new"),
       expect=["acme_ext.install:acme_cleanup"]),
    _i("r6_ext_tables", "extension: entries written into Inductor's lowering and decomposition tables",
       _e(f"{EXT}/__init__.py", "", where="new"),
       _e(f"{EXT}/lowerings.py", """
          import torch
          from torch._inductor import decomposition
          from torch._inductor.lowering import lowerings

          aten = torch.ops.aten


          def acme_gelu(x):
              return x


          def acme_silu(x):
              return x


          lowerings[aten.gelu.default] = acme_gelu
          decomposition.decompositions[aten.silu.default] = acme_silu
          """, where="new"),
       expect=["acme_ext.lowerings:acme_gelu", "acme_ext.lowerings:acme_silu"]),
    _i("r6_ext_exec_into_partitioners", "extension: exec of rewritten source into torch._functorch.partitioners",
       _e(f"{EXT}/__init__.py", "", where="new"),
       _e(f"{EXT}/remat.py", """
          import inspect

          import torch._functorch.partitioners as partitioners


          def splice_min_cut() -> None:
              source = inspect.getsource(partitioners.solve_min_cut)
              exec(source.replace("banned", "allowed"), partitioners.__dict__)
          """, where="new"),
       expect=["acme_ext.remat:splice_min_cut"]),
    _i("r6_ext_helper_into_torch_patterns", "extension: a helper registering patterns into torch's joint pattern pass",
       _e(f"{EXT}/__init__.py", "", where="new"),
       _e(f"{EXT}/patterns.py", """
          import torch
          from torch._inductor.fx_passes import joint_graph
          from torch._inductor.pattern_matcher import CallFunction, KeywordArg, register_graph_pattern

          aten = torch.ops.aten


          def acme_joint_pattern(pattern):
              return register_graph_pattern(pattern, pass_dict=joint_graph.pass_patterns[0])


          @acme_joint_pattern(CallFunction(aten.mul.Tensor, KeywordArg("x"), 1))
          def _acme_mul_one(match, x):
              pass
          """, where="new"),
       expect=[("acme_ext.patterns:_acme_mul_one", "acme_ext.patterns:acme_joint_pattern")]),
    _i("r6_ext_observer_subclass", "extension: a GraphTransformObserver subclass naming a pass",
       _e(f"{EXT}/__init__.py", "", where="new"),
       _e(f"{EXT}/observe.py", """
          import torch
          from torch.fx.passes.graph_transform_observer import GraphTransformObserver


          class AcmeObserver(GraphTransformObserver):
              pass


          def run(gm: torch.fx.GraphModule) -> None:
              with AcmeObserver(gm, "acme_rewrite"):
                  gm.recompile()
          """, where="new"),
       expect=[("acme_ext.observe:acme_rewrite", "acme_rewrite")]),
    # ---- round 6 controls --------------------------------------------------------------------
    _i("r6_control_ext_data_and_own_objects", "extension: data written into torch's config and modules, setattr on its own objects",
       _e(f"{EXT}/__init__.py", "", where="new"),
       _e(f"{EXT}/settings.py", """
          import torch
          from torch._functorch import partitioners


          def configure(obj, name, value):
              torch._inductor.config.fx_graph_cache = False
              partitioners.DEBUG = 1
              torch.backends.cudnn.benchmark = True
              put = setattr
              put(obj, name, value)
          """, where="new"),
       control=True),
    _i("r6_control_ext_foreign_graph", "extension: functions taking onnx_ir.Graph handed on in a list",
       _e(f"{EXT}/__init__.py", "", where="new"),
       _e(f"{EXT}/onnx_fixes.py", """
          import onnx_ir


          def _fix_topk(graph_like: onnx_ir.Graph) -> None:
              pass


          IR_FIXES = [_fix_topk]
          """, where="new"),
       control=True),
]
INJECTIONS += ROUND6
ROUND6_IDS = tuple(i.id for i in ROUND6)


# ---- round 10 (torch-forms): forms taken from real upstream Inductor work -------------------
# Each injection reproduces, in this file's own code and names, the STRUCTURE of one upstream
# pytorch/pytorch change (files in the index of public repositories, many from PR branches): how
# the pass is defined (a new module, a package, a pass object, a class), how it is wired (a
# function-local import in a root, an observer whose name differs from the function, a lambda
# handed to the observer, a nested config class gate, a string-valued gate, a tri-state key with
# a support predicate, a try/except around a reassignment, a lazily-called pattern init, a
# scheduler step imported from a module outside fx_passes, ...). `note=` names the model.
UPSTREAM: list[Injection] = [
    _i("u_cse_local_import_observer", "new module imported inside post_grad_passes, observer named unlike the function, pass self-gated by a new key",
       _e("torch/_inductor/fx_passes/fold_duplicates.py", """
          import torch

          from .. import config


          def _key(node: torch.fx.Node):
              return (node.target, tuple(id(a) for a in node.args), tuple(sorted(node.kwargs)))


          def fold_duplicates_pass(graph: torch.fx.Graph) -> None:
              if not config.fold_duplicates:
                  return
              first: dict = {}
              for node in list(graph.nodes):
                  if node.op != "call_function":
                      continue
                  seen = first.setdefault(_key(node), node)
                  if seen is not node and len(graph.nodes) < config.fold_duplicates_max_distance:
                      node.replace_all_uses_with(seen)
                      graph.erase_node(node)
          """, where="new"),
       _e(CONFIG, """
          # fold identical call_function nodes in post-grad (memory-aware)
          fold_duplicates: bool = True
          # largest topological distance a folded buffer may be kept alive over
          fold_duplicates_max_distance: int = 512
          """, "pattern_matcher = True"),
       _e(POST, """
          from .fold_duplicates import fold_duplicates_pass

          GraphTransformObserver(gm, "graph_fold_duplicates").apply_graph_pass(fold_duplicates_pass)
          """, PG_AT, PG_ROOT),
       expect=["fold_duplicates", "fold_duplicates_max_distance",
               ("graph_fold_duplicates", "fold_duplicates_pass")],
       note="modelled on fx_passes/inductor_cse.py and its post_grad.py wiring at 000699cc"),
    _i("u_chunker_package_try", "new fx_passes package behind a new nested config class, `graph = f(graph)` in try/except in joint_graph_passes",
       _e("torch/_inductor/fx_passes/seq_chunk/__init__.py", """
          from .core import CannotChunk, chunk_joint_graph

          __all__ = ["CannotChunk", "chunk_joint_graph"]
          """, where="new"),
       _e("torch/_inductor/fx_passes/seq_chunk/core.py", """
          import torch

          from ... import config


          class CannotChunk(RuntimeError):
              pass


          def chunk_joint_graph(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
              widest = max((len(n.users) for n in gm.graph.nodes), default=0)
              if widest < config.seq_chunk.min_amplification:
                  raise CannotChunk("nothing amplifies")
              gm.recompile()
              return gm
          """, where="new"),
       _e(CONFIG, """
          class seq_chunk:
              # split large activations along the sequence dimension in the joint graph
              enable: bool = False
              min_amplification: float = 8.0
          """, "class triton:"),
       _e(JOINT, """
          if config.seq_chunk.enable:
              from .seq_chunk import CannotChunk, chunk_joint_graph

              try:
                  graph = chunk_joint_graph(graph)
              except CannotChunk:
                  log.debug("sequence chunking skipped", exc_info=True)
          """, JG_AT, JG_ROOT),
       expect=["seq_chunk.enable", "seq_chunk.min_amplification", "chunk_joint_graph"],
       note="modelled on fx_passes/auto_chunker/ (d59313b0) and its joint_graph.py wiring"),
    _i("u_pre_grad_pass_object_external_patterns", "new PatternMatcherPass in pre_grad.py run by an observer, its patterns in a new module",
       _e(PRE, """
          argmax_sampling_pass = PatternMatcherPass(pass_name="argmax_sampling_pass")
          """, "efficient_conv_bn_eval_pass = PatternMatcherPass("),
       _e("torch/_inductor/fx_passes/argmax_sampling.py", """
          import torch

          from ..pattern_matcher import CallFunction, KeywordArg, Match, register_graph_pattern
          from .pre_grad import argmax_sampling_pass


          @register_graph_pattern(
              CallFunction(torch.argmax, KeywordArg("probs"), dim=-1),
              pass_dict=argmax_sampling_pass,
          )
          def _argmax_of_probs(match: Match, probs):
              pass
          """, where="new"),
       _e(PRE, """
          GraphTransformObserver(gm, "argmax_sampling_pass").apply_graph_pass(
              argmax_sampling_pass.apply
          )
          """, 'GraphTransformObserver(gm, "efficient_conv_bn_eval_pass")', PRE_ROOT),
       expect=["argmax_sampling_pass"],
       note="modelled on fx_passes/apply_gumbel_max_trick.py (00ac6abd) and the pass object and"
            " observer it added to pre_grad.py"),
    _i("u_construct_pass_new_module", "new module registering into construct_pattern_matcher_pass('new_name'), the name added to the pre-grad names",
       _e(SPLIT_CAT, '"use_fast_layernorm_pass",', '"remove_split_with_size_one_pass",',
          "pre_grad_pass_names = ["),
       _e("torch/_inductor/fx_passes/norm_kernels.py", """
          import torch

          from ..pattern_matcher import CallFunctionVarArgs, Match, MULTIPLE, register_graph_pattern
          from .split_cat import construct_pattern_matcher_pass


          @register_graph_pattern(
              CallFunctionVarArgs(torch.nn.functional.layer_norm, users=MULTIPLE),
              pass_dict=construct_pattern_matcher_pass("use_fast_layernorm_pass"),
          )
          def _fast_layernorm(match: Match, *args, **kwargs):
              pass
          """, where="new"),
       expect=["use_fast_layernorm_pass"],
       note="modelled on fx_passes/kernel_optimization.py (0dca3d40)"),
    _i("u_lambda_observer_string_gate", "observer running a lambda over a new module's function, gated by a string key != 'none'",
       _e("torch/_inductor/fx_passes/broadcast_bucketing.py", """
          import torch


          def bucket_broadcasts(gm: torch.fx.GraphModule, size_fn, mode: str) -> None:
              for node in gm.graph.nodes:
                  pass
          """, where="new"),
       _e(CONFIG, """
          # bucket broadcast collectives in the post-grad graph: "none", "all" or "fsdp"
          bucket_broadcasts_fx: str = "none"
          bucket_broadcasts_fx_bucket_size_determinator: Callable[[int], int] | None = None
          """, "pattern_matcher = True"),
       _e(POST, """
          if config.bucket_broadcasts_fx != "none":
              from torch._inductor.fx_passes.broadcast_bucketing import bucket_broadcasts

              GraphTransformObserver(gm, "bucket_broadcasts").apply_graph_pass(
                  lambda graph: bucket_broadcasts(
                      graph.owning_module,
                      config.bucket_broadcasts_fx_bucket_size_determinator,
                      config.bucket_broadcasts_fx,
                  )
              )
          """, PG_AT, PG_ROOT),
       expect=["bucket_broadcasts_fx", "bucket_broadcasts_fx_bucket_size_determinator",
               "bucket_broadcasts"],
       note="modelled on the bucket_all_reduce wiring in post_grad.py at 000699cc"),
    _i("u_ternary_pass_choice", "p = a if 'fsdp' in config.x else b; observer(lambda graph: p(...))",
       _e("torch/_inductor/fx_passes/scatter_bucketing.py", """
          import torch


          def bucket_scatter(gm: torch.fx.GraphModule) -> None:
              for node in gm.graph.nodes:
                  pass


          def bucket_fsdp_scatter(gm: torch.fx.GraphModule) -> None:
              for node in gm.graph.nodes:
                  pass
          """, where="new"),
       _e(CONFIG, 'bucket_scatters_fx: str = "none"', "pattern_matcher = True"),
       _e(POST, """
          if config.bucket_scatters_fx != "none":
              from torch._inductor.fx_passes.scatter_bucketing import (
                  bucket_fsdp_scatter,
                  bucket_scatter,
              )

              p = bucket_fsdp_scatter if "fsdp" in config.bucket_scatters_fx else bucket_scatter
              GraphTransformObserver(gm, "bucket_scatters").apply_graph_pass(
                  lambda graph: p(graph.owning_module)
              )
          """, PG_AT, PG_ROOT),
       expect=["bucket_scatters_fx", ("bucket_scatters", "bucket_fsdp_scatter", "bucket_scatter")],
       note="modelled on the bucket_all_gathers / bucket_fsdp_all_gather choice in post_grad.py"
            " at 000699cc"),
    _i("u_nested_key_scheduler_timed", "Scheduler._init step under a new key of an existing nested class, inside dynamo_timed",
       _e(CONFIG, """
          # sink waits as late as their first use (no reordering of collectives)
          enable_late_waits: bool = False
          """, "enable_overlap_scheduling: bool = False", "class aten_distributed_optimizations"),
       _e(COMMS, """
          def sink_waits_late(snodes: list[BaseSchedulerNode]) -> list[BaseSchedulerNode]:
              return list(snodes)
          """, "def sink_waits("),
       _e(SCHED, """
          if config.aten_distributed_optimizations.enable_late_waits:
              with dynamo_timed("Scheduler.sink_waits_late", log_pt2_compile_event=True):
                  self.nodes = comms.sink_waits_late(self.nodes)
          """, SCHED_AT, SCHED_ROOT, where="after"),
       expect=["aten_distributed_optimizations.enable_late_waits", "sink_waits_late"],
       note="modelled on the enable_simple_overlap step of Scheduler._init (torch 2.14)"),
    _i("u_scheduler_step_from_new_module", "Scheduler._init step imported from a new _inductor module (not fx_passes), gated by a new key",
       _e("torch/_inductor/buffer_lifetime.py", """
          from __future__ import annotations


          def reorder_for_buffer_lifetime(nodes, name_to_buf, graph_inputs):
              order = sorted(range(len(nodes)), key=lambda i: len(nodes[i].get_outputs()))
              return [nodes[i] for i in order]
          """, where="new"),
       _e(CONFIG, """
          # reorder scheduler nodes to shorten buffer lifetimes
          reorder_for_buffer_lifetime: bool = False
          """, "pattern_matcher = True"),
       _e(SCHED, """
          if config.reorder_for_buffer_lifetime:
              from .buffer_lifetime import reorder_for_buffer_lifetime

              self.nodes = reorder_for_buffer_lifetime(
                  self.nodes, self.name_to_buf, OrderedSet(V.graph.graph_inputs.keys())
              )
          """, SCHED_AT, SCHED_ROOT, where="after"),
       expect=["reorder_for_buffer_lifetime",
               ("torch._inductor.buffer_lifetime:reorder_for_buffer_lifetime",
                "reorder_for_buffer_lifetime")],
       note="modelled on pytorch/pytorch#134874 (memory.py reorder_for_peak_memory, imported"
            " inside Scheduler._init)"),
    _i("u_group_pass_class_config_flag", "plain pass class instance (no pass base) gated by config_flag('new_key'), applied in pre_grad_passes",
       _e("torch/_inductor/fx_passes/norm_grouping.py", """
          import torch

          from ..pattern_matcher import CallFunctionVarArgs, config_flag


          class GroupNodesPass:
              def __init__(self, pattern, replacement_fn, extra_check=lambda m: True):
                  self.pattern = pattern
                  self.replacement_fn = replacement_fn
                  self.extra_check = extra_check

              def apply(self, graph: torch.fx.Graph) -> None:
                  hits = [n for n in graph.nodes if self.pattern.match(n) and self.extra_check(n)]
                  if len(hits) > 1:
                      self.replacement_fn(graph, hits)


          def _stack_group_norms(graph: torch.fx.Graph, nodes: list[torch.fx.Node]) -> None:
              pass


          group_norm_fusion_pass = GroupNodesPass(
              CallFunctionVarArgs(torch.nn.functional.group_norm),
              _stack_group_norms,
              extra_check=lambda m: config_flag("group_norm_fusion_fx_passes")(m),
          )
          """, where="new"),
       _e(CONFIG, "group_norm_fusion_fx_passes: bool = False", "pattern_matcher = True"),
       _e(PRE, """
          from .norm_grouping import group_norm_fusion_pass

          group_norm_fusion_pass.apply(gm.graph)
          """, PRE_AT, PRE_ROOT),
       expect=["group_norm_fusion_fx_passes", ("group_norm_fusion_pass", "GroupNodesPass")],
       note="modelled on fx_passes/group_fusion.py (5d232753): GroupFusionPass and its"
            " config_flag(...) gate"),
    _i("u_string_dispatch_pass_list", "passes named by strings in a new private list key, dispatched by a driver through globals()",
       _e("torch/_inductor/fx_passes/comm_fusion.py", """
          import torch


          def fuse_allreduce_concat(graph: torch.fx.Graph) -> None:
              for node in graph.nodes:
                  pass


          def delay_comm_waits(graph: torch.fx.Graph) -> None:
              for node in graph.nodes:
                  pass


          def run_comm_fusions(graph: torch.fx.Graph, passes) -> None:
              for entry in passes:
                  fn = globals()[entry] if isinstance(entry, str) else entry
                  fn(graph)
          """, where="new"),
       _e(CONFIG, """
          _fuse_comm: bool = False
          _comm_fusion_passes: list[Callable[..., None] | str] = [
              "fuse_allreduce_concat",
              "delay_comm_waits",
          ]
          """, "pattern_matcher = True"),
       _e(POST, """
          if config._fuse_comm:
              from .comm_fusion import run_comm_fusions

              GraphTransformObserver(gm, "fuse_comm").apply_graph_pass(
                  lambda graph: run_comm_fusions(graph, config._comm_fusion_passes)
              )
          """, PG_AT, PG_ROOT),
       expect=["_fuse_comm", "_comm_fusion_passes", ("fuse_comm", "run_comm_fusions")],
       note="modelled on fx_passes/ddp_fusion.py's fuse_ddp_communication and"
            " config._fuse_ddp_communication_passes"),
    _i("u_private_key_module_import", "pass imported at the top of post_grad.py, called under a new private key",
       _e("torch/_inductor/fx_passes/async_tp.py", """
          import torch


          def async_tp_pass(graph: torch.fx.Graph) -> None:
              for node in graph.nodes:
                  pass
          """, where="new"),
       _e(POST, "from .async_tp import async_tp_pass", "from .. import config, ir, pattern_matcher",
          where="after"),
       _e(CONFIG, "_async_tp: bool = False", "pattern_matcher = True"),
       _e(POST, """
          if config._async_tp:
              async_tp_pass(gm.graph)
          """, PG_AT, PG_ROOT),
       expect=["_async_tp", "async_tp_pass"],
       note="modelled on micro_pipeline_tp_pass / config._micro_pipeline_tp in post_grad.py"),
    _i("u_replacement_lazy_init", "register_replacement(..., pass_dicts=new pass) in an init_once_fakemode init, init and apply in the root",
       _e("torch/_inductor/fx_passes/rms_fusion.py", """
          import torch

          from ..pattern_matcher import (
              fwd_only,
              init_once_fakemode,
              PatternMatcherPass,
              register_replacement,
          )

          rms_patterns = PatternMatcherPass()


          def _rms_search(x, w):
              return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


          def _rms_replace(x, w):
              return torch.rms_norm(x, (x.shape[-1],), w, 1e-6)


          @init_once_fakemode
          def _rms_init():
              x, w = torch.empty(4, 8), torch.empty(8)
              register_replacement(_rms_search, _rms_replace, [x, w], fwd_only, pass_dicts=rms_patterns)
          """, where="new"),
       _e(POST, """
          if config.pattern_matcher:
              from .rms_fusion import _rms_init, rms_patterns

              _rms_init()
              GraphTransformObserver(gm, "rms_fusion").apply_graph_pass(rms_patterns.apply)
          """, PG_AT, PG_ROOT),
       expect=[("rms_fusion", "rms_patterns")],
       note="modelled on pad_mm.py / fuse_attention.py (_pad_mm_init, _sfdp_init:"
            " init_once_fakemode + register_replacement(pass_dicts=...))"),
    _i("u_recursive_subgraph_wrapper", "a _recursive_* wrapper over subgraphs added to compile_fx, called beside view_to_reshape",
       _e(COMPILE, """
          def fold_layout_copies(gm: GraphModule) -> None:
              for node in gm.graph.nodes:
                  pass


          def _recursive_fold_layout_copies(gm: GraphModule) -> None:
              for subgraph_name in _get_subgraph_names(gm):
                  _recursive_fold_layout_copies(getattr(gm, subgraph_name))
              fold_layout_copies(gm)
          """, "def _recursive_post_grad_passes", where="before"),
       _e(COMPILE, "_recursive_fold_layout_copies(gm)", "view_to_reshape(gm)", where="after"),
       expect=[("fold_layout_copies", "_recursive_fold_layout_copies")],
       note="modelled on compile_fx.py's _recursive_pre_grad_passes / _recursive_joint_graph_passes"),
    _i("u_tristate_key_support_gate", "tri-state key (None: on where supported) or'ed with a support predicate from the pass module",
       _e("torch/_inductor/fx_passes/output_sharing.py", """
          import torch


          def output_sharing_supported(gm: torch.fx.GraphModule) -> bool:
              return torch.version.hip is None


          def share_output_computation_pass(graph: torch.fx.Graph) -> None:
              for node in graph.nodes:
                  pass
          """, where="new"),
       _e(CONFIG, """
          # share equivalent output computation; None: on where it is known to be safe
          share_output_computation: bool | None = None
          """, "pattern_matcher = True"),
       _e(POST, """
          from .output_sharing import output_sharing_supported, share_output_computation_pass

          if config.share_output_computation or (
              config.share_output_computation is None and output_sharing_supported(gm)
          ):
              GraphTransformObserver(gm, "share_output_computation").apply_graph_pass(
                  share_output_computation_pass
              )
          """, PG_AT, PG_ROOT),
       expect=["share_output_computation",
               ("share_output_computation", "share_output_computation_pass")],
       note="modelled on fx_passes/dedupe_graph_outputs.py (c9fcc1d2):"
            " is_output_computation_sharing_supported gate (its wiring inferred)"),
    _i("u_nested_key_gm_pass_post_grad", "apply_gm_pass of a new module's function under a new key of an existing nested class",
       _e("torch/_inductor/fx_passes/unwrap_deps.py", """
          import torch


          def unwrap_compute_deps(gm: torch.fx.GraphModule) -> bool:
              changed = False
              for node in list(gm.graph.nodes):
                  if node.op == "call_function" and node.target is torch.ops.higher_order.control_deps:
                      changed = True
              return changed
          """, where="new"),
       _e(CONFIG, "unwrap_compute_deps: bool = False", "enable_overlap_scheduling: bool = False",
          "class aten_distributed_optimizations"),
       _e(POST, """
          if config.aten_distributed_optimizations.unwrap_compute_deps:
              from torch._inductor.fx_passes.unwrap_deps import unwrap_compute_deps

              GraphTransformObserver(gm, "unwrap_compute_deps").apply_gm_pass(unwrap_compute_deps)
          """, PG_AT, PG_ROOT),
       expect=["aten_distributed_optimizations.unwrap_compute_deps",
               ("unwrap_compute_deps",)],
       note="modelled on fx_passes/foreach_mm_post_sched.py (4559cb7d), a gm pass after overlap"
            " scheduling (its wiring inferred)"),
    _i("u_inference_aware_pass_class", "CustomInferenceAwareGraphPass subclass in a new module, instantiated and called in post_grad_passes",
       _e("torch/_inductor/fx_passes/cast_elision.py", """
          import torch
          from torch._inductor.custom_graph_pass import CustomInferenceAwareGraphPass


          class CastElisionPass(CustomInferenceAwareGraphPass):
              def __call__(self, graph: torch.fx.Graph, is_inference: bool = False) -> None:
                  if not is_inference:
                      return
                  for node in graph.nodes:
                      pass

              def uuid(self):
                  return "cast_elision"
          """, where="new"),
       _e(POST, """
          from .cast_elision import CastElisionPass

          CastElisionPass()(gm.graph, is_inference=is_inference)
          """, PG_AT, PG_ROOT),
       expect=["CastElisionPass"],
       note="modelled on post_grad.py's use of CustomInferenceAwareGraphPass at 000699cc"
            " (the base class is absent from torch 2.11)"),
    _i("u_partitioner_solver_dispatch", "new functorch knob selecting a solver from a dict, the solver called in the partitioner root",
       _e(FCONFIG, """
          # which solver picks what to recompute: "dp" or "greedy"
          remat_solver_v2 = "dp"
          """, "activation_memory_budget = "),
       _e(PART, """
          def _remat_solve_dp(joint_module: fx.GraphModule) -> fx.GraphModule:
              return joint_module


          def _remat_solve_greedy(joint_module: fx.GraphModule) -> fx.GraphModule:
              return joint_module


          _REMAT_SOLVERS = {"dp": _remat_solve_dp, "greedy": _remat_solve_greedy}
          """, "def min_cut_rematerialization_partition"),
       _e(PART, "joint_module = _REMAT_SOLVERS[config.remat_solver_v2](joint_module)", "if config.cse:",
          "def min_cut_rematerialization_partition"),
       expect=["remat_solver_v2", "_remat_solve_dp", "_remat_solve_greedy"],
       note="modelled on functorch config.activation_memory_budget_solver and its use in"
            " partitioners.py"),
    _i("u_scheduler_custom_hook_key", "a new private Callable | None hook key called on the node list in Scheduler._init",
       _e(CONFIG, """
          # a user pass over the scheduler nodes, run after loop merging
          _post_merge_custom_pass: Callable[[list[Any]], list[Any]] | None = None
          """, "pattern_matcher = True"),
       _e(SCHED, """
          if config._post_merge_custom_pass is not None:
              self.nodes = config._post_merge_custom_pass(self.nodes)
          """, SCHED_AT, SCHED_ROOT, where="after"),
       expect=["_post_merge_custom_pass"],
       note="modelled on config._post_fusion_custom_pass and its call in Scheduler._init (2.14)"),
    # ---- controls: refactors and additions that add no pass ---------------------------------
    _i("u_control_patterns_into_joint_dict_lazily", "patterns registered into joint_graph's existing pass dict by a cached init called from lazy_init",
       _e("torch/_inductor/fx_passes/misc_patterns.py", """
          def _to_grouped_mm(match) -> None:
              pass


          @functools.cache
          def _grouped_experts_init(input_device=None):
              from torch._inductor.pattern_matcher import CallFunction, KeywordArg, register_graph_pattern

              from .joint_graph import patterns

              register_graph_pattern(
                  CallFunction(aten.bmm.default, KeywordArg("x"), KeywordArg("w")),
                  pass_dict=patterns,
              )(lambda match, *args, **kwargs: _to_grouped_mm(match))
          """, where="append"),
       _e(JOINT, """
          from .misc_patterns import _grouped_experts_init

          _grouped_experts_init(input_device)
          """, "_misc_patterns_init(input_device)", "def lazy_init(", where="after"),
       control=True,
       note="modelled on fx_passes/moe.py (66a1445f): new patterns of the registered joint-graph"
            " pattern pass, no new pass (upstream put the init in a new fx_passes module, which"
            " the module inventory reports by design; here it is in misc_patterns.py)"),
    _i("u_control_tensor_helpers", "tensor-overlap predicates added to reinplace.py, used by no pipeline",
       _e("torch/_inductor/fx_passes/reinplace.py", """
          def _byte_range(val: torch.Tensor) -> tuple[int, int]:
              start = val.storage_offset() * val.element_size()
              span = sum((s - 1) * st for s, st in zip(val.size(), val.stride()) if s > 1)
              return start, start + (span + 1) * val.element_size()


          def copies_may_overlap(dst: torch.Tensor, src: torch.Tensor) -> bool:
              a, b = _byte_range(dst), _byte_range(src)
              return not (a[1] <= b[0] or b[1] <= a[0])
          """, where="append"),
       control=True,
       note="modelled on fx_passes/copy_overlap.py (39577877): helpers, no pass (upstream a new"
            " fx_passes module, which the module inventory reports by design)"),
    _i("u_control_trace_artifact_in_root", "a trace_structured artifact with lambdas and a counter in post_grad_passes",
       _e(POST, """
          counters["inductor"]["post_grad_graphs"] += 1
          trace_structured(
              "artifact",
              metadata_fn=lambda: {"name": "before_post_grad", "encoding": "string"},
              payload_fn=lambda: gm.print_readable(print_output=False, include_stride=True),
          )
          """, PG_AT, PG_ROOT),
       control=True, note="modelled on the trace_structured artifacts in post_grad_passes"),
    _i("u_control_new_lowering", "a new register_lowering in lowering.py",
       _e("torch/_inductor/lowering.py", """
          @register_lowering(aten.special_erfcx_v2_placeholder, type_promotion_kind=None)
          def _erfcx_v2(x):
              return x
          """, "@register_lowering(aten.clone)"),
       control=True,
       note="op coverage: lowerings run only inside regions, where Inductor owns the graph"),
    _i("u_control_new_decomposition", "a new register_decomposition in _inductor/decomposition.py",
       _e("torch/_inductor/decomposition.py", """
          @register_decomposition([aten.hardtanh_backward])
          def _hardtanh_backward_v2(grad, x, lo, hi):
              return grad
          """, "@register_decomposition([aten.clamp])"),
       control=True,
       note="op coverage: Inductor's decompositions run only inside regions"),
]
INJECTIONS += UPSTREAM
UPSTREAM_IDS = tuple(i.id for i in UPSTREAM)


class AnchorMissing(Exception):
    pass


def apply(tree: Path, edit: Edit) -> Path:
    path = tree / edit.path
    if edit.where == "new":
        path.parent.mkdir(parents=True, exist_ok=True)  # an extension package beside torch/
        path.write_text(edit.code)
        return path
    text = path.read_text()
    if edit.where == "append":
        path.write_text(text.rstrip("\n") + "\n\n\n" + edit.code)
        return path
    lines = text.splitlines(keepends=True)
    start = 0
    if edit.inside:
        start = next((n for n, line in enumerate(lines) if edit.inside in line), -1)
        if start < 0:
            raise AnchorMissing(f"{edit.path}: no line holds {edit.inside!r}")
    at = next((n for n in range(start, len(lines)) if edit.anchor in lines[n]), -1)
    if at < 0:
        raise AnchorMissing(f"{edit.path}: no line holds {edit.anchor!r} after {edit.inside!r}")
    indent = lines[at][:len(lines[at]) - len(lines[at].lstrip())] + "    " * edit.indent
    block = "".join(indent + line if line.strip() else line
                    for line in edit.code.splitlines(keepends=True))
    if edit.where == "after":
        at += 1
    elif block.lstrip().startswith(("def ", "class ", "@", "_", "rope", "int8", "late")):
        block += "\n\n" if not indent else "\n"  # keep definitions apart, as black does
    lines.insert(at, block)
    path.write_text("".join(lines))
    return path


def run_check(tree: Path, cache: Path) -> dict:
    env = dict(os.environ, LITE_GUARD_CACHE_DIR=str(cache))
    started = time.perf_counter()
    proc = subprocess.run([str(ROOT / ".venv" / "bin" / "lite_guard"), "check", "--no-project",
                           "--format", "json", str(tree)], capture_output=True, text=True, env=env)
    data = json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else {
        "findings": [], "errors": [proc.stderr.strip()[-400:]]}
    data["rc"], data["seconds"] = proc.returncode, round(time.perf_counter() - started, 2)
    return data


def matches(finding: dict, name: str) -> bool:
    if finding.get("name") == name:
        return True
    return f"'{name}'" in finding.get("message", "") or (
        name.endswith("_") and f"'{name}" in finding.get("message", ""))


def judge(injection: Injection, findings: list[dict], tree: Path) -> dict:
    groups = []
    for group in injection.expect:
        hit = next((f for f in findings for name in group if matches(f, name)), None)
        groups.append({"names": list(group), "found": hit is not None,
                       "finding": _line(hit, tree) if hit else None})
    return {"found": all(g["found"] for g in groups) if not injection.control else not findings,
            "groups": groups, "findings": [_line(f, tree) for f in findings]}


def _line(finding: dict, tree: Path) -> str:
    path = os.path.relpath(finding["path"], tree) if finding.get("path") else "?"
    return f"{path}:{finding.get('line')} {finding.get('code')} {finding.get('message')}"


def run_version(version: str, injections: list[Injection], dry: bool, verbose: bool) -> dict:
    source = TREES / version
    with tempfile.TemporaryDirectory(prefix=f"inj-{version}-") as scratch:
        tree = Path(scratch) / version
        shutil.copytree(source, tree, symlinks=True)
        cache = Path(scratch) / "cache"
        baseline = None if dry else run_check(tree, cache)
        out = {"version": version, "baseline_findings": None if dry else len(baseline["findings"]),
               "baseline_rc": None if dry else baseline["rc"], "injections": {}}
        for injection in injections:
            saved: dict[Path, bytes | None] = {}
            record: dict = {"form": injection.form, "control": injection.control}
            try:
                for edit in injection.edits:
                    path = tree / edit.path
                    if path not in saved:
                        saved[path] = path.read_bytes() if path.exists() else None
                    apply(tree, edit)
                for path in saved:
                    ast.parse(path.read_text(), str(path))  # the injection must be valid Python
                if not dry:
                    result = run_check(tree, cache)
                    record.update(judge(injection, result["findings"], tree))
                    record["errors"] = result.get("errors", [])
                    record["seconds"] = result["seconds"]
                else:
                    record["found"] = None
            except AnchorMissing as error:
                record.update(found=None, skipped=str(error))
            except SyntaxError as error:
                record.update(found=None, skipped=f"injection does not parse: {error}")
            finally:
                for path, data in saved.items():
                    if data is None:
                        path.unlink(missing_ok=True)
                    else:
                        path.write_bytes(data)
            out["injections"][injection.id] = record
            if verbose or record.get("skipped"):
                mark = {True: "found", False: "MISSED", None: "skip"}[record["found"]]
                print(f"  {version} {injection.id}: {mark} {record.get('skipped', '')}",
                      file=sys.stderr)
                if verbose and not dry:
                    for line in record.get("findings", []):
                        print(f"      {line[:220]}", file=sys.stderr)
    return out


def summarize(results: list[dict]) -> list[dict]:
    rows = []
    for result in results:
        records = result["injections"].values()
        injected = [r for r in records if not r["control"] and r["found"] is not None]
        controls = [r for r in records if r["control"] and r["found"] is not None]
        rows.append({"version": result["version"], "baseline_findings": result["baseline_findings"],
                     "found": sum(r["found"] for r in injected), "injected": len(injected),
                     "controls_silent": sum(r["found"] for r in controls),
                     "controls": len(controls)})
    return rows


SECTION = "Lint: injected torch passes"
# Written after the misses of the others were fixed: how the lint does on forms nobody targeted.
LATE = ("unnamed_pass_object_from_new_module", "fourth_pass_pattern", "config_callable_list_loop",
        "config_nested_trace", "graph_module_pass_class", "absolute_import_joint_call")


def render(data: dict) -> str:
    """The BENCHMARKS.md section: command, commit, recall per tree, the forms, what was missed."""
    rows = "\n".join(
        f"| {r['version']} | {r['baseline_findings']} | {r['found']}/{r['injected']} |"
        f" {r['controls_silent']}/{r['controls']} |" for r in data["summary"])
    forms: dict[str, list] = {}
    for result in data["results"]:
        for injection_id, record in result["injections"].items():
            forms.setdefault(injection_id, []).append(record)
    notes = {i.id: i.note for i in INJECTIONS}
    missed = [f"- `{i}` ({recs[0]['form']}): missed on "
              + ", ".join(r["version"] for r, rec in zip(data["results"], recs)
                          if rec["found"] is False)
              + (f". {notes[i][0].upper()}{notes[i][1:]}." if notes.get(i) else "")
              for i, recs in forms.items() if any(rec["found"] is False for rec in recs)]
    late = [i.id for i in INJECTIONS if i.id in LATE]
    late_runs = [result["injections"][i]["found"] for result in data["results"] for i in late
                 if i in result["injections"] and result["injections"][i]["found"] is not None]
    late_found, late_total = sum(late_runs), len(late_runs)
    return f"""Command: `{data['command']} --write` (runs, then renders this section), commit
`{data['commit']}`, this 2-core machine.
{data['injections']} injections and {data['controls']} controls, each applied alone to a fresh copy of
torch's `_inductor` / `_functorch` / `fx/passes` tree of each release (the `checkout-2.13` tree has
`version.txt` at its root and no `torch/version.py`), then `lite_guard check --no-project <tree>`.
An injection counts as found when the finding names what was added (the new function, pass name,
class or config key), not merely when something is reported; a control (a helper nobody calls, a
pattern added to an existing registered pass dict, a comment) counts when nothing is reported.
The injections are written as Inductor developers add passes (`bench/injected_torch.py` lists
each with its anchor): calls in `post_grad_passes` / `joint_graph_passes` / `pre_grad_passes` /
`Scheduler._init` / `Scheduler.__init__` / `GraphLowering` / the partitioners / the wrapper IR
passes / `compile_fx` / the freezing passes; new `fx_passes` modules; pattern passes named by a
constant or an f-string; `@register_graph_pattern` into a new pass dict; observers; passes handed
to a run-and-log helper, listed in a pass list, wrapped in `functools.partial`, imported under an
alias or called through a module attribute; a comms reorder pass usable by name; hooks installed
through `config.patch(...)` (keyword and dict) and functorch's `joint_custom_pass`; hook keys
not written whole (`setattr(config, "post_grad_" + "custom_pre_pass", f)`, an implicitly
concatenated `patch` dict key, `setattr` looping over a tuple of hook keys, functorch's
`__dict__["_".join([...])]`, and an f-string key from a parameter, which is LG006); config keys of
every shape (digits, env-var defaults, nested and new nested classes, `Optional[Callable]` hooks,
lists of passes, `Literal` modes, keys under `if`), in both config modules.

| tree | findings, untouched | injections found | controls silent |
|---|---|---|---|
{rows}

{chr(10).join(missed) if missed else "No injection was missed and no control reported anything."}
{_not_run(data)}
Read these numbers as what they are: most injections were written, then every miss was fixed by
structure (not by naming the injected passes); the last {len(late)} ({", ".join(f"`{i}`" for i in late)})
were written after those fixes, as a check on forms nobody targeted: {late_found} of
{late_total} runs of them were found. The first run, at `89d99ba` (before this round's
LG005 steps handed on, the new roots, by-name reorder passes and reused loop variables), found 42
of the first 51 injections on 2.13.0. Injections nobody here has seen will find forms this set
lacks; a step added inside a function that is neither a root nor a registered pass (say inside
`Scheduler.fuse_nodes` or `comms.decide_global_ordering_of_comms`) is not reported by design: it
runs as part of that registered pass and under its lite flag.
{_round6(data)}
{_upstream(data)}
{_history(data.get("history"))}
Per-injection findings (file:line, code, message): `bench/results/injected_torch.json`."""


def _not_run(data: dict) -> str:
    run = {r["version"] for r in data["summary"]}
    left = [v for v in VERSIONS if v not in run]
    return (f"Trees not run this time (the whole run takes about 10 minutes a tree on this machine):"
            f" {', '.join(left)}; the earlier run of every injection before round 6 found them all"
            " there too.\n" if left else "")


def _round6(data: dict) -> str:
    runs = [(result["version"], i, result["injections"][i]) for result in data["results"]
            for i in ROUND6_IDS if i in result["injections"]]
    injected = [r for _, _, r in runs if not r["control"] and r["found"] is not None]
    controls = [r for _, _, r in runs if r["control"] and r["found"] is not None]
    return f"""
**Round 6 (LINT4): {len([i for i in ROUND6 if not i.control])} injections and
{len([i for i in ROUND6 if i.control])} controls in forms none of the above used** (`r6_*` in
`bench/injected_torch.py`): `register_lowering_pattern` wrapped in a helper of the new module, an
observer used as a context manager, a pass list imported from another module, a dict of passes
indexed in the root, `getattr(self, name)()` in `Scheduler._init`, a `CustomGraphPass` built by
`type(...)`, hooks installed through `functools.partial(setattr, config)`, `setattr(*ARGS)` and
`config.patch(dict(...))`, a torch.fx `PassBase` in `torch/fx/passes`, a pass tuple looped over in
the partitioner; and, in an extension package beside `torch/` (linted as third-party code):
`post_grad.post_grad_passes` replaced, `s = setattr; s(config, ...)`, entries written into
Inductor's `lowerings` / `decompositions` tables, `exec` into `torch._functorch.partitioners`, a
helper registering patterns into torch's joint pattern pass, a `GraphTransformObserver` subclass.
Controls: data written into torch's config and modules, `setattr` on the project's own objects,
functions taking an `onnx_ir.Graph` handed on in a list. All runs: {sum(r['found'] for r in injected)}/{len(injected)}
injections found, {sum(r['found'] for r in controls)}/{len(controls)} controls silent. Honestly: they were
written before any was run, and the first run (2.13.0, at the commit that added them) found 9 of
17; 6 of the 8 misses were this file's expectations naming an extension's function bare where the
lint names it `acme_ext.module:function` (corrected in the file, not in the lint), and 2 were real:
a dict entry called in the root was reported under the dict's name, not the function's, and
`getattr(self, name)()` was silently covered by the `builtins:getattr` helper entry. Both are
fixed by structure in LG005 (the dict display's entry; each string the name may be, an unreadable
name reported as written)."""


def _upstream(data: dict) -> str:
    runs = [result["injections"][i] for result in data["results"] for i in UPSTREAM_IDS
            if i in result["injections"]]
    injected = [r for r in runs if not r["control"] and r["found"] is not None]
    controls = [r for r in runs if r["control"] and r["found"] is not None]
    return f"""
**Round 10 (torch-forms): {len([i for i in UPSTREAM if not i.control])} injections and
{len([i for i in UPSTREAM if i.control])} controls modelled on real upstream Inductor changes** (`u_*`,
each `note=` names the upstream file and commit, read in the index of public repositories, PR
branches included; the code is this file's own): a new module imported inside `post_grad_passes`
run by an observer named unlike its function (inductor_cse), a new `fx_passes` package behind a
new nested config class with `graph = chunk(graph)` in `try` (auto_chunker), a pass object added
to `pre_grad.py` with its patterns in a new module (apply_gumbel_max_trick),
`construct_pattern_matcher_pass("new")` (kernel_optimization), observers running lambdas under a
string gate and a ternary pass choice (the FX bucketing passes), Scheduler steps under a new key of
a nested class inside `dynamo_timed` and imported from a new module outside `fx_passes`
(reorder_for_peak_memory, #134874), a plain pass class applied by its module-level instance under
a `config_flag("...")` gate (group_fusion), passes named by strings in a private list key
(ddp_fusion), `register_replacement(pass_dicts=...)` in an `init_once_fakemode` init, a
`_recursive_*` subgraph wrapper, a tri-state key with a support predicate (dedupe_graph_outputs),
a `CustomInferenceAwareGraphPass` subclass, a functorch solver knob indexing a dict in the
partitioner, a private `Callable | None` hook key on the scheduler nodes. Controls: patterns added
to joint_graph's registered pass by a cached init (moe), tensor helpers (copy_overlap), a trace
artifact in the root, a new lowering and a new decomposition. All runs:
{sum(r['found'] for r in injected)}/{len(injected)} injections found, {sum(r['found'] for r in controls)}/{len(controls)}
controls silent. Honestly: the first run (2.14.1, at `f84b94d`, before any fix) found 15 of the
first 17; the 2 misses were real: `group_norm_fusion_pass.apply(gm.graph)` was covered by the
registered helper name `apply` (a pattern pass's method), and `SOLVERS[config.x](m)` was named by
the dict. Both are fixed by structure in LG005 (a method taking an FX graph called on a
module-level object of a class no registry base makes a pass is that object's step; a dict
display indexed by a setting runs every entry). Two controls, written as upstream did in new
`fx_passes` modules, were reported by the FX package's module inventory (by design: a new module
there is registered first); they now sit in existing modules, the note says so."""


def _history(history: dict | None) -> str:
    if not history:
        return ""
    c, p, m = history["configs"], history["passes"], history["modules"]
    codes = ", ".join(f"{code} {n}" for code, n in sorted(history["by_code"].items()))
    return f"""
**History replay: what Inductor developers really added between {history['old']} and
{history['new']}.** The {history['new']} tree, its `torch/version.py` set to {history['old']}, linted
with the shipped registry: every entry whose torch range starts after {history['old']} is then
unregistered, as on the day that pass or key landed. {history['findings']} findings ({codes}).
New config keys (an ast diff of both config modules, independent of the lint): {c['found']}/{c['total']}
reported{f" (missed: {', '.join(c['missed'])})" if c['missed'] else ""}; `xpu.cutlass_dir` is no real
miss: in {history['old']} `class xpu(cutlass)` already inherited it, which the diff does not follow.
New pass and pipeline-step entries (the registry's own record of what is new, written with the
scanner's help, so not independent): {p['found']}/{p['total']} named by a finding{f" (not by name: {', '.join(p['missed'])}: helpers and functions of new fx_passes modules whose module, or the pass calling them, is reported instead)" if p['missed'] else ""}.
New modules of `torch/_inductor/fx_passes`: {m['found']}/{m['total']} reported{f" (not: {', '.join(x.rsplit('/', 1)[-1] for x in m['missed'])}, generated SFDP pattern tables of the registered `fuse_attention` pass: new patterns of an existing pass, like the control above)" if m['missed'] else ""}."""


# ---- history replay: the passes and configs real Inductor developers added after 2.11 ---------
HISTORY_OLD, HISTORY_NEW = "2.11.0", "2.14.1"
CONFIG_FILES = (CONFIG, FCONFIG)


def config_keys(path: Path) -> set[str]:
    """Every key a config module defines: module-level names (under ``if`` too) and the keys of
    its nested classes (``triton.x``), read with ast (independent of the lint's own reading)."""
    keys: set[str] = set()

    def walk(body: list, prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.If, ast.Try)):
                walk(node.body + getattr(node, "orelse", []), prefix)
            elif isinstance(node, ast.ClassDef) and prefix.count(".") < 2:
                walk(node.body, f"{prefix}{node.name}.")
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                keys.update(prefix + t.id for t in targets
                            if isinstance(t, ast.Name) and not t.id.startswith("__"))

    walk(ast.parse(path.read_text()).body, "")
    return keys


def run_history(verbose: bool) -> dict:
    """Lint the 2.14.1 tree as if it were 2.11.0 (its torch/version.py says so), with the shipped
    registry: what the registry says is new since 2.11 is then unregistered there, as it was on
    the day each pass landed. Ground truth, two kinds: config keys new in 2.14.1 by an ast diff
    of both config modules (independent of the lint), and pass / pipeline-step entries whose
    torch range starts after 2.11 (the registry's record, written with the lint's scanner's
    help, so not independent); plus each new module of torch/_inductor/fx_passes."""
    sys.path.insert(0, str(ROOT))
    from lite_guard.registry import Registry, _version_matches, shipped_registry_files

    old, new = TREES / HISTORY_OLD, TREES / HISTORY_NEW
    registry = Registry.load(shipped_registry_files())
    passes = sorted({p.name for p in registry.passes if getattr(p, "torch", None)
                     and not _version_matches(p.torch, HISTORY_OLD)
                     and _version_matches(p.torch, HISTORY_NEW)})
    configs = sorted(set().union(*(config_keys(new / f) - config_keys(old / f)
                                   for f in CONFIG_FILES)))
    modules = sorted(str(p.relative_to(new)) for p in (new / "torch/_inductor/fx_passes").rglob("*.py")
                     if not (old / p.relative_to(new)).exists())
    with tempfile.TemporaryDirectory(prefix="inj-history-") as scratch:
        tree = Path(scratch) / HISTORY_NEW
        shutil.copytree(new, tree, symlinks=True)
        version = tree / "torch" / "version.py"
        version.write_text(re.sub(r"(?m)^__version__ = .*$", f"__version__ = '{HISTORY_OLD}'",
                                  version.read_text()))
        result = run_check(tree, Path(scratch) / "cache")
        findings = result["findings"]
        lines = [_line(f, tree) for f in findings]
    by_code: dict[str, int] = {}
    for finding in findings:
        by_code[finding.get("code", "?")] = by_code.get(finding.get("code", "?"), 0) + 1

    def found(names: list[str], test) -> dict:
        hits = {n: next((line for f, line in zip(findings, lines) if test(f, n)), None) for n in names}
        return {"total": len(names), "found": sum(v is not None for v in hits.values()),
                "missed": [n for n, v in hits.items() if v is None]}

    out = {"old": HISTORY_OLD, "new": HISTORY_NEW, "findings": len(findings), "by_code": by_code,
           "configs": found(configs, matches), "passes": found(passes, matches),
           "modules": found(modules, lambda f, m: (f.get("path") or "").endswith(m)),
           "lines": lines}
    if verbose:
        for kind in ("configs", "passes", "modules"):
            print(f"  history {kind}: {out[kind]['found']}/{out[kind]['total']} missed"
                  f" {out[kind]['missed']}", file=sys.stderr)
    return out


def git_commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trees", nargs="*", default=list(VERSIONS))
    parser.add_argument("--only", nargs="*", default=None, help="injection ids")
    parser.add_argument("--dry-run", action="store_true", help="apply and parse only, no lint")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("--history", action="store_true",
                        help="also (with --only) replay 2.14.1 as 2.11.0 (run by default)")
    parser.add_argument("--render", action="store_true",
                        help="write the BENCHMARKS.md section from --out, run nothing")
    parser.add_argument("--write", action="store_true",
                        help="run every injection on every tree, then write the BENCHMARKS.md section")
    args = parser.parse_args(argv)
    if args.write and args.only is None:
        status = main([a for a in (argv if argv is not None else sys.argv[1:]) if a != "--write"])
        return status or main(["--render", "--out", str(args.out)])
    if args.render:
        sys.path.insert(0, str(ROOT))
        from bench.markdown_section import replace_section

        replace_section(ROOT / "BENCHMARKS.md", SECTION, render(json.loads(args.out.read_text())))
        print(f"BENCHMARKS.md: section '{SECTION}' rewritten from {args.out.relative_to(ROOT)}")
        return 0
    commit = git_commit()  # the code measured: taken before the (long) run
    injections = [i for i in INJECTIONS if args.only is None or i.id in args.only]
    results = [run_version(v, injections, args.dry_run, args.verbose) for v in args.trees]
    if args.dry_run:
        return 0
    history = run_history(args.verbose) if args.only is None or args.history else None
    if history is not None:
        print(f"history ({HISTORY_NEW} linted as {HISTORY_OLD}): {history['findings']} findings;"
              f" new config keys {history['configs']['found']}/{history['configs']['total']},"
              f" new pass entries {history['passes']['found']}/{history['passes']['total']},"
              f" new fx_passes modules {history['modules']['found']}/{history['modules']['total']}")
    summary = summarize(results)
    for row in summary:
        print(f"{row['version']:>14}: untouched tree {row['baseline_findings']} finding(s); "
              f"found {row['found']}/{row['injected']} injections; controls silent "
              f"{row['controls_silent']}/{row['controls']}")
    missed = sorted({(i, r["form"]) for res in results for i, r in res["injections"].items()
                     if r["found"] is False})
    for injection_id, form in missed:
        print(f"  not found or not silent: {injection_id} ({form})")
    if args.only is None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({
            "command": "python bench/injected_torch.py", "commit": commit,
            "injections": len([i for i in injections if not i.control]),
            "controls": len([i for i in injections if i.control]),
            "summary": summary, "results": results, "history": history}, indent=1) + "\n")
        print(f"wrote {args.out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
