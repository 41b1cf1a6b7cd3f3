"""Checks by effect: a graph or schedule that changed with no registered cause is refused.

The guard intercepts the passes the registry names (lite_compiler.hooks). A pass nobody named
(patched into torch, or new in a torch release) is caught here instead, by what it did:

* joint graph: the graph AOTAutograd traced reaches the partitioner unchanged, except by
  registered passes that ran on it (their ledger row records what they changed);
* partitioner: every op of the forward and backward graphs is an op of the joint graph (same
  name, target and inputs): a partition may split and recompute, never rewrite;
* outside regions: the fw/bw/inference graph that runs is the graph AOTAutograd handed the lite
  compiler, node for node, apart from the region calls and registered custom passes;
* inside regions: the region graph reaches lowering unchanged except by registered passes; the
  scheduler's final order is the order lowering produced, modulo fusion groups (with reorders
  off), and it neither drops nor invents nodes without a registered pass; wrapper codegen's
  memory planning changes memory lines only, and a line of a registered pass class (ReuseLine)
  counts as that pass running.

Fingerprints are structural: each node's op, target, inputs (by node name), constant arguments,
and the dtype and shape of its value. The checks run in lite sessions only (never at run time).
"""

from __future__ import annotations

import bisect
import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import torch
from torch.fx import Node as _Node

from lite_compiler import guard
from lite_compiler.kernel_libraries import verifying_build

Fingerprint = tuple[tuple[Any, ...], ...]


# ---- fingerprints -----------------------------------------------------------------------------

def _target_name(target: Any) -> str:
    try:
        return _TARGET_NAMES[target]
    except (KeyError, TypeError):
        pass
    if isinstance(target, str):
        return target
    module = getattr(target, "__module__", None)
    qualname = getattr(target, "__qualname__", None) or getattr(target, "__name__", None)
    name = f"{module}.{qualname}" if module and qualname and not hasattr(target, "_schema") \
        else str(target)  # OpOverload: "aten.mul.Tensor"
    try:
        _TARGET_NAMES[target] = name
    except TypeError:
        pass
    return name


_TARGET_NAMES: dict[Any, str] = {}


