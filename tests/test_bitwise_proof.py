"""What the signature check's proofs claim, checked by running them (lite_compiler.bitwise_check,
lite_compiler.bitwise_enumerate, lite_compiler.verdict_cache).

- A 16-bit unary signature is enumerated on every one of its 65,536 input bit patterns, and the
  ledger says "proven" only then.
- A difference that only the enumeration finds (the stress values pass) is reported with the
  input bit pattern and both outputs, and those are the real ones (re-run here by ATen and by
  Inductor).
- Verdicts are read back by a second process, which then compiles no check; a forged entry is not
  read and the signature is checked again.
- On CUDA (skipped without one): bf16 `mul` is proven on all 2^32 pairs and bf16 `silu_backward`
  is not bitwise, found by the enumeration.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import lite_compiler
from lite_compiler import bitwise_check
from lite_compiler.bitwise_enumerate import Enumeration

ROOT = Path(__file__).resolve().parents[1]
FUSION = {"bitwise_fusion": True}


@pytest.fixture(autouse=True)
def _own_verdict_cache(tmp_path, monkeypatch):
    """Every test starts with no verdict in memory and an empty cache of its own."""
    monkeypatch.setenv("LITE_GUARD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("LITE_GUARD_VERDICT_CACHE", raising=False)
    bitwise_check.forget_verdicts()
    yield
    bitwise_check.forget_verdicts()


def _signature_rows() -> dict[str, tuple[bool, str]]:
    rows = lite_compiler.last_ledger("lite").entries
    return {e.name: (e.allowed, e.reason) for e in rows
            if e.kind == "fusion" and e.stage == "fusion" and e.name.startswith("bitwise_fusion aten.")}


def _outputs_and_grads(fn, inputs):
    """The output and the grads of the inputs that require them (they keep that flag)."""
    inputs = [t.detach().clone().requires_grad_(t.requires_grad) for t in inputs]
    out = fn(*inputs)
    out.float().sum().backward()
    return [out.detach(), *(t.grad for t in inputs if t.requires_grad)]


def _compile_and_compare(fn, inputs, options=FUSION):
    """Ours with fusion against aot_eager: outputs and grads equal bit for bit."""
    torch._dynamo.reset()
    ours = _outputs_and_grads(torch.compile(fn, backend="lite", options=options), inputs)
    ledger = lite_compiler.last_ledger("lite")
    torch._dynamo.reset()
    reference = _outputs_and_grads(torch.compile(fn, backend="aot_eager"), inputs)
    assert len(ours) == len(reference)
    for a, b in zip(ours, reference):
        assert a.dtype == b.dtype and torch.equal(a, b)
    return ledger


def _floor_and_relu(x, y):
    """bf16 floor (bitwise on CPU), bf16 relu (not: only exhaustion finds it), fp32 mul (sampled).
    ``y`` needs no grad, so its relu stays a forward op (not saved for a threshold_backward)."""
    return (torch.floor(x).float() * 2.0 + torch.relu(y).float()) * x.float()


def _bf16_input():
    gen = torch.Generator().manual_seed(0)
    x, y = (torch.randn(8, 100, generator=gen).bfloat16() for _ in range(2))
    return [x.requires_grad_(), y]


FLOOR = "bitwise_fusion aten.floor.default(bfloat16[2d]) on cpu"
RELU = "bitwise_fusion aten.relu.default(bfloat16[2d]) on cpu"


# ---- what "exhaustive" enumerates -----------------------------------------------------------------
@pytest.mark.parametrize("dtypes", [(torch.bfloat16,), (torch.float16,), (torch.bool, torch.bfloat16)])
def test_an_exhaustive_enumeration_feeds_every_combination_of_input_bit_patterns(dtypes):
    enumeration = Enumeration(dtypes, torch.device("cpu"), (1 << 16) - 1)  # a chunk that wraps
    assert enumeration.exhaustive and enumeration.count == 1 << enumeration.bits
    seen = torch.zeros(enumeration.count, dtype=torch.bool)
    for round_ in range(enumeration.rounds):
        operands = enumeration.inputs(round_, torch.Generator().manual_seed(0))
        assert [t.dtype for t in operands] == list(dtypes)
        combined, offset = torch.zeros(enumeration.chunk, dtype=torch.int64), 0
        for t in operands:  # each operand's bit pattern, packed back into one index
            width = 1 if t.dtype == torch.bool else 16
            raw = t.long() if t.dtype == torch.bool else t.view(torch.int16).long() & 0xFFFF
            combined |= raw << offset
            offset += width
        seen[combined] = True
    assert bool(seen.all()), f"{int((~seen).sum())} combinations never fed"


def test_16_bit_binary_and_fp32_unary_are_exhaustive_only_where_the_device_affords_it():
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert not Enumeration((torch.bfloat16, torch.bfloat16), cpu, 1 << 16).exhaustive
    assert Enumeration((torch.bfloat16, torch.bfloat16), cuda, 1 << 24).count == 1 << 32
    assert Enumeration((torch.float32,), cuda, 1 << 24).exhaustive
    assert not Enumeration((torch.float32, torch.float32), cuda, 1 << 24).exhaustive
    assert "sampled 1,048,576" in Enumeration((torch.float32,), cpu, 1 << 16).coverage()


# ---- proofs and differences on CPU --------------------------------------------------------------
def test_a_bf16_unary_signature_is_proven_on_all_65536_bit_patterns_and_a_difference_only_exhaustion_finds_is_reported():
    _compile_and_compare(_floor_and_relu, _bf16_input())
    rows = _signature_rows()
    allowed, reason = rows[FLOOR]
    assert allowed, reason
    assert "signature bitwise, proven: exhaustive over all 65,536 input bit-pattern combinations" in reason
    # relu: the stress values pass (their NaN is 0x7fc0); the enumeration meets NaNs with other
    # payloads in ATen's scalar tail, which keeps the payload where Inductor writes 0xffff.
    allowed, reason = rows[RELU]
    assert not allowed
    assert "exhaustive over all 65,536 input bit-pattern combinations" in reason
    # The enumeration's words (the stress check says "elements differ in bits (first at ...").
    found = re.search(r"outputs differ, e.g. inputs \((0x[0-9a-f]{4})\): ATen (0x[0-9a-f]{4}),"
                      r" Inductor (0x[0-9a-f]{4})", reason)
    assert found, reason
    pattern, aten, inductor = (int(h, 16) for h in found.groups())
    x = torch.tensor([pattern - (1 << 16) if pattern >= 1 << 15 else pattern], dtype=torch.int16)
    x = x.view(torch.bfloat16)
    assert torch.isnan(x).all() and aten != inductor
    # The reported outputs are real: ATen's scalar loop (one element) and Inductor's kernel.
    assert int(torch.relu(x).view(torch.int16)[0]) & 0xFFFF == aten
    torch._dynamo.reset()
    from torch._inductor import config

    with config.patch(emulate_precision_casts=True):
        compiled = torch.compile(torch.relu, backend="inductor")(x.expand(1031).contiguous())
    assert int(compiled.view(torch.int16)[-1]) & 0xFFFF == inductor


def test_proven_mode_fuses_the_proven_bf16_signature_and_keeps_the_sampled_fp32_one_aten():
    _compile_and_compare(_floor_and_relu, _bf16_input(), options={"bitwise_fusion": "proven"})
    rows = _signature_rows()
    assert rows[FLOOR][0], rows[FLOOR][1]
    sampled = {name: reason for name, (allowed, reason) in rows.items() if "float32" in name
               and "aten.mul" in name}
    assert sampled and all("bitwise but not proven (sampled" in r for r in sampled.values()), sampled
    assert all(not allowed for name, (allowed, _) in rows.items() if name in sampled)


# ---- the verdict cache, across processes ----------------------------------------------------------
_CHILD = textwrap.dedent("""
    import json, time, torch, lite_compiler
    from tests.test_bitwise_proof import (_bf16_input, _floor_and_relu, _outputs_and_grads,
                                          _signature_rows)
    start = time.perf_counter()
    compiled = torch.compile(_floor_and_relu, backend="lite", options={"bitwise_fusion": True})
    _outputs_and_grads(compiled, _bf16_input())  # forward and backward, as in the first process
    seconds = time.perf_counter() - start
    ledger = lite_compiler.last_ledger("lite")
    print(json.dumps({"rows": _signature_rows(), "seconds": seconds,
                      "checks": [k for k in ledger.region_code if "/bitwise-check" in k]}))
