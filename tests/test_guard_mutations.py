"""Mutation suite: plant a pass nobody registered inside torch, at each stage a lite compile goes
through, and check the guard refuses it by its effect (LitePassViolation naming the stage and
what changed). Each plant comes in two flavours: numerics-neutral (x * 2 -> x + x, a duplicated
kernel call, a harmless reorder) and numerics-changing (x * 2 -> x + 2, a dropped kernel).

The plants are put in with monkeypatch and taken out after each test; the ``planting`` fixture
checks that every patched attribute is torch's own again and the guard is uninstalled.
"""

import pytest
import torch

import lite_compiler
from lite_compiler import hooks

aten = torch.ops.aten


def model(x, z):
    y = x.sin() * 2  # outside the region: mul(sin, 2)
    with lite_compiler.region(id="r"):
        a = y.cos() * 2  # region kernel 1
        b = z.exp() + 1  # region kernel 2, independent of kernel 1
    return a * 2, b


class Plant:
    """What a planted pass did: how many times it changed something."""

    def __init__(self, neutral):
        self.neutral, self.applied = neutral, 0

    def rewrite_mul2(self, graph):
        """x * 2 -> x + x (bitwise the same) or x + 2 (not)."""
        for node in graph.nodes:
            if node.target is aten.mul.Tensor and len(node.args) == 2 and node.args[1] == 2:
                node.target = aten.add.Tensor
                if self.neutral:
                    node.args = (node.args[0], node.args[0])
                self.applied += 1
                return


def _fx_outside_regions(monkeypatch, plant):
    """FX pipeline around regions: the partition fuser also rewrites the graph outside regions."""
    import torch.fx.passes.utils.fuser_utils as fuser_utils

    original = fuser_utils.fuse_by_partitions

    def fuse_by_partitions(gm, *args, **kwargs):
        result = original(gm, *args, **kwargs)
        plant.rewrite_mul2(gm.graph)
        gm.recompile()
        return result

    monkeypatch.setattr(fuser_utils, "fuse_by_partitions", fuse_by_partitions)
    return "lowering", "outside regions, the graph that would run is not the graph AOTAutograd produced"


def _fx_post_grad(monkeypatch, plant):
    """FX pipeline inside a region: post-grad passes are off, yet the pipeline function runs."""
    import torch._inductor.compile_fx as compile_fx

    original = compile_fx._recursive_post_grad_passes

    def _recursive_post_grad_passes(gm, is_inference=False):
        plant.rewrite_mul2(gm.graph)
        gm.recompile()
        return original(gm, is_inference=is_inference)

    monkeypatch.setattr(compile_fx, "_recursive_post_grad_passes", _recursive_post_grad_passes)
    return "lowering", "the graph changed between registered pass 'view_to_reshape' and lowering"


def _joint_graph(monkeypatch, plant):
    """Joint graph: a helper AOTAutograd calls between its trace and the partitioner."""
    import torch._functorch._aot_autograd.graph_compile as graph_compile

    original = graph_compile._log_joint_graph

    def _log_joint_graph(fx_g, *args, **kwargs):
        plant.rewrite_mul2(fx_g.graph)
        fx_g.recompile()
        return original(fx_g, *args, **kwargs)

    monkeypatch.setattr(graph_compile, "_log_joint_graph", _log_joint_graph)
    return "aot", "the graph changed between AOTAutograd's joint trace and"


def _partitioner(monkeypatch, plant):
    """Partitioner: its backward reordering step also rewrites the backward graph."""
    import torch._functorch.partitioners as partitioners

    original = partitioners.reordering_to_mimic_autograd_engine

    def reordering_to_mimic_autograd_engine(gm):
        gm = original(gm)
        for node in gm.graph.nodes:
            if node.target is aten.mul.Tensor:
                if plant.neutral:  # an extra copy of an input: same values, new node
                    with gm.graph.inserting_before(node):
                        copy = gm.graph.call_function(aten.clone.default, (node.args[0],))
                    node.args = (copy, *node.args[1:])
                else:
                    node.target = aten.add.Tensor
                plant.applied += 1
                break
        gm.recompile()
        return gm

    monkeypatch.setattr(partitioners, "reordering_to_mimic_autograd_engine",
                        reordering_to_mimic_autograd_engine)
    return "aot", "the partitioner's backward graph has node"