class _Target:
    """A node's target compared by identity, never by its name or its ``__eq__``: an object that
    prints as ``aten.mul.Tensor`` is not aten.mul.Tensor. The name is for messages only. Holds
    the object, so an id is never recycled while a fingerprint lives."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __eq__(self, other: object) -> bool:
        return type(other) is _Target and other.obj is self.obj

    def __hash__(self) -> int:
        return id(self.obj)


def _target_key(target: Any) -> tuple[str, int]:
    """A target inside a value number: its name and its identity (the caller holds the object)."""
    return _target_name(target), id(target)


def _value_summary(val: Any) -> Any:
    shape = getattr(val, "shape", None)
    dtype = getattr(val, "dtype", None)
    if shape is not None and dtype is not None:
        return (str(dtype), tuple(map(str, shape)))
    if isinstance(val, (list, tuple)):
        return tuple(_value_summary(v) for v in val)
    # A number output's recorded value is the traced number or nothing: torch 2.11 drops it when
    # Inductor re-propagates fake values in a region (max_q/max_k of cuDNN attention: int -> None),
    # which changes nothing that runs. Numbers and None summarize alike.
    if val is None or isinstance(val, (int, float, bool, torch.SymInt, torch.SymFloat, torch.SymBool)):
        return None
    return type(val).__name__


def _arg_key(arg: Any, rename: Callable[[Any], str] | None) -> str:
    """An argument as text, node references as ``%name`` (written out by hand: fx's map_arg plus
    repr cost four times as much, and fingerprints are taken at every stage boundary)."""
    if isinstance(arg, _Node):
        return "%" + (rename(arg) if rename is not None else arg.name)
    if isinstance(arg, tuple):
        inner = ", ".join([_arg_key(a, rename) for a in arg])
        return f"({inner},)" if len(arg) == 1 else f"({inner})"
    if isinstance(arg, list):
        return "[" + ", ".join([_arg_key(a, rename) for a in arg]) + "]"
    if isinstance(arg, dict):
        if not arg:
            return "{}"  # most nodes' kwargs
        return "{" + ", ".join([f"{k!r}: {_arg_key(v, rename)}" for k, v in arg.items()]) + "}"
    return repr(arg)


def node_row(node: Any, rename: Callable[[Any], str] | None = None) -> tuple[Any, ...]:
    # (name, op, target's name, args, kwargs, value, target itself): rows compare a callable
    # target by identity (_Target), the name is what messages print; a str target (placeholder,
    # get_attr, call_method) is a name, compared by value.
    target = node.target
    return (node.name if rename is None else rename(node), node.op, _target_name(target),
            _arg_key(node.args, rename), _arg_key(node.kwargs, rename),
            _value_summary(node.meta.get("val")), target if type(target) is str else _Target(target))


def fingerprint(graph: Any, skip: Callable[[Any], bool] | None = None,
                rename: Callable[[Any], str] | None = None,
                cache: dict[Any, tuple[Any, ...]] | None = None) -> Fingerprint:
    """One row per node, in graph order (``skip``: nodes left out; ``rename``: node names).

    ``cache`` (one compile's): a node's row is reused while its name, target, args, kwargs and
    value are the very same objects (fx replaces the args tuple whenever they change, and the
    cache holds the old objects, so an identity match is never a recycled id)."""
    if cache is None or rename is not None:
        return tuple(node_row(n, rename) for n in graph.nodes if skip is None or not skip(n))
    rows = []
    for node in graph.nodes:
        if skip is not None and skip(node):
            continue
        name, target, args, kwargs, val = (node.name, node.target, node.args, node.kwargs,
                                           node.meta.get("val"))
        held = cache.get(node)
        if held is None:
            held = cache[node] = ((name, target, args, kwargs, val), node_row(node))
        else:  # written out: this loop runs for every node at every stage boundary
            old = held[0]
            if old[2] is not args or old[3] is not kwargs or old[4] is not val \
                    or old[0] is not name or old[1] is not target:
                held = cache[node] = ((name, target, args, kwargs, val), node_row(node))
        rows.append(held[1])
    return tuple(rows)


def _same_row(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    # A value filled in where there was none (fake-tensor propagation) is not a change.
    return a[:5] == b[:5] and a[6] == b[6] and (a[5] == b[5] or a[5] is None or b[5] is None)


def same(before: Fingerprint, after: Fingerprint) -> bool:
    return before == after or (len(before) == len(after)
                               and all(_same_row(a, b) for a, b in zip(before, after)))


def describe_change(before: Fingerprint, after: Fingerprint, limit: int = 3) -> str:
    """What changed, for people: the first few nodes added, removed, rewritten or moved."""
    old = {row[0]: row for row in before}
    new = {row[0]: row for row in after}
    parts: list[str] = []
    for name, row in new.items():
        if name not in old:
            parts.append(f"node '{name}' ({row[2]}) added")
        elif not _same_row(row, old[name]):
            was = old[name]
            now_type = type(getattr(row[6], "obj", row[6])).__name__
            what = (f"target {was[2]} -> {row[2]}" if was[2] != row[2] else
                    f"target {row[2]} is another object of that name ({now_type}, not the one"
                    " traced)" if was[6] != row[6] else
                    f"inputs {was[3]} -> {row[3]}" if was[3] != row[3] else
                    f"kwargs {was[4]} -> {row[4]}" if was[4] != row[4] else
                    f"value {was[5]} -> {row[5]}")
            parts.append(f"node '{name}' changed: {what}")
    parts += [f"node '{name}' ({row[2]}) removed" for name, row in old.items() if name not in new]
    if not parts:
        order = [row[0] for row in after]
        parts.append(f"nodes reordered (now {', '.join(order[:6])}{', ...' if len(order) > 6 else ''})")
    more = f" (and {len(parts) - limit} more)" if len(parts) > limit else ""
    return "; ".join(parts[:limit]) + more


def graph_of(obj: Any) -> Any:
    """The fx.Graph a pass argument stands for (GraphModule or Graph), else None."""
    import torch.fx

    if isinstance(obj, torch.fx.GraphModule):
        return obj.graph
    if isinstance(obj, torch.fx.Graph):
        return obj
    return None


# ---- the state one compile shares -------------------------------------------------------------

class EffectState:
    """The fingerprint each tracked graph must have when the next pass (or stage) looks at it.

    A plain class, as the guard's other records: a dataclass costs ~0.7 ms of every process's
    import (its methods are generated from source text)."""

    def __init__(self) -> None:
        self.expected: dict[int, tuple[Any, Fingerprint, str]] = {}
        # Fingerprint rows by node, reused while the node is unchanged (see fingerprint()); the
        # outside-regions rows (region inputs renamed) apart.
        self.rows: dict[Any, tuple[Any, ...]] = {}
        self.outer_rows: dict[Any, tuple[Any, ...]] = {}
        # Scheduler operation names that registered passes removed (dead-node elimination).
        self.removed: set[str] = set()
        # Registered reorders allowed to run in the scheduler now being built (reorders on).
        self.reorders: list[str] = []
        # How many Inductor modules were imported when Inductor was last swept for patched code in
        # this compile (0: not yet; ~10-25 ms a sweep; again when more are imported;
        # lite_compiler.provenance.check_inductor_classes). Not reset between stages.
        self.swept_inductor = 0
        # What those sweeps judged (and allowed), by where it was found: judged once a compile.
        self.judged: dict[str, Any] = {}
        # GraphLowering.run calls seen (probe): a region compile that adds none was lowered
        # somewhere the guard cannot see (another process, a cache). Not reset between stages.
        self.lowerings_seen = 0
        # Fingerprints of the forward and backward graphs as the partitioner returned them
        # ("fw", "bw"; check_partition). Not reset between stages: the backward compiles later,
        # at the first .backward(), from a copy of the graph.
        self.partitioned: dict[str, Fingerprint] = {}
        # The joint graph's targets, held while the partition is checked: value numbers name a
        # target by its id (_target_key), and the partitioner replaces the joint graph.
        self.joint_targets: list[Any] = []

    def reset(self) -> None:
        """A stage is done: drop its graphs (the compiled function outlives the compile, and
        these would keep the joint and region graphs alive with it)."""
        self.expected.clear()
        self.rows.clear()
        self.outer_rows.clear()
        self.removed.clear()
        self.reorders.clear()
        self.joint_targets.clear()

    def expect(self, graph: Any, where: str, fp: Fingerprint | None = None) -> Fingerprint:
        fp = fingerprint(graph, cache=self.rows) if fp is None else fp
        self.expected[id(graph)] = (graph, fp, where)  # the graph itself keeps its id unique
        return fp

    def tracked(self, graph: Any) -> bool:
        held = self.expected.get(id(graph))
        return held is not None and held[0] is graph

    def verify(self, graph: Any, stage: str, here: str, required: bool = False) -> Fingerprint | None:
        """Refuse if ``graph`` changed since the last registered point; its fingerprint now.
        ``required``: an untracked graph (replaced since the expectation) is refused too."""
        if not self.tracked(graph):
            if required:
                guard.refuse_effect(stage, f"the graph at {here} is not the graph the last"
                                    " registered point saw (replaced in between)")
            return None
        _, fp, where = self.expected[id(graph)]
        now = fingerprint(graph, cache=self.rows)
        if not same(fp, now):
            guard.refuse_effect(stage, f"the graph changed between {where} and {here}:"
                                f" {describe_change(fp, now)}")
        return now


def _state() -> EffectState | None:
    sess = guard.current_session()
    if sess is None or sess.mode != "lite" or sess.effects is None:
        return None
    return sess.effects


# ---- registered passes: what they changed is explained ----------------------------------------

@contextlib.contextmanager
def registered_pass(name: str, stage: str, args: tuple[Any, ...],
                    record: Any) -> Iterator[Callable[[Any], None]]:
    """Around an allowed registered pass: the graph it gets must be as expected (else something
    unregistered ran before it), and whatever it changes becomes the new expectation, written
    into its ledger row. Yields a callback for the pass's result (a new graph it returns)."""
    state = _state()
    given = [g for g in (graph_of(a) for a in args[:2]) if g is not None] if state else []
    graphs = [g for g in given if state.tracked(g)] if state else []
    before = {id(g): state.verify(g, stage, f"registered pass '{name}'") for g in graphs}
    # AOTAutograd's inference graph is held as a fingerprint (traced_inference): a registered
    # pass on it (tensorify_python_scalars, after the trace) moves that reference, recorded.
    inference = state.partitioned.get("inference") if state is not None else None
    traced = [g for g in given if g not in graphs] if inference is not None else []
    traced = [(g, fp) for g in traced for fp in (fingerprint(g),) if same(fp, inference)]
    results: list[Any] = []
    yield results.append
    if state is None:
        return
    changes = []
    for g, fp in traced:
        after = fingerprint(g)
        if not same(fp, after):
            state.partitioned["inference"] = after
            changes.append(describe_change(fp, after))
    for g in graphs:
        after = state.expect(g, f"registered pass '{name}'")
        if not same(before[id(g)], after):
            changes.append(describe_change(before[id(g)], after))
    for result in results:
        returned = graph_of(result)
        if returned is not None and graphs and returned is not graphs[0]:
            state.expect(returned, f"registered pass '{name}'")
            changes.append("returned a new graph")
    if changes and record is not None:
        record.effect = "; ".join(changes)


def scheduler_pass_effect(name: str, scheduler: Any, record: Any) -> Callable[[], None]:
    """Around an allowed scheduler pass: the nodes it removes are explained (dead-node
    elimination); returns the callback to run after it."""
    state = _state()
    if state is None:
        return lambda: None
    before = _scheduled_names(scheduler.nodes)

    def after() -> None:
        removed = set(before) - set(_scheduled_names(scheduler.nodes))
        if removed:
            state.removed |= removed
            if record is not None:
                record.effect = f"removed {len(removed)} node(s): {', '.join(sorted(removed)[:5])}"

    return after


def note_reorder(name: str) -> None:
    """An allowed registered reorder runs: the schedule's order is its to decide."""
    state = _state()
    if state is not None:
        state.reorders.append(name)


# ---- joint graph and partitioner (outside regions) --------------------------------------------

def traced_joint(result: Any) -> Any:
    """Probe on AOTAutograd's joint trace: remember what it produced."""
    state = _state()
    joint = graph_of(result[0]) if isinstance(result, tuple) and result else None
    if state is not None and joint is not None:
        state.expect(joint, "AOTAutograd's joint trace")
    return result


def traced_inference(result: Any) -> Any:
    """Probe on AOTAutograd's inference trace (no partitioner runs): what reaches the lite
    compiler's inference entry is compared with it there (check_after_partition, reported)."""
    state = _state()
    graph = graph_of(result[0]) if isinstance(result, tuple) and result else None
    if state is not None and graph is not None:
        state.partitioned["inference"] = fingerprint(graph)
    return result


def _value_numbers(graph: Any, inputs: dict[str, Any] | None = None) -> dict[Any, Any]:
    """Node -> the value it computes, structurally: (target, constants, values of its inputs).
    Two nodes the partitioner's CSE may merge have the same number; a random op keeps its own
    name in its number, so merging two of them (a numerics change) never looks equal."""
    import torch

    numbers: dict[Any, Any] = {}
    wrappers = _rng_wrappers()
    replays = _replay_candidates(inputs)
    for node in graph.nodes:
        if node.op != "call_function":
            known = (inputs or {}).get(node.name)
            numbers[node] = known if known is not None else (node.op, node.name)
            continue
        replayed = _replayed_rng_value(node, numbers, wrappers, replays)
        if replayed is not None:
            numbers[node] = replayed
            continue
        args = _arg_key((node.args, node.kwargs), lambda n: str(numbers[n]))
        tags = getattr(node.target, "tags", ())
        seeded = torch.Tag.nondeterministic_seeded in tags if tags else False
        numbers[node] = hash((_target_key(node.target), args, node.name if seeded else ""))
    return numbers


# Activation checkpointing (torch.utils.checkpoint) with a random op among the recomputed ones:
# the partitioner (aot_eager's too) wraps the op as run_and_save_rng_state(op, *args) in the
# forward and run_with_rng_state(state, op, *args) in the backward, so the recomputation draws
# the same numbers (partitioners.functionalize_rng_ops). Both compute op(*args) of a random op
# of the joint graph, whose node (and name) is gone: the joint offers each random op under its
# target and inputs (joint_before_partition), and the k-th replay of one such key in a graph
# gets the k-th joint op's number. A replay that matches no joint random op stays unmatched.
_REPLAY = " (replayed)"
_RNG_STATE = "rng state"


def _rng_wrappers() -> tuple[Any, Any]:
    from torch._prims import rng_prims

    return rng_prims.run_and_save_rng_state, rng_prims.run_with_rng_state


def _rng_key(op: Any, args: tuple, kwargs: dict, numbers: dict[Any, Any]) -> int:
    return hash((_target_key(op), _arg_key((tuple(args), kwargs), lambda n: str(numbers[n]))))


def _replay_candidates(inputs: dict[str, Any] | None) -> dict[int, list[Any]]:
    """Random-op key -> the joint numbers of the ops with that key, in joint order."""
    found: dict[int, list[Any]] = {}
    for name, value in (inputs or {}).items():
        if name.endswith(_REPLAY):
            found.setdefault(value[1], []).append(inputs.get(name[: -len(_REPLAY)]))
    return found


def _replayed_rng_value(node: Any, numbers: dict[Any, Any], wrappers: tuple[Any, Any],
                        replays: dict[int, list[Any]]) -> Any:
    """The value of a node of the partitioner's rng functionalization, else None: the joint
    random op it replays (for the saved state and the pair: a bookkeeping value tied to it)."""
    import operator

    save, replay = wrappers
    if node.target is save or node.target is replay:
        op, args = (node.args[0], node.args[1:]) if node.target is save else (node.args[1], node.args[2:])
        key = _rng_key(op, args, node.kwargs, numbers)
        candidates = replays.get(key)
        value = candidates.pop(0) if candidates else ("unmatched replay", key)
        return (_RNG_STATE + " pair", value) if node.target is save else value
    if node.target is operator.getitem and isinstance(node.args[0], _Node) \
            and node.args[0].target is save:
        pair = numbers[node.args[0]]
        return pair[1] if node.args[1] == 1 else (_RNG_STATE, pair[1])
    return None


def joint_before_partition(joint: Any) -> dict[str, Any] | None:
    """At the partitioner's entry: the joint graph must be what AOTAutograd traced, changed only
    by registered passes; returns what check_partition needs (the partitioner replaces
    ``joint.graph``, so it is taken now): each value the joint computes, by node name."""
    state = _state()
    joint_graph = graph_of(joint)
    if state is None or joint_graph is None:
        return None
    state.verify(joint_graph, "aot", "the partitioner")
    state.joint_targets = [node.target for node in joint_graph.nodes]
    numbers = _value_numbers(joint_graph)
    values = {node.name: number for node, number in numbers.items()}
    for node in joint_graph.nodes:  # random ops the partitioner may replay (_replayed_rng_value)
        tags = getattr(node.target, "tags", ()) if node.op == "call_function" else ()
        if tags and torch.Tag.nondeterministic_seeded in tags:
            values[node.name + _REPLAY] = ("replay key", _rng_key(node.target, node.args,
                                                                   node.kwargs, numbers))
    return values


def check_partition(joint_values: dict[str, Any] | None, outputs: Any) -> None:
    """The partitioner may split the joint graph, recompute its ops and merge equal ones (CSE);
    every op of the forward and backward graphs must compute a value the joint graph computes.
    The graphs it returns are remembered: what changes them before the lite compiler gets them
    is reported (EffectState.expect)."""
    state = _state()
    if state is not None:
        for kind, module in zip(("fw", "bw"), outputs):
            graph = graph_of(module)
            if graph is not None:
                state.partitioned[kind] = fingerprint(graph)
    if joint_values is None or state is None:
        return
    computed = set(joint_values.values())
    for side, module in zip(("forward", "backward"), outputs):
        graph = graph_of(module)
        if graph is None:
            continue
        # A backward input saved from the forward is named after the joint node it holds.
        for node, number in _value_numbers(graph, joint_values).items():
            if isinstance(number, tuple) and number[0].startswith(_RNG_STATE):
                number = number[1]  # the state saved for a replayed random op: that op's value
            if node.op == "call_function" and number not in computed:
                what = ("is not in the joint graph" if node.name not in joint_values else
                        "computes something else than the joint graph's node of that name")
                guard.refuse_effect("aot", f"the partitioner's {side} graph has node '{node.name}'"
                                    f" ({_target_name(node.target)}{_args_text(node)}), which {what}")


def check_after_partition(kind: str, graph: Any) -> None:
    """At the lite compiler's fw/bw entry: the graph is the one the partitioner returned, else
    the change is reported (_report_after_partition)."""
    state = _state()
    expected = state.partitioned.pop(kind, None) if state is not None else None
    if expected is None:
        return
    now = fingerprint(graph, cache=state.rows)
    if not same(expected, now):
        since = "AOTAutograd's inference trace" if kind == "inference" else "the partitioner"
        change = describe_change(expected, now)
        # A cause found by structure is refused: foreign code standing in AOTAutograd's place
        # (a patched step that rewrote the graph and returned before the lite compiler ran).
        from lite_compiler.provenance import check_aot_autograd

        check_aot_autograd(f"the graph changed between {since} and the lite compiler's {kind} graph"
                           f" ({change})")
        _report_after_partition(f"the lite compiler's {kind} graph", change, since)


def _report_after_partition(where: str, change: str, since: str = "the partitioner") -> None:
    """AOTAutograd's own steps between the partitioner and the lite compiler (effect tokens,
    saved-tensors hooks, wrappers' pre_compile) run for aot_eager too: the reference. A change
    there is reported (ledger row and a LiteGuardReport warning), not refused: a patch placed
    there changes aot_eager's graph the same way, and the region checks start from this graph."""
    import warnings

    from lite_compiler.errors import LiteGuardReport
    from lite_compiler.ledger import LedgerEntry

    sess = guard.current_session()
    graph = sess.graph if sess is not None else "graph"
    reason = (f"the graph changed between {since} and {where}: {change} (AOTAutograd's own"
              " steps, which aot_eager runs too; a patch there changes aot_eager the same way):"
              " reported, not refused")
    if sess is not None:
        sess.ledger.add(LedgerEntry(name="<change after partitioner>", stage="aot", graph=graph,
                                    allowed=True, lite="unregistered", kind="effect", reason=reason))
    warnings.warn(f"lite_compiler ({graph}): {reason}", LiteGuardReport, stacklevel=2)


def _args_text(node: Any) -> str:
    return _arg_key(node.args, None)


# ---- outside regions: the graph that runs is the graph AOTAutograd produced -------------------

def outer_fingerprint(graph: Any, is_region_node: Callable[[Any], bool],
                      cache: dict[Any, tuple[Any, ...]] | None = None,
                      plain: dict[Any, tuple[Any, ...]] | None = None) -> Fingerprint:
    """The graph minus its regions: region nodes are left out and inputs from them read
    ``%<region>``, so scooping regions into compiled calls leaves this unchanged. ``cache``:
    rows of unchanged nodes are reused (scooping replaces the args of every node that reads a
    region, so a reused row never hides a change). ``plain``: the rows cache of the whole-graph
    fingerprint (EffectState.rows); a graph without region nodes has exactly those rows, so
    they are reused instead of computed again."""
    region = {n for n in graph.nodes if is_region_node(n)}  # once: the test recurses
    if not region and plain is not None:
        return fingerprint(graph, cache=plain)

    def rename(node: Any) -> str:
        return "<region>" if node in region else node.name

    rows = []
    for node in graph.nodes:
        if node in region:
            continue
        parts = (node.name, node.target, node.args, node.kwargs, node.meta.get("val"))
        held = cache.get(node) if cache is not None else None
        if held is None or any(a is not b for a, b in zip(held[0], parts)):
            held = (parts, node_row(node, rename))
            if cache is not None:
                cache[node] = held
        rows.append(held[1])
    return tuple(rows)


def check_outer_graph(expected: Fingerprint, graph: Any, is_region_node: Callable[[Any], bool],
                      where: str) -> None:
    state = _state()
    if state is None:
        return
    now = outer_fingerprint(graph, is_region_node, state.outer_rows, state.rows)
    if not same(expected, now):
        guard.refuse_effect("lowering", f"outside regions, the graph that would run is not the"
                            f" graph AOTAutograd produced ({where}): {describe_change(expected, now)}")


# ---- inside regions: lowering, scheduler, wrapper codegen --------------------------------------

def check_lowering_input(graph_lowering: Any) -> None:
    """Probe on GraphLowering.run: the region graph is what the last registered pass left, and
    every lowering it will call is torch's code (or a registered pass)."""
    state = _state()
    if state is not None:
        state.lowerings_seen += 1
        state.verify(graph_lowering.module.graph, "lowering", "lowering")


def check_lowering_output(graph_lowering: Any) -> None:
    """After GraphLowering.run: the region graph is still the graph lowering started from. Code
    run while it lowers (an op's fake kernel, a log handler, another thread) could rewrite the
    nodes lowering had not reached yet; what was lowered is then not the graph checked."""
    state = _state()
    if state is not None:
        state.verify(graph_lowering.module.graph, "lowering", "the end of lowering")


def check_lowering_code(module: Any) -> set[Any]:
    """A lowering registered over torch's (``register_lowering(aten.x, override=True)``, an edit
    of ``lowerings`` or ``user_lowerings``) is foreign code deciding what a region computes: it
    runs as itself (lite_compiler.provenance) and the registry must allow it. Torch's lowering of
    another op put under this op's key computes the other op: refused the same way."""
    from torch._inductor import lowering

    tables = (("user_lowerings", getattr(lowering, "user_lowerings", {})), ("lowerings", lowering.lowerings))
    seen: set[Any] = set()
    for graph_module in module.modules():  # a higher-order op's bodies are lowered too
        graph = getattr(graph_module, "graph", None)
        for node in graph.nodes if graph is not None else ():
            if node.op != "call_function" or node.target in seen:
                continue
            seen.add(node.target)
            for table_name, table in tables:
                try:
                    lowering_fn = table.get(node.target)
                except TypeError:  # an unhashable target has no lowering
                    break
                if lowering_fn is not None:
                    check_table_lowering(node.target, lowering_fn, table_name)
    return seen


def check_table_lowering(op: Any, lowering_fn: Any, table_name: str, how: str = "") -> None:
    """Ask the registry about one lowering table entry: foreign code runs as itself; torch's
    lowering of other ops under ``op`` runs as ``torch._inductor.lowering:<table>[<op>]``."""
    from lite_compiler.provenance import foreign_identity, foreign_in_cells, lowering_moved

    where = f"the lowering of {_target_name(op)} in torch._inductor.lowering.{table_name}{how}"
    foreign = foreign_identity(lowering_fn)
    if foreign is not None:
        guard.check(foreign, "lowering", "function", where=(
            f"it is {where} (an override of torch's); register it under this name, or remove"
            " the override for lite compiles"))
        return
    held = foreign_in_cells(lowering_fn)
    if held is not None:  # torch's wrapper, calling foreign code put in its closure
        guard.check(held, "lowering", "function", where=(
            f"it is held in a closure cell of {where} (the code torch's wrapper calls); register"
            " it under this name, or remove it for lite compiles"))
        return
    moved = lowering_moved(op, lowering_fn)
    if moved is not None:
        names = list(dict.fromkeys(str(o) for o in moved))  # "aten.sin", "aten.sin.default", ...
        others = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        guard.check(f"torch._inductor.lowering:{table_name}[{_target_name(op)}]", "lowering",
                    "function", where=(f"{where} is torch's lowering of {others}, moved under"
                                       f" {_target_name(op)} (it computes those ops); remove the"
                                       " remap for lite compiles"))


def _scheduled_names(nodes: Any) -> list[str]:
    names = []
    for snode in nodes:
        members = snode.get_nodes() if hasattr(snode, "get_nodes") else [snode]
        names += [m.get_name() for m in members]
    return names


def check_schedule(lowered: list[str], scheduler: Any) -> None:
    """After Scheduler._init: the final order is lowering's order modulo fusion groups; no node
    appears from nowhere and none disappears unless a registered pass removed it."""
    state = _state()
    if state is None:
        return
    index = {name: i for i, name in enumerate(lowered)}
    groups = [[m.get_name() for m in (s.get_nodes() if hasattr(s, "get_nodes") else [s])]
              for s in scheduler.nodes]
    scheduled = [name for group in groups for name in group]
    invented = [n for n in scheduled if n not in index]
    if invented:
        guard.refuse_effect("scheduler", f"the schedule has node(s) lowering never produced:"
                            f" {', '.join(invented[:5])}")
    dropped = [n for n in lowered if n not in set(scheduled) and n not in state.removed]
    if dropped:
        guard.refuse_effect("scheduler", f"node(s) {', '.join(dropped[:5])} vanished from the"
                            " schedule with no registered pass removing them")
    if state.reorders:  # reorders on: the order is theirs (their ledger rows say so)
        state.reorders.clear()
        return
    # Fusion spans: a fused group covers the lowering positions between its first and last member;
    # overlapping spans merge. Inside a span fusion may reorder; spans keep lowering's order.
    spans = sorted((min(index[n] for n in g), max(index[n] for n in g)) for g in groups if g)
    component: dict[int, int] = {}
    merged: list[list[int]] = []
    for low, high in spans:
        if merged and low <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], high)
        else:
            merged.append([low, high])
    starts = [m[0] for m in merged]
    for name in scheduled:
        component[index[name]] = bisect.bisect_right(starts, index[name]) - 1
    order = [component[index[g[0]]] for g in groups if g]
    for i in range(len(order) - 1):
        if order[i + 1] < order[i]:
            ahead, moved = groups[i][0], groups[i + 1][0]
            guard.refuse_effect("scheduler", f"the scheduler's final order runs '{ahead}' before"
                                f" '{moved}', but lowering produced '{moved}' first; no registered"
                                " reorder and no fusion group explains the move")


