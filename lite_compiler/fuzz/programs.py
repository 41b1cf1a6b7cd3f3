"""Random PyTorch programs for bitwise fuzzing, as data that renders to standalone source.

A program is a straight line of ops over a pool of ``(batch, WIDTH)`` tensors: every op maps
one or two pool values to a new value of the same shape, so any sub-list of ops is still a
valid program. That is what makes shrinking a plain list reduction.

This module never imports torch: it only builds and renders programs (hypothesis draws them).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

WIDTH = 16  # feature width; divisible by 4 so views into heads/tiles work
BATCH_SIZES = (4, 6)  # a dynamic-shape program runs both through one compiled graph
DTYPES = ("float32", "bfloat16", "float16")


@dataclass(frozen=True)
class OpSpec:
    """One op of the vocabulary: a Python expression over operands ``{a}``/``{b}`` and the
    extra inputs it needs (weights, buffers, indices), each created once per op."""

    name: str
    family: str
    expr: str
    arity: int = 1
    extras: tuple[str, ...] = ()
    # A statement run before the value is computed (used for mutation of inputs).
    stmt: str = ""


# Extra inputs an op can ask for: name -> (shape expression, kind).
#   param: requires grad (a weight); buffer: mutated in place, no grad; index: int64 constant.
EXTRA_INPUTS = {
    "w": ("(WIDTH, WIDTH)", "param"),
    "bias": ("(WIDTH,)", "param"),
    "gain": ("(WIDTH,)", "param"),
    "cw1": ("(1, 1, 3)", "param"),
    "cw2": ("(1, 1, 3, 3)", "param"),
    "cw4": ("(4, 4, 3, 3)", "param"),
    "running_mean": ("(WIDTH,)", "buffer"),
    "running_var": ("(WIDTH,)", "buffer_ones"),
    "state": ("(WIDTH,)", "buffer"),
    "perm": ("(WIDTH,)", "index"),
}

_HEADS = "-1, 2, 2, WIDTH // 4"

VOCABULARY: tuple[OpSpec, ...] = (
    # pointwise
    OpSpec("sin", "pointwise", "torch.sin({a})"),
    OpSpec("cos", "pointwise", "torch.cos({a})"),
    OpSpec("tanh", "pointwise", "torch.tanh({a})"),
    OpSpec("sigmoid", "pointwise", "torch.sigmoid({a})"),
    OpSpec("relu", "pointwise", "torch.relu({a})"),
    OpSpec("gelu", "pointwise", "F.gelu({a})"),
    OpSpec("silu", "pointwise", "F.silu({a})"),
    OpSpec("exp", "pointwise", "torch.exp({a}.clamp(-4, 4))"),
    OpSpec("rsqrt", "pointwise", "torch.rsqrt({a}.abs() + 1)"),
    OpSpec("log1p", "pointwise", "torch.log1p({a}.abs())"),
    OpSpec("erf", "pointwise", "torch.erf({a})"),
    OpSpec("square", "pointwise", "{a} * {a}"),
    OpSpec("add", "pointwise", "{a} + {b}", 2),
    OpSpec("sub", "pointwise", "{a} - 0.5 * {b}", 2),
    OpSpec("mul", "pointwise", "{a} * {b}", 2),
    OpSpec("div", "pointwise", "{a} / ({b}.abs() + 1)", 2),
    OpSpec("maximum", "pointwise", "torch.maximum({a}, {b})", 2),
    OpSpec("where", "pointwise", "torch.where({a} > 0, {a}, {b})", 2),
    OpSpec("addcmul", "pointwise", "torch.addcmul({a}, {a}, {b}, value=0.5)", 2),
    # reductions
    OpSpec("center", "reduction", "{a} - {a}.mean(-1, keepdim=True)"),
    OpSpec("sum_gate", "reduction", "{a} * torch.tanh({a}.sum(-1, keepdim=True))"),
    OpSpec("amax", "reduction", "{a} - {a}.amax(-1, keepdim=True)"),
    OpSpec("var", "reduction", "{a} / ({a}.var(-1, keepdim=True) + 1)"),
    OpSpec("logsumexp", "reduction", "{a} - torch.logsumexp({a}, -1, keepdim=True)"),
    OpSpec("cumsum", "reduction", "torch.cumsum({a}, -1) / WIDTH"),
    OpSpec("batch_mean", "reduction", "{a} - {a}.mean(0, keepdim=True)"),
    # matmul / linear
    OpSpec("linear", "matmul", "F.linear({a}, {w}, {bias})", extras=("w", "bias")),
    OpSpec("matmul", "matmul", "({a} @ {w}) * WIDTH ** -0.5", extras=("w",)),
    OpSpec("gram", "matmul", "({a} @ {a}.transpose(0, 1) @ {b}) / ({a}.shape[0] * WIDTH)", 2),
    # conv / pool
    OpSpec("conv1d", "conv", "F.conv1d({a}.unsqueeze(1), {cw1}, padding=1).squeeze(1)",
           extras=("cw1",)),
    OpSpec("conv2d", "conv",
           "F.conv2d({a}.reshape(-1, 1, 4, WIDTH // 4), {cw2}, padding=1).reshape({a}.shape)",
           extras=("cw2",)),
    OpSpec("conv2d_channels", "conv",
           "F.conv2d({a}.reshape(-1, 4, 2, WIDTH // 8), {cw4}, padding=1).reshape({a}.shape)",
           extras=("cw4",)),
    OpSpec("max_pool", "conv", "F.max_pool1d({a}.unsqueeze(1), 3, stride=1, padding=1).squeeze(1)"),
    OpSpec("avg_pool", "conv", "F.avg_pool1d({a}.unsqueeze(1), 3, stride=1, padding=1).squeeze(1)"),
    # norms
    OpSpec("layer_norm", "norm", "F.layer_norm({a}, (WIDTH,), {gain}, {bias})",
           extras=("gain", "bias")),
    OpSpec("rms_norm", "norm", "{a} * torch.rsqrt({a}.pow(2).mean(-1, keepdim=True) + 1e-6) * {gain}",
           extras=("gain",)),
    OpSpec("batch_norm", "norm",
           "F.batch_norm({a}, {running_mean}, {running_var}, {gain}, {bias}, training=True)",
           extras=("running_mean", "running_var", "gain", "bias")),
    # softmax / attention
    OpSpec("softmax", "attention", "torch.softmax({a}, -1)"),
    OpSpec("log_softmax", "attention", "torch.log_softmax({a}, -1)"),
    OpSpec("sdpa", "attention",
           f"F.scaled_dot_product_attention({{a}}.reshape({_HEADS}), {{b}}.reshape({_HEADS}),"
           f" {{b}}.reshape({_HEADS})).reshape({{a}}.shape)", 2),
    OpSpec("sdpa_causal", "attention",
           f"F.scaled_dot_product_attention({{a}}.reshape({_HEADS}), {{a}}.reshape({_HEADS}),"
           f" {{a}}.reshape({_HEADS}), is_causal=True).reshape({{a}}.shape)"),
    # views, reshapes, transposes, slicing
    OpSpec("transpose", "view",
           "{a}.reshape(-1, 4, WIDTH // 4).transpose(1, 2).contiguous().reshape({a}.shape)"),
    OpSpec("flip", "view", "{a}.flip(-1)"),
    OpSpec("roll", "view", "torch.roll({a}, 3, -1)"),
    OpSpec("swap_halves", "view", "torch.cat([{a}[:, WIDTH // 2:], {a}[:, :WIDTH // 2]], 1)"),
    OpSpec("shift_pad", "view", "F.pad({a}[:, 1:], (0, 1))"),
    OpSpec("strided", "view", "{a}[:, ::2].repeat(1, 2)"),
    OpSpec("broadcast_col", "view", "{a} + {a}[:, :1].expand_as({a})"),
    # in-place ops and mutation of inputs
    OpSpec("inplace_chain", "inplace", "{a}.clone().mul_(0.5).add_({b})", 2),
    OpSpec("inplace_slice", "inplace", "_set_slice({a}.clone(), {b})", 2),
    OpSpec("mutate_input", "inplace", "{a} + {state}", extras=("state",),
           stmt="{state}.mul_(0.5).add_({a}.detach().mean(0))"),
    # indexing and scatter
    OpSpec("gather", "indexing", "{a}[:, {perm}]", extras=("perm",)),
    OpSpec("index_add", "indexing", "torch.index_add({a}, 1, {perm}[: WIDTH // 2], {b}[:, : WIDTH // 2])",
           2, extras=("perm",)),
    OpSpec("scatter_add", "indexing",
           "torch.zeros_like({a}).scatter_add(1, {perm}.expand_as({a}), {a})", extras=("perm",)),
    OpSpec("masked_fill", "indexing", "{a}.masked_fill({a} > 1, 0.0)"),
    # random ops (under a fixed seed)
    OpSpec("dropout", "random", "F.dropout({a}, 0.25, training=True)"),
    OpSpec("rand_noise", "random", "{a} + 0.1 * torch.rand_like({a})"),
    # dtype casts
    OpSpec("bf16_roundtrip", "cast", "{a}.to(torch.bfloat16).to({a}.dtype)"),
    OpSpec("fp16_roundtrip", "cast", "{a}.to(torch.float16).to({a}.dtype)"),
    OpSpec("fp32_compute", "cast", "torch.tanh({a}.float()).to({a}.dtype)"),
)

OPS_BY_NAME = {op.name: op for op in VOCABULARY}
FAMILIES = tuple(sorted({op.family for op in VOCABULARY}))

# Helpers every program may call (rendered into the reproducer too).
PRELUDE = '''\
import torch
import torch.nn.functional as F
import torch.fx.traceback as fx_traceback

WIDTH = {width}


def _set_slice(t, src):
    t[:, : WIDTH // 2] = src[:, WIDTH // 2 :]
    return t
'''


@dataclass(frozen=True)
class Step:
    op: str
    operands: tuple[int, ...]  # indices into the value pool (0 and 1 are the two inputs)
    region: int | None = None  # annotated-region id, or None for "falls back"


@dataclass(frozen=True)
class Program:
    steps: tuple[Step, ...]
    dtype: str = "float32"
    dynamic: bool = False
    backward: bool = True
    seed: int = 0
    outputs: tuple[int, ...] = field(default=())  # extra pool values returned besides the last

    @property
    def has_regions(self) -> bool:
        return any(s.region is not None for s in self.steps)

    def without_step(self, index: int) -> "Program":
        """Drop one step; later operands pointing past it are re-pointed, so it stays valid."""
        removed_value = index + 2
        stand_in = self.steps[index].operands[0]  # readers of the dropped value read its input

        def remap(v: int) -> int:
            if v < removed_value:
                return v
            return stand_in if v == removed_value else v - 1

        steps = tuple(
            replace(s, operands=tuple(remap(v) for v in s.operands))
            for i, s in enumerate(self.steps) if i != index
        )
        outputs = tuple(sorted({remap(v) for v in self.outputs if remap(v) < len(steps) + 2}))
        return replace(self, steps=steps, outputs=outputs)

    def describe(self) -> str:
        ops = " ".join(s.op + (f"@r{s.region}" if s.region is not None else "") for s in self.steps)
        flags = [self.dtype] + (["dynamic"] if self.dynamic else []) + (
            ["backward"] if self.backward else [])
        return f"[{', '.join(flags)}] {ops}"


def extras_of(program: Program) -> list[tuple[str, str, str]]:
    """(argument name, shape expression, kind) of every extra input, in argument order."""
    result = []
    for i, step in enumerate(program.steps):
        for extra in OPS_BY_NAME[step.op].extras:
            shape, kind = EXTRA_INPUTS[extra]
            result.append((f"{extra}{i}", shape, kind))
    return result


def region_dependent_values(program: Program) -> set[int]:
    """Pool values computed inside an annotated region or downstream of one."""
    tainted: set[int] = set()
    for i, step in enumerate(program.steps):
        if step.region is not None or any(v in tainted for v in step.operands):
            tainted.add(i + 2)
    return tainted


def result_exactness(program: Program) -> list[bool]:
    """For each result of one batch, in the runner's order (outputs, float inputs that need no
    grad, then grads): True where it must match aot_eager bit for bit, False where an annotated
    region can reach it (compared with a tolerance)."""
    tainted = region_dependent_values(program)
    last = len(program.steps) + 1
    returned = [v for v in program.outputs if v != last] + [last]
    flags = [v not in tainted for v in returned]
    grads_exact = not any(v in tainted for v in returned)
    data_inputs = [("data", None), ("data", None)]  # x0, x1: never mutated
    extra_inputs = [(EXTRA_INPUTS[extra][1], i) for i, step in enumerate(program.steps)
                    for extra in OPS_BY_NAME[step.op].extras]
    for kind, step in data_inputs + extra_inputs:
        if kind == "index":
            continue  # integer inputs are not compared
        mutated = kind.startswith("buffer")
        if mutated or not program.backward:
            flags.append(not (mutated and step + 2 in tainted))
    if program.backward:
        flags += [grads_exact for kind, _ in data_inputs + extra_inputs if kind in ("data", "param")]
    return flags


def render_function(program: Program, name: str = "program") -> str:
    """The program as the source of one Python function over (x0, x1, extras...)."""
    args = ["x0", "x1"] + [arg for arg, _, _ in extras_of(program)]
    lines = [f"def {name}({', '.join(args)}):"]
    for i, step in enumerate(program.steps):
        spec = OPS_BY_NAME[step.op]
        names = {"a": _value(step.operands[0]),
                 "b": _value(step.operands[-1])}
        names.update({extra: f"{extra}{i}" for extra in spec.extras})
        body = []
        if spec.stmt:
            body.append(spec.stmt.format(**names))
        body.append(f"v{i + 2} = {spec.expr.format(**names)}")
        if step.region is not None:
            lines.append(f"    with fx_traceback.annotate({{\"compile_with_inductor\": {step.region}}}):")
            lines += [f"        {line}" for line in body]
        else:
            lines += [f"    {line}" for line in body]
    last = len(program.steps) + 1
    returned = [_value(v) for v in program.outputs if v != last] + [_value(last)]
    lines.append(f"    return ({', '.join(returned)},)")
    return "\n".join(lines) + "\n"


def _value(index: int) -> str:
    return f"x{index}" if index < 2 else f"v{index}"


def program_strategy(max_steps: int = 8, regions: bool = False, families=FAMILIES,
                     dtypes=DTYPES):
    """A hypothesis strategy drawing programs; imported lazily (hypothesis is a test extra)."""
    from hypothesis import strategies as st

    ops = [op for op in VOCABULARY if op.family in families]

    @st.composite
    def programs(draw) -> Program:
        count = draw(st.integers(1, max_steps))
        steps = []
        for i in range(count):
            op = draw(st.sampled_from(ops))
            available = i + 2
            # Prefer the newest value so programs are deep chains rather than wide fans.
            first = draw(st.one_of(st.just(available - 1), st.integers(0, available - 1)))
            operands = (first,) if op.arity == 1 else (first, draw(st.integers(0, available - 1)))
            region = draw(st.one_of(st.none(), st.integers(0, 1))) if regions else None
            steps.append(Step(op.name, operands, region))
        last = count + 1
        outputs = tuple(sorted(set(draw(st.lists(st.integers(2, last), max_size=2))) - {last}))
        return Program(
            steps=tuple(steps),
            dtype=draw(st.sampled_from(dtypes)),
            dynamic=draw(st.booleans()),
            backward=draw(st.booleans()),
            seed=draw(st.integers(0, 2**16)),
            outputs=outputs,
        )

    return programs()