""")


def _child(env) -> dict:
    done = subprocess.run([sys.executable, "-c", _CHILD], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_second_process_reads_the_verdicts_back_and_compiles_no_check_and_a_forged_entry_is_checked_again(tmp_path):
    from lite_compiler.verdict_cache import LAYOUT

    # The first process: in this one (torch is already imported here).
    _compile_and_compare(_floor_and_relu, _bf16_input())
    first = _signature_rows()
    checks = [k for k in lite_compiler.last_ledger("lite").region_code if "/bitwise-check" in k]
    assert checks and not any("read back" in r for _, r in first.values())
    entries = sorted((tmp_path / "cache" / LAYOUT).glob("*.json"))
    assert len(entries) == len(first)

    env = {**os.environ, "LITE_GUARD_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    second = _child(env)
    assert second["checks"] == []  # no check compiled, nothing enumerated
    assert second["rows"].keys() == first.keys()
    for name, (allowed, reason) in second["rows"].items():
        assert allowed == first[name][0]
        assert "; read back from the authenticated verdict cache" in reason, reason
        # The same verdict, coverage and first difference as the process that ran the check.
        assert reason.replace("; read back from the authenticated verdict cache", "") == first[name][1]

    # Forge relu's verdict as "bitwise, proven" without the secret: it is not read, relu is checked
    # again, and found not bitwise again.
    forged = 0
    for entry in entries:
        data = entry.read_bytes()
        if b'"bitwise": false' in data:
            entry.write_bytes(data.replace(b'"bitwise": false', b'"bitwise": true'))
            forged += 1
    assert forged
    bitwise_check.forget_verdicts()  # (this process as a third: only the disk holds verdicts)
    _compile_and_compare(_floor_and_relu, _bf16_input())
    checks = [k for k in lite_compiler.last_ledger("lite").region_code if "/bitwise-check" in k]
    assert checks, "the forged verdict was read"
    allowed, reason = _signature_rows()[RELU]
    assert not allowed and "read back" not in reason and "outputs differ" in reason


# ---- CUDA: the enumeration over every pair of bf16 bit patterns ----------------------------------
def _swiglu(gate, up):
    return torch.nn.functional.silu(gate) * up


def _cuda_bf16(*shape):
    gen = torch.Generator(device="cuda").manual_seed(0)
    return torch.randn(*shape, device="cuda", generator=gen, dtype=torch.bfloat16)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_gpu_bf16_mul_is_proven_and_silu_backward_is_judged_on_all_pairs():
    """bf16 silu_backward decomposes as ATen's CUDA functor computes it (lite_compiler.
    faithful_decompositions: a real division, fma(x, 1 - s, 1)); torch's own decomposition
    differed on 506 of the 2^32 pairs on the H200. Whichever way it goes on this GPU, the
    verdict rests on every pair, and the result is aot_eager's (_compile_and_compare)."""
    import time

    start = time.perf_counter()
    _compile_and_compare(_swiglu, [_cuda_bf16(64, 96).requires_grad_(), _cuda_bf16(64, 96).requires_grad_()])
    seconds = time.perf_counter() - start
    rows = _signature_rows()
    mul = [(a, r) for n, (a, r) in rows.items()
           if n.startswith("bitwise_fusion aten.mul.Tensor(bfloat16[2d], bfloat16[2d]) on cuda")]
    assert mul and mul[0][0], mul
    assert "proven: exhaustive over all 4,294,967,296 input bit-pattern combinations" in mul[0][1]
    silu_bw = [(a, r) for n, (a, r) in rows.items() if n.startswith("bitwise_fusion aten.silu_backward")]
    assert silu_bw, list(rows)
    allowed, reason = silu_bw[0]
    if allowed:
        assert "proven: exhaustive over all 4,294,967,296 input bit-pattern combinations" in reason
    else:  # found by the enumeration, or already by the stress values
        assert ("outputs differ, e.g. inputs (0x" in reason or "elements differ in bits" in reason), reason
    print(f"\ncompile + checks + aot_eager reference: {seconds:.1f} s; silu_backward:"
          f" {'bitwise' if allowed else 'not bitwise'}: {reason}")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_gpu_fp32_unary_signatures_are_enumerated_on_all_2_to_the_32_patterns():
    def f(x):
        return torch.exp(x) * 2.0 + torch.rsqrt(x.abs() + 1.0)

    _compile_and_compare(f, [torch.randn(64, 96, device="cuda").requires_grad_()])
    rows = _signature_rows()
    unary = {n: r for n, (_, r) in rows.items()
             if any(n.startswith(f"bitwise_fusion aten.{op}.default(float32[2d])") for op in ("exp", "rsqrt", "abs"))}
    # A signature the stress values already refuse is not enumerated (on the H200: fp32 abs,
    # a NaN's sign); every other one is enumerated on all 2^32 patterns.
    enumerated = {n: r for n, r in unary.items() if not r.startswith("signature not bitwise")
                  or "exhaustive" in r}
    assert enumerated and all("exhaustive over all 4,294,967,296" in r for r in enumerated.values()), unary