def _scheduler_after_fusion(monkeypatch, plant):
    """Scheduler: a step of Scheduler._init right after fuse_nodes (merge_loops) reorders or
    drops scheduler nodes."""
    from torch._inductor.scheduler import Scheduler

    original = Scheduler.merge_loops

    def merge_loops(self):
        original(self)
        if plant.neutral:
            self.nodes[0], self.nodes[1] = self.nodes[1], self.nodes[0]  # independent kernels
        else:
            self.nodes.pop()  # its buffer is never computed
        plant.applied += 1

    monkeypatch.setattr(Scheduler, "merge_loops", merge_loops)
    return "scheduler", ("the scheduler's final order runs" if plant.neutral
                         else "vanished from the schedule with no registered pass removing them")


def _scheduler_last_step(monkeypatch, plant):
    """Scheduler: the last step of Scheduler._init (compute_last_usage), after every reorder."""
    from torch._inductor.scheduler import Scheduler

    original = Scheduler.compute_last_usage

    def compute_last_usage(self):
        if plant.neutral:
            self.nodes.reverse()  # two independent kernels: a pure reorder
        else:
            del self.nodes[0]
        plant.applied += 1
        return original(self)

    monkeypatch.setattr(Scheduler, "compute_last_usage", compute_last_usage)
    return "scheduler", ("the scheduler's final order runs" if plant.neutral
                         else "vanished from the schedule with no registered pass removing them")


def _wrapper_codegen(monkeypatch, plant):
    """Wrapper codegen: its IR passes duplicate or drop a kernel call."""
    from torch._inductor.codegen.wrapper import PythonWrapperCodegen

    original = PythonWrapperCodegen.run_wrapper_ir_passes

    def run_wrapper_ir_passes(self, is_inference):
        result = original(self, is_inference)
        calls = [i for i, line in enumerate(self.lines) if type(line).__name__ == "KernelCallLine"]
        if plant.neutral:
            self.lines.insert(calls[0], self.lines[calls[0]])  # the kernel runs twice
        else:
            del self.lines[calls[0]]
        plant.applied += 1
        return result

    monkeypatch.setattr(PythonWrapperCodegen, "run_wrapper_ir_passes", run_wrapper_ir_passes)
    return "codegen", "wrapper codegen changed lines that are not memory planning"


PLANTS = {
    "fx-outside-regions": _fx_outside_regions,
    "fx-post-grad-pipeline": _fx_post_grad,
    "joint-graph": _joint_graph,
    "partitioner": _partitioner,
    "scheduler-after-fusion": _scheduler_after_fusion,
    "scheduler-last-step": _scheduler_last_step,
    "wrapper-codegen": _wrapper_codegen,
}

_PLANT_SITES = [
    ("torch.fx.passes.utils.fuser_utils", "fuse_by_partitions"),
    ("torch._inductor.compile_fx", "_recursive_post_grad_passes"),
    ("torch._functorch._aot_autograd.graph_compile", "_log_joint_graph"),
    ("torch._functorch.partitioners", "reordering_to_mimic_autograd_engine"),
    ("torch._inductor.scheduler", "Scheduler.merge_loops"),
    ("torch._inductor.scheduler", "Scheduler.compute_last_usage"),
    ("torch._inductor.codegen.wrapper", "PythonWrapperCodegen.run_wrapper_ir_passes"),
]


def _site_values():
    values = []
    for module, qual in _PLANT_SITES:
        owner, attr = hooks.resolve(f"{module}:{qual}")
        values.append(owner.__dict__[attr] if isinstance(owner, type) else getattr(owner, attr))
    return values


