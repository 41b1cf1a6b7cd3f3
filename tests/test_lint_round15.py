"""Round 15 (docs/lint-recall.md, "Round 15"): the forms of the round-15 held-out set and the
known misses of round 14, each found (or left silent) by its structure and effect.

* a rewrite whose only change to the graph is a store on the nodes it walks (``node.target =
  torch.sub``, ``node.args = (...)``, ``node.target += "_dup"``: registry ``graph_store`` rows)
  is a rewrite; the same attribute stored on an object no graph walk yields is not;
* a graph producer known by the tracing call it makes (``graph = tracer.trace(model)``:
  registry ``graph_producer`` rows), annotated nowhere, runs the rewrites it hands that graph
  to; ``torch.jit.trace`` is no FX tracer;
* a function tracing the graph it is handed again (``make_fx(gm, decomposition_table=...)``)
  rewrites it; a one-call wrapper of it called by a compiler is reported as the wrapper (the
  callable the pipeline runs, as the guard names an installed callable), naming the step;
* ``make_fallback`` of a custom op alone is what Inductor does by itself (silent); with a layout
  constraint, or of an aten op, it is a change (reported); a step handed on only inside the
  code of a class reported as a pass (its ``uuid()`` hashing the step's source) is part of it.

Real files under tests/data/lint_round15/<case>/ (written here, no third-party code), the real
``lite_guard check`` CLI, prefilter on and off, the exact path, line, column, code and message
of every finding."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_lint_dynamic_installs import _lg001
from test_lint_round10_recall import check_exactly

DATA = Path(__file__).parent / "data" / "lint_round15"


def _files(case: str) -> dict[str, str]:
    root = DATA / case
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*.py"))}


def _fallback(line: int, op: str) -> str:
    name = f"proj.lowering:register.make_fallback({op})"
    return _lg001(f"proj/lowering.py:{line}:5", name,
                  f"calls make_fallback({op}), a change of torch's global table: every later"
                  " compile lowers or decomposes that op so, lite regions included, and no hook"
                  " sees it", "lowering")


CASES = {
    # (a) retarget_adds / swap_operands change the graph only by stores on the nodes they walk;
    # count_adds only reads; Options / retarget store the same names on no node
    "node_store": [
        _lg001("proj/passes.py:5:5", "proj.passes:retarget_adds",
               "function taking an FX graph (walks graph.nodes), handed on as 'retarget_adds' in"
               " proj.passes", "post_grad"),
        _lg001("proj/passes.py:11:5", "proj.passes:swap_operands",
               "function taking an FX graph (walks gm.graph.nodes), handed on as 'swap_operands'"
               " in proj.passes", "post_grad")],
    # (b) the compiler runs cpu_pipeline, a one-call wrapper of decompose (a retrace with a
    # decomposition table): the wrapper is what runs, named with its step
    "wrapper": [
        _lg001("proj/passes.py:15:5", "proj.passes:cpu_pipeline",
               "function taking an FX graph (annotated GraphModule), rewrites it (through"
               " proj.passes:decompose, which retraces it with make_fx()) called with the graph by"
               " the compiler 'proj.backend:_compile' given to aot_autograd(fw_compiler=...)",
               "post_grad")],
    # (c) prepare annotates nothing and builds its graph with Tracer.trace; script's
    # torch.jit.trace builds no FX graph
    "tracing_entry": [
        _lg001("proj/prepare.py:8:5", "proj.prepare:duplicate_shared_modules",
               "function taking an FX graph (walks graph.nodes), rewrites it (stores node.target)"
               " and the graph producer proj.prepare:prepare, which builds a graph itself (graph ="
               " tracer.trace(...)), runs it on each graph it builds: a pass of that producer,"
               " which no hook sees", "post_grad")],
    # round 14's precision: fallbacks of custom ops alone and a step hashed by its pass's uuid()
    # are silent; the pass, a fallback with a layout constraint and one of aten are reported
    "fallbacks": [
        _lg001("proj/fusion.py:19:7", "proj.fusion:FuseRelu", "class deriving from CustomGraphPass",
               "post_grad", "class"),
        _fallback(10, "torch.ops.mylib.packed_linear"),
        _fallback(11, "torch.ops.aten.cummax")],
    # no pass at all: module swaps, a custom op, args / target stored on jobs, torch.jit.trace
    "control": [],
}


@pytest.mark.parametrize("prefilter", [True, False], ids=["prefilter", "no-prefilter"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_each_round15_shape_is_exactly_its_findings(tmp_path, case, prefilter):
    check_exactly(tmp_path, _files(case), "proj", CASES[case], prefilter)


def test_the_node_stores_and_tracing_calls_are_registry_data():
    """The evidence is the registry's (``graph_store`` / ``graph_producer`` rows): a registry
    without those rows finds neither form; the shipped one declares Node's three attributes
    and the tracers the new rules follow."""
    from lint_rules.index import Vocabulary
    from lite_guard.registry import Registry

    vocab = Vocabulary.from_registry(Registry.load(include_project=False))
    assert vocab.graph_stores == {"target", "args", "kwargs"}
    assert {"symbolic_trace", "trace", "make_fx", "export", "prepare_qat_fx"} <= vocab.producer_leaves
    assert vocab.may_rewrite_graph("for n in g.nodes:\n    n.target = f\n")
    assert not vocab.may_rewrite_graph("self.target = f\n")  # no graph member it may walk
    assert not Vocabulary().may_rewrite_graph("for n in g.nodes:\n    n.target = f\n")
