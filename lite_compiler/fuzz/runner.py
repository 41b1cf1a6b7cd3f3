"""Run a generated program under a reference and a target backend and compare bit for bit.

Imports torch: only the ``fuzz`` command and the test helpers load this module.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from lite_compiler.fuzz.programs import (
    BATCH_SIZES, PRELUDE, WIDTH, Program, extras_of, render_function, result_exactness,
)

# Inside annotated regions Inductor may reorder float math: compare with a tolerance there.
REGION_TOLERANCE = {"float32": (1e-3, 1e-3), "bfloat16": (6e-2, 6e-2), "float16": (2e-2, 2e-2)}


@dataclass(frozen=True)
class Target:
    """What a program is compiled with: a torch.compile keyword set and config patches."""

    name: str
    compile_kwargs: dict
    config_patch: dict

    @contextlib.contextmanager
    def patched(self) -> Iterator[None]:
        # Reviewed store (LG006): the keys are make_target's `force` settings for the fuzzed
        # compile (config keys the fuzz session flips to compare with upstream lite), never a hook.
        patch = self.config_patch
        with torch._inductor.config.patch(patch) if patch else contextlib.nullcontext():  # lite-guard: ignore[LG006]
            yield


def make_target(name: str, force: dict | None = None) -> Target:
    """``lite`` (ours), ``upstream-lite`` (torch's own mode="lite"), ``inductor``, ``aot_eager``.

    ``force`` patches Inductor config on top: with upstream-lite it turns one lite-off
    optimization back on (the registry sweep and planted-bug runs use that).
    """
    force = dict(force or {})
    if name == "lite":
        import lite_compiler  # noqa: F401  (registers backend="lite")

        return Target(name, {"backend": "lite"}, force)
    if name == "upstream-lite":
        options = dict(torch._inductor.list_mode_options("lite"))
        options.update(force)
        return Target(name, {"backend": "inductor", "options": options}, {})
    if name == "inductor":
        return Target(name, {"backend": "inductor"}, force)
    if name == "aot_eager":
        return Target(name, {"backend": "aot_eager"}, force)
    raise ValueError(f"unknown fuzz target '{name}'; use lite, upstream-lite, inductor or aot_eager")


@dataclass
class Outcome:
    program: Program
    status: str  # "passed" | "failed" | "invalid" (the reference itself rejects the program)
    detail: str = ""


def load_function(program: Program) -> Callable[..., Any]:
    source = PRELUDE.format(width=WIDTH) + "\n\n" + render_function(program)
    namespace: dict[str, Any] = {}
    exec(compile(source, f"<fuzz program seed={program.seed}>", "exec"), namespace)
    return namespace["program"]


def build_inputs(program: Program, batch: int, device: str) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(program.seed)
    dtype = getattr(torch, program.dtype)

    def floats(*shape: int, scale: float = 1.0) -> torch.Tensor:
        return (torch.randn(*shape, generator=generator) * scale).to(device=device, dtype=dtype)

    inputs = [floats(batch, WIDTH).requires_grad_(program.backward),
              floats(batch, WIDTH).requires_grad_(program.backward)]
    for _, shape, kind in extras_of(program):
        dims = eval(shape, {"WIDTH": WIDTH})  # shapes are our own literals, e.g. "(WIDTH,)"
        if kind == "param":
            inputs.append(floats(*dims, scale=0.3).requires_grad_(program.backward))
        elif kind == "buffer":
            inputs.append(torch.zeros(*dims, device=device, dtype=dtype))
        elif kind == "buffer_ones":
            inputs.append(torch.ones(*dims, device=device, dtype=dtype))
        else:  # index: a permutation, so gathers and scatters are well defined
            inputs.append(torch.randperm(dims[0], generator=generator).to(device))
    return inputs


def run_program(program: Program, target: Target, device: str = "cpu") -> list[torch.Tensor]:
    """Outputs, mutated inputs and gradients, for each batch size the program runs with."""
    fn = load_function(program)
    torch._dynamo.reset()
    compiled = torch.compile(fn, dynamic=program.dynamic, fullgraph=True, **target.compile_kwargs)
    results: list[torch.Tensor] = []
    batches = BATCH_SIZES if program.dynamic else BATCH_SIZES[:1]
    with target.patched():
        for batch in batches:
            inputs = build_inputs(program, batch, device)
            torch.manual_seed(program.seed)
            outputs = compiled(*inputs)
            results += [o.detach() for o in outputs]
            results += [t for t in inputs if not t.requires_grad and t.is_floating_point()]
            if program.backward:
                differentiable = [o for o in outputs if o.requires_grad]
                if differentiable:
                    generator = torch.Generator().manual_seed(program.seed + 1)
                    cotangents = [torch.randn(o.shape, generator=generator).to(o) for o in differentiable]
                    torch.autograd.backward(differentiable, cotangents)
                results += [t.grad if t.grad is not None else torch.zeros(0)
                            for t in inputs if t.requires_grad]
    return results


def bitwise_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same dtype, shape and bit pattern (NaNs with the same payload compare equal)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.is_floating_point():
        as_int = {2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        return torch.equal(a.contiguous().view(as_int), b.contiguous().view(as_int))
    return torch.equal(a, b)


def compare(program: Program, expected: list[torch.Tensor], actual: list[torch.Tensor]) -> str:
    """'' when they agree, else a one-line description of the first difference. Results that an
    annotated region can reach get a tolerance; everything else must match bit for bit."""
    if len(expected) != len(actual):
        return f"{len(actual)} results, expected {len(expected)}"
    per_batch = result_exactness(program)
    exact = per_batch * (len(expected) // len(per_batch)) if len(expected) % len(per_batch) == 0 \
        else [not program.has_regions] * len(expected)
    for index, (e, a, bitwise) in enumerate(zip(expected, actual, exact)):
        if bitwise:
            same = bitwise_equal(e, a)
        else:
            rtol, atol = REGION_TOLERANCE[program.dtype]
            same = e.shape == a.shape and e.dtype == a.dtype and torch.allclose(
                e.float(), a.float(), rtol=rtol, atol=atol, equal_nan=True)
        if not same:
            diff = (e.float() - a.float()).abs().nan_to_num(float("inf")).max().item() \
                if e.shape == a.shape else float("nan")
            kind = "bitwise" if bitwise else "within tolerance"
            return f"result {index} differs ({kind} check, max abs diff {diff:.3g})"
    return ""


def check_program(program: Program, target: Target, reference: Target, device: str = "cpu") -> Outcome:
    try:
        expected = run_program(program, reference, device)
    except Exception as exc:  # the reference rejects it: not a valid test of the target
        return Outcome(program, "invalid", f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
    try:
        actual = run_program(program, target, device)
    except Exception as exc:
        first_line = (str(exc).splitlines() or [""])[0][:200]
        return Outcome(program, "failed", f"{target.name} raised {type(exc).__name__}: {first_line}")
    problem = compare(program, expected, actual)
    return Outcome(program, "failed" if problem else "passed", problem)


def shrink(program: Program, still_fails: Callable[[Program], bool]) -> Program:
    """Greedy reduction: drop steps, then simplify flags, keeping the failure."""
    changed = True
    while changed:
        changed = False
        for index in range(len(program.steps)):
            if len(program.steps) <= 1:
                break
            candidate = program.without_step(index)
            if still_fails(candidate):
                program, changed = candidate, True
                break
    simplifications = [
        lambda p: replace(p, outputs=()),
        lambda p: replace(p, dynamic=False),
        lambda p: replace(p, backward=False),
        lambda p: replace(p, dtype="float32"),
        lambda p: replace(p, steps=tuple(replace(s, region=None) for s in p.steps)),
    ]
    for simplify in simplifications:
        candidate = simplify(program)
        if candidate != program and still_fails(candidate):
            program = candidate
    return program


REPRODUCER = '''\
"""Reproducer written by `lite_guard fuzz`: {describe}

{target} disagrees with {reference}: {detail}
Run it: python {filename}   (exit 1 while the bug is there)
"""
import sys

{prelude}

{function}

PROGRAM = {program_repr!r}


def main():
    from lite_compiler.fuzz.programs import Program, Step  # noqa: F401  (PROGRAM's repr uses them)
    from lite_compiler.fuzz.runner import check_program, make_target

    program = eval(PROGRAM)
    outcome = check_program(program, make_target({target!r}, {force!r}),
                            make_target({reference!r}))
    print(f"{{outcome.status}}: {{outcome.detail or 'bitwise equal'}}")
    return 1 if outcome.status == "failed" else 0


if __name__ == "__main__":
    sys.exit(main())
'''


def write_reproducer(path: Path, outcome: Outcome, target: str, reference: str,
                     force: dict | None) -> Path:
    from lite_guard.atomic import write_text_atomic

    program = outcome.program
    text = REPRODUCER.format(
        describe=program.describe(), target=target, reference=reference, detail=outcome.detail,
        filename=path.name, prelude=PRELUDE.format(width=WIDTH).strip(),
        function=render_function(program).strip(), program_repr=repr(program), force=force or {},
    )
    write_text_atomic(path, text)
    return path
