"""The bitwise fuzzer: programs stay valid under shrinking, lite mode passes a bounded fuzz, a
planted bug is caught and its reproducer fails on its own."""

from __future__ import annotations

import subprocess
import sys

import pytest

from lite_compiler.fuzz.programs import PRELUDE, VOCABULARY, WIDTH, render_function
from lite_compiler.fuzz.session import draw_programs


def test_same_seed_draws_same_programs_and_vocabulary_is_used():
    first, second = draw_programs(200, seed=7), draw_programs(200, seed=7)
    assert first == second and len(set(first)) == 200
    used = {step.op for program in first for step in program.steps}
    assert len(used) > 0.8 * len(VOCABULARY)
    assert {p.dtype for p in first} == {"float32", "bfloat16", "float16"}
    assert any(p.dynamic for p in first) and any(p.backward for p in first)


def test_every_shrink_step_renders_a_valid_function():
    for program in draw_programs(60, seed=3, regions=True):
        candidates = [program] + [program.without_step(i) for i in range(len(program.steps))]
        for candidate in candidates:
            source = PRELUDE.format(width=WIDTH) + render_function(candidate)
            compile(source, "<fuzz>", "exec")
            last = len(candidate.steps) + 1
            assert all(0 <= v < i + 2 for i, s in enumerate(candidate.steps) for v in s.operands)
            assert all(0 <= v <= last for v in candidate.outputs)


def run_fuzz(tmp_path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lite_guard", "fuzz", "--out", str(tmp_path), *args],
                          capture_output=True, text=True, timeout=1200, cwd=tmp_path)


@pytest.mark.slow
def test_bounded_fuzz_lite_is_bitwise_equal_to_aot_eager(tmp_path):
    result = run_fuzz(tmp_path, "--count", "200", "--seed", "0", "--target", "lite")
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "200 passed, 0 failed, 0 skipped"


def test_planted_bug_is_caught_and_reproducer_fails_alone(tmp_path):
    # Inductor fusion outside regions forced back on: sin/cos/... get Inductor's own kernels.
    result = run_fuzz(tmp_path, "--count", "6", "--seed", "1", "--target", "upstream-lite",
                      "--force", "fallback_by_default=false")
    assert result.returncode == 1, result.stdout + result.stderr[-3000:]
    assert " failed" in result.stdout and not result.stdout.strip().endswith(" 0 failed, 0 skipped")
    reproducers = sorted(tmp_path.glob("repro_*.py"))
    assert reproducers
    alone = subprocess.run([sys.executable, str(reproducers[0])], capture_output=True, text=True,
                           timeout=600, cwd=tmp_path)
    assert alone.returncode == 1, alone.stdout + alone.stderr[-2000:]
    assert alone.stdout.startswith("failed:")


def test_bad_arguments_exit_2(tmp_path):
    result = run_fuzz(tmp_path, "--count", "0")
    assert result.returncode == 2 and "must be positive" in result.stderr
    result = run_fuzz(tmp_path, "--max-steps", "-3")
    assert result.returncode == 2 and "must be positive" in result.stderr
    result = run_fuzz(tmp_path, "--force", "novalue")
    assert result.returncode == 2 and "--force expects KEY=VALUE" in result.stderr


def test_sweep_turns_on_every_lite_off_inductor_config_from_the_registry():
    from lite_compiler.fuzz.session import sweep_candidates
    from lite_guard.registry import Registry

    candidates = {key: (lite, on) for key, lite, on in sweep_candidates()}
    assert candidates["layout_optimization"] == (False, True)
    assert candidates["fallback_by_default"] == (True, False)
    assert candidates["use_dce"] == (False, True)
    inductor_keys = {c.key for c in Registry.load().configs if c.module == "inductor"}
    assert set(candidates) <= inductor_keys and len(candidates) > 30
    # Only keys lite mode forces: a classified key it leaves alone has nothing to turn back on.
    forced = {c.key for c in Registry.load().configs if c.module == "inductor" and c.forced}
    assert set(candidates) <= forced, sorted(set(candidates) - forced)[:5]


def test_result_exactness_matches_what_the_runner_collects():
    """The per-result bitwise/tolerance flags line up with the runner's results, for every
    drawn program, and only region-reachable results get a tolerance."""
    pytest.importorskip("torch")
    from lite_compiler.fuzz.programs import Program, Step, result_exactness
    from lite_compiler.fuzz.runner import build_inputs

    for program in draw_programs(80, seed=11, regions=True):
        inputs = build_inputs(program, 4, "cpu")
        floats_without_grad = sum(1 for t in inputs if not t.requires_grad and t.is_floating_point())
        with_grad = sum(1 for t in inputs if t.requires_grad)
        outputs = len(set(program.outputs) - {len(program.steps) + 1}) + 1
        assert len(result_exactness(program)) == outputs + floats_without_grad + with_grad

    plain = Step("sin", (1,))
    program = Program(steps=(Step("cos", (0,), region=0), plain), outputs=(2,), backward=True)
    # output v2 is the region's; v3 = sin(x1) is not; grads can see the region through v2.
    assert result_exactness(program) == [False, True, False, False]


def test_bounded_fuzz_with_regions_bitwise_outside_them(tmp_path):
    result = run_fuzz(tmp_path, "--count", "40", "--seed", "0", "--regions", "--target", "lite")
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "40 passed, 0 failed, 0 skipped"