def _allow_plant_code(monkeypatch, tmp_path):
    """Register the plants' own code (lite = "region"), so the sweep for foreign code in
    Inductor's classes (lite_compiler.provenance) lets it run: what must refuse it here is the
    effect check, which no registration of code can satisfy (tests/test_guard_redteam.py shows
    the plants refused by their code when not registered)."""
    from lite_compiler.provenance import foreign_identity

    names = sorted({n for n in map(foreign_identity, _site_values()) if n is not None})
    registry = tmp_path / "plants.toml"
    registry.write_text("".join(f'[[pass]]\nname = "{name}"\nstage = "lowering"\nlite = "region"\n'
                                'kind = "function"\nwhy = "a planted pass (test)"\n' for name in names))
    monkeypatch.setenv("LITE_GUARD_REGISTRIES", str(registry))


@pytest.fixture
def planting():
    """A monkeypatch for the plants; once it has undone them, torch must be torch again."""
    before = _site_values()
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield monkeypatch
    after = _site_values()
    assert all(a is b for a, b in zip(after, before)), "a plant leaked out of its test"
    assert not hooks.installed() and not lite_compiler.guard_active()


@pytest.mark.parametrize("flavour", ["neutral", "changing"])
@pytest.mark.parametrize("where", list(PLANTS))
def test_planted_pass_is_refused_by_its_effect(where, flavour, planting, tmp_path):
    plant = Plant(neutral=flavour == "neutral")
    stage, change = PLANTS[where](planting, plant)
    _allow_plant_code(planting, tmp_path)
    torch._dynamo.reset()
    x, z = torch.randn(8, requires_grad=True), torch.randn(5)
    with pytest.raises(lite_compiler.LitePassViolation) as refused:
        out, _ = torch.compile(model, backend="lite")(x, z)
        out.sum().backward()
    assert plant.applied >= 1, "the planted pass never ran"
    violation = refused.value
    assert violation.kind == "effect" and violation.stage == stage
    assert change in violation.reason, violation.reason
    (row,) = [e for e in lite_compiler.last_ledger() if e.kind == "effect"]
    assert not row.allowed and row.stage == stage and row.reason == violation.reason


def test_without_plants_the_same_model_compiles_and_matches_eager(planting):
    torch._dynamo.reset()
    x, z = torch.randn(8, requires_grad=True), torch.randn(5)
    out, b = torch.compile(model, backend="lite")(x, z)
    ref, ref_b = model(x, z)
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(b, ref_b)
    ledger = lite_compiler.last_ledger()
    assert not ledger.refused and {"fuse_nodes", "view_to_reshape"} <= set(ledger.names())


def test_a_reorder_the_registry_allows_in_regions_runs_and_is_recorded(planting, tmp_path):
    """The order check is for reorders off: a pass registered as a reorder (gated by a
    kind = "reorder" config) and allowed in regions may reorder, and its ledger row says so."""
    registry = tmp_path / "team.toml"
    registry.write_text('[[pass]]\nname = "myproj.sched:reverse_independent_kernels"\nstage = "scheduler"\n'
                        'lite = "region"\nkind = "scheduler"\n'
                        'hook = "torch._inductor.scheduler:Scheduler.compute_last_usage"\n'
                        'gated_by = ["reorder_for_peak_memory"]\nwhy = "reorders two independent kernels"\n')
    planting.setenv("LITE_GUARD_REGISTRIES", str(registry))
    plant = Plant(neutral=True)
    _scheduler_last_step(planting, plant)
    torch._dynamo.reset()
    x, z = torch.randn(8, requires_grad=True), torch.randn(5)
    out, b = torch.compile(model, backend="lite")(x, z)
    assert plant.applied >= 1
    # b is a region output: Inductor's exp may differ from ATen's in the last bit for some of
    # randn's values (regions promise close, not bitwise), so this checks the value, not the bits.
    torch.testing.assert_close(b, model(x, z)[1])
    rows = [e for e in lite_compiler.last_ledger() if e.name == "myproj.sched:reverse_independent_kernels"]
    assert rows and all(e.allowed and "region[r]" in e.graph for e in rows)