def _line_key(line: Any) -> Any:
    return line if isinstance(line, str) else (type(line).__name__, id(line))


def _describe_lines(before: list[Any], after: list[Any]) -> str:
    def name(key: Any) -> str:
        return key[0] if isinstance(key, tuple) else repr(key)[:60]

    if len(after) > len(before):
        what = "added"
    elif len(after) < len(before):
        what = "removed"
    else:
        what = "reordered"
    i = next((i for i, (a, b) in enumerate(zip(before, after)) if a != b), min(len(before), len(after)))
    was = name(before[i]) if i < len(before) else "end"
    now = name(after[i]) if i < len(after) else "end"
    return f"lines {what} (first difference at line {i}: {was} became {now})"


def wrapper_passes(wrapper: Any, run: Callable[[], Any]) -> Any:
    """Around PythonWrapperCodegen.run_wrapper_ir_passes: memory planning may change memory
    lines only; a line whose class is a registered pass (ReuseLine) is that pass running."""
    state = _state()
    if state is None:
        return run()
    from torch._inductor.codegen.wrapper import MemoryPlanningLine

    def code_lines() -> list[Any]:
        return [_line_key(line) for line in wrapper.lines if not isinstance(line, MemoryPlanningLine)]

    before = code_lines()
    known = {id(line) for line in wrapper.lines}
    result = run()
    after = code_lines()
    if after != before:
        guard.refuse_effect("codegen", "wrapper codegen changed lines that are not memory planning:"
                            f" {_describe_lines(before, after)}")
    sess = guard.current_session()
    seen: set[str] = set()
    for line in wrapper.lines:
        name = type(line).__name__
        if id(line) in known or name in seen or sess is None:
            continue
        entry = sess.registry.match_pass(name) if sess.registry is not None else None
        if entry is not None and entry.kind == "class" and entry.stage == "codegen":
            seen.add(name)
            guard.check(name, "codegen", "class")  # refuses a lite = "never" line class
    return result


# ---- probes: fixed observation points, patched in with the hooks -------------------------------

class Probe(NamedTuple):
    target: str  # "module:Qual.name"
    make: Callable[[Callable[..., Any]], Callable[..., Any]]


def _probe_joint_trace(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def aot_dispatch_autograd_graph(*args: Any, **kwargs: Any) -> Any:
        return traced_joint(original(*args, **kwargs))

    return aot_dispatch_autograd_graph


def _probe_inference_trace(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def aot_dispatch_base_graph(*args: Any, **kwargs: Any) -> Any:
        return traced_inference(original(*args, **kwargs))

    return aot_dispatch_base_graph


def _probe_lowering(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def run(self: Any, *args: Any) -> Any:
        check_lowering_input(self)
        checked = check_lowering_code(self.module) if _state() is not None else set()
        with _foreign_lowerings_checked(checked):
            result = original(self, *args)
        check_lowering_output(self)
        return result

    return run


@contextlib.contextmanager
def _foreign_lowerings_checked(checked: set[Any]) -> Iterator[None]:
    """While a region lowers: every lowering from outside torch in Inductor's tables for an op
    the region graph does not name (``checked``: those were asked already), which a torch
    lowering may call through the table, asks the registry when first called. The tables are
    torch's again afterwards."""
    if _state() is None:
        yield
        return
    from torch._inductor import lowering

    from lite_compiler.provenance import foreign_entries, judged_in_region as in_region

    patched = []
    for table_name in ("user_lowerings", "lowerings"):
        table = getattr(lowering, table_name, None)
        for op, fn in foreign_entries(table_name, table) if table is not None else ():
            if op in checked:
                continue

            def asking(*args: Any, fn: Any = fn, op: Any = op, table_name: str = table_name,
                       **kwargs: Any) -> Any:
                if op not in checked:
                    checked.add(op)
                    in_region(lambda: check_table_lowering(
                        op, fn, table_name, how=", called while a region lowers"))
                return fn(*args, **kwargs)

            table[op] = asking
            patched.append((table, op, fn, asking))
    try:
        yield
    finally:
        for table, op, fn, asking in patched:
            if table.get(op) is asking:
                table[op] = fn


def _probe_scheduler(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def _init(self: Any, nodes: Any) -> Any:
        if _state() is None:
            return original(self, nodes)
        lowered = [n.get_operation_name() for n in nodes]
        state = _state()
        if state is not None:
            state.reorders.clear()  # reorders noted while this scheduler is built count
        result = original(self, nodes)
        check_schedule(lowered, self)
        return result

    return _init


def _probe_wrapper(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def run_wrapper_ir_passes(self: Any, *args: Any, **kwargs: Any) -> Any:
        return wrapper_passes(self, lambda: original(self, *args, **kwargs))

    return run_wrapper_ir_passes


# Pipelines whose output the lite compiler itself checks by effect (lite_compiler.backend calls
# the partitioner and checks its graphs with check_partition).
CHECKED_PIPELINES = ("torch._functorch.partitioners:min_cut_rematerialization_partition",)

PROBES: tuple[Probe, ...] = (
    Probe("torch._functorch._aot_autograd.graph_compile:aot_dispatch_autograd_graph", _probe_joint_trace),
    Probe("torch._functorch._aot_autograd.graph_compile:aot_dispatch_base_graph", _probe_inference_trace),
    Probe("torch._inductor.graph:GraphLowering.run", _probe_lowering),
    Probe("torch._inductor.scheduler:Scheduler._init", _probe_scheduler),
    Probe("torch._inductor.codegen.wrapper:PythonWrapperCodegen.run_wrapper_ir_passes", _probe_wrapper),
    # Not a graph boundary: the C++ build step, where a library found in the cache is verified.
    Probe("torch._inductor.codecache:_worker_compile_cpp", verifying_build),
)
