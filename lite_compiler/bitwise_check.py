"""Is Inductor's code for one op signature bitwise equal to the ATen kernel? Decided by running it.

A signature is an op overload with its inputs' dtypes and ranks, its constant arguments and the
device it runs on. For every signature the fusion pass has not judged yet, one graph holding one
node per signature (each reading its own inputs, writing its own output, in its own loop size so
Inductor does not fuse them together) goes through the region path: Inductor compiles it under the
fusion config, exactly as a fusion group is compiled, and the guard sees every pass. Then it runs
on stress tensors (scaled normals with ±0, ±inf, NaN, subnormals and the largest finite values
mixed in) next to the same nodes run by ATen, and the bit patterns are compared: floats are
viewed as integers, so a NaN payload, a sign of zero or a flushed subnormal is a difference.
A signature whose outputs differ anywhere, or that Inductor or ATen cannot run, is not fusible
(fail closed). Verdicts are cached for the process, keyed by torch, device name and signature.

Verdicts are of one kernel on one set of values; lite_compiler.bitwise_fusion checks every fused
group again on its first real call.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx

from lite_compiler.bits import bits, difference
from lite_compiler.errors import LiteCompilerError

# After the run with blocks of specials, runs of the same compiled check on fresh random values
# (a tail loop computes ordinary values too, and may compute them differently).
RANDOM_ROUNDS = 3
# The region id the checks compile under (one per graph checked): never a user's region.
CHECK_REGION = "__lite_bitwise_check__"


@dataclass(frozen=True)
class Verdict:
    bitwise: bool
    reason: str = ""  # why not (empty when bitwise)
    # What the verdict rests on: "proven exhaustively: ...", "sampled: ...", or stress values only.
    coverage: str = "stress values at the real ranks"
    proven: bool = False  # every input bit pattern combination was checked


_VERDICTS: dict[tuple[Any, ...], Verdict] = {}


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return device.type


def signature(node: torch.fx.Node, exact: bool = False) -> tuple[Any, ...]:
    """(op, device, per argument: tensor (dtype, rank) or the constant's repr, kwargs). ``exact``
    (data movement, which is checked at its real shapes): tensors keyed by dtype, shape, strides
    and offset, tensor lists item by item, and the key ends with "exact"."""
    def arg_key(arg: Any) -> Any:
        if isinstance(arg, torch.fx.Node):
            val = arg.meta.get("val")
            if not isinstance(val, torch.Tensor):
                return ("?",)
            if exact:
                return ("tensor", str(val.dtype), val.dim(), tuple(val.shape), val.stride(),
                        val.storage_offset())
            return ("tensor", str(val.dtype), val.dim())
        if exact and isinstance(arg, (list, tuple)) and any(isinstance(a, torch.fx.Node) for a in arg):
            return ("list", tuple(arg_key(a) for a in arg))
        return repr(arg)

    val = node.meta["val"]
    sig = (str(node.target), str(val.device.type), tuple(arg_key(a) for a in node.args),
           tuple(sorted((k, arg_key(v)) for k, v in node.kwargs.items())))
    return (*sig, "exact") if exact else sig


def is_exact(sig: tuple[Any, ...]) -> bool:
    """A data-movement signature, checked at its real shapes (not a pointwise one)."""
    return len(sig) == 5 and sig[4] == "exact"


def describe(sig: tuple[Any, ...]) -> str:
    """``aten.neg.default(bfloat16[4d]) on cuda`` for ledger rows (data movement: the shapes,
    ``aten.cat.default([bfloat16[2x8], bfloat16[2x8]], 1) on cuda``)."""
    op, device, args, kwargs = sig[:4]

    def text(key: Any) -> str:
        if isinstance(key, tuple) and key and key[0] == "tensor":
            if len(key) > 3:
                return f"{key[1].removeprefix('torch.')}[{'x'.join(map(str, key[3])) or '0d'}]"
            return f"{key[1].removeprefix('torch.')}[{key[2]}d]"
        if isinstance(key, tuple) and key and key[0] == "list":
            return f"[{', '.join(text(k) for k in key[1])}]"
        return str(key)

    parts = [text(a) for a in args] + [f"{k}={text(v)}" for k, v in kwargs]
    return f"{op}({', '.join(parts)}) on {device}"


def cache_key(sig: tuple[Any, ...], device: torch.device) -> tuple[Any, ...]:
    try:
        import triton  # noqa: PLC0415 - only to key verdicts by its version where it exists
        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    return (torch.__version__, triton_version, device_name(device), sig)


def known(sig: tuple[Any, ...], device: torch.device) -> Verdict | None:
    return _VERDICTS.get(cache_key(sig, device))


def forget_verdicts() -> None:
    """Drop every cached verdict (tests that must see a check run)."""
    _VERDICTS.clear()


# ---- stress values ------------------------------------------------------------------------------

_SPECIALS = (0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-40, -1e-40, 1.0, -1.0, 0.5,
             -0.5, 2.0, 65504.0, -65504.0, 3e38, -3e38)


def stress_tensor(shape: tuple[int, ...], dtype: torch.dtype, device: torch.device,
                  gen: torch.Generator, operand: int = 0, blocks: bool = True) -> torch.Tensor:
    """Values that find rounding, NaN and subnormal differences: normals scaled by 2**[-20, 20),
    one element in eight replaced by a special value (cycled, so every one appears), and two
    blocks of specials, at the start (vector loop) and at the very end (where a scalar tail loop
    runs): in those blocks operand 0 cycles fastest and operand 1 by blocks of 16, so two
    same-shaped operands meet in every pair of specials (NaN + NaN, inf - inf, ...).
    ``blocks=False``: no blocks, so ordinary values reach the tail loop too."""
    if dtype == torch.bool:
        return torch.rand(shape, generator=gen).lt(0.5).to(device)
    if not dtype.is_floating_point:
        info = torch.iinfo(dtype)
        low, high = max(info.min, -1000), min(info.max, 1000)
        values = torch.randint(low, high, shape, generator=gen, dtype=torch.int64)
        return values.to(dtype).to(device)
    x = torch.randn(shape, generator=gen, dtype=torch.float64)
    x = x * torch.exp2(torch.randint(-20, 20, shape, generator=gen).double())
    flat = x.view(-1)
    if flat.numel() >= 8:
        where = torch.randperm(flat.numel(), generator=gen)[: max(len(_SPECIALS), flat.numel() // 8)]
        specials = torch.tensor(_SPECIALS, dtype=torch.float64)
        flat[where] = specials[torch.arange(where.numel()) % len(_SPECIALS)]
        block = min(len(_SPECIALS) ** 2, flat.numel() // 2) if blocks else 0
        pattern = specials[(torch.arange(block) // len(_SPECIALS) ** min(operand, 1)
                            + 7 * max(operand - 1, 0)) % len(_SPECIALS)]
        if block:
            flat[:block] = pattern
            flat[flat.numel() - block:] = pattern
    # Through float32 first: the specials (subnormals, 3e38) take the value each dtype rounds to.
    return x.float().to(dtype).to(device)


def stress_shape(out_shape: tuple[int, ...], in_shape: tuple[int, ...], last: int) -> tuple[int, ...]:
    """A small stand-in for ``in_shape``, broadcasting against the output as it did: each output
    dim is cut to 3 (the last one to ``last``); an input dim of 1 stays 1."""
    mapped = [min(d, 3) for d in out_shape]
    if mapped and out_shape[-1] > 1:
        mapped[-1] = last
    offset = len(out_shape) - len(in_shape)
    return tuple(1 if d == 1 else mapped[offset + i] for i, d in enumerate(in_shape))


# ---- the check ----------------------------------------------------------------------------------

@contextlib.contextmanager
def _real_tensors() -> Iterator[None]:
    """Real tensors while AOTAutograd's fake mode may be active around the compiler call."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    with unset_fake_temporarily(), torch.no_grad():
        yield


def _fake_mode() -> Any:
    from torch._guards import detect_fake_mode
    from torch._subclasses.fake_tensor import FakeTensorMode

    return detect_fake_mode() or FakeTensorMode()


def check_signatures(nodes: Mapping[tuple[Any, ...], torch.fx.Node], graph_name: str,
                     lite_config: Mapping[str, Any], fusion_configs: Mapping[str, Any]
                     ) -> dict[tuple[Any, ...], Verdict]:
    """Judge each signature (key) by the node given for it. A verdict this process already has,
    or one the authenticated on-disk cache holds (lite_compiler.verdict_cache), is not re-run."""
    from lite_compiler.verdict_cache import VerdictStore, entry_name

    verdicts: dict[tuple[Any, ...], Verdict] = {}
    todo: dict[tuple[Any, ...], torch.fx.Node] = {}
    configs = {**lite_config, **fusion_configs}
    store = VerdictStore.open()
    try:
        for sig, node in nodes.items():
            key = cache_key(sig, node.meta["val"].device)
            held = _VERDICTS.get(key)
            if held is None and store is not None:
                entry = store.get(entry_name(key, configs))
                if entry is not None:
                    entry["coverage"] += "; read back from the authenticated verdict cache"
                    held = _VERDICTS[key] = Verdict(**entry)
            if held is not None:
                verdicts[sig] = held
            else:
                todo[sig] = node
        if todo:
            fresh = _run_checks(todo, graph_name, lite_config, fusion_configs)
            for sig, verdict in fresh.items():
                key = cache_key(sig, todo[sig].meta["val"].device)
                _VERDICTS[key] = verdict
                # Errors (a compile that failed) are not kept: only verdicts the bits decided.
                if store is not None and (verdict.bitwise or "differ" in verdict.reason):
                    store.put(entry_name(key, configs), {
                        "bitwise": verdict.bitwise, "reason": verdict.reason,
                        "coverage": verdict.coverage, "proven": verdict.proven})
            verdicts.update(fresh)
    finally:
        if store is not None:
            store.close()
    return verdicts


def _run_checks(todo: Mapping[tuple[Any, ...], torch.fx.Node], graph_name: str,
                lite_config: Mapping[str, Any], fusion_configs: Mapping[str, Any]
                ) -> dict[tuple[Any, ...], Verdict]:
    from lite_compiler.annotate import ANNOTATION_KEY, region_annotation

    exact = {sig: node for sig, node in todo.items() if is_exact(sig)}
    if exact:  # data movement: one check graph of its own, at the real shapes
        verdicts_exact = _run_exact_checks(exact, graph_name, lite_config, fusion_configs)
        rest = {sig: node for sig, node in todo.items() if sig not in exact}
        return {**verdicts_exact, **(_run_checks(rest, graph_name, lite_config, fusion_configs)
                                     if rest else {})}
    fake_mode = _fake_mode()
    gen = torch.Generator().manual_seed(0)
    graph = torch.fx.Graph()
    inputs: list[torch.Tensor] = []
    specs: list[tuple[Any, ...] | None] = []  # (shape, dtype, device, operand) per stress input
    stress_outputs: list[int] = []  # per signature, its stress op's output index
    # sig -> (Enumeration, its input slots, its output index, the op, its arguments and kwargs)
    enumerations: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    outputs: list[torch.fx.Node] = []
    sigs: list[tuple[Any, ...]] = []
    annotation = region_annotation(CHECK_REGION, fusion_configs)
    verdicts: dict[tuple[Any, ...], Verdict] = {}
    with _real_tensors():
        for k, (sig, node) in enumerate(todo.items()):
            out_val = node.meta["val"]
            last = 1031 + 2 * k  # odd and distinct: vector body plus a tail, no loop shared
            args = []
            try:
                fake_args = []
                for arg in node.args:
                    if not isinstance(arg, torch.fx.Node):
                        args.append(arg)
                        fake_args.append(arg)
                        continue
                    val = arg.meta["val"]
                    spec = (stress_shape(tuple(out_val.shape), tuple(val.shape), last), val.dtype,
                            val.device, sum(isinstance(a, torch.fx.Node) for a in args))
                    real = stress_tensor(*spec[:3], gen, operand=spec[3])
                    placeholder = graph.placeholder(f"in{len(inputs)}")
                    placeholder.meta["val"] = fake_mode.from_tensor(real, static_shapes=True)
                    inputs.append(real)
                    specs.append(spec)
                    args.append(placeholder)
                    fake_args.append(placeholder.meta["val"])
                with fake_mode:
                    out_fake = node.target(*fake_args, **node.kwargs)
            except Exception as exc:  # noqa: BLE001 - a signature we cannot stage is not fusible
                verdicts[sig] = Verdict(False, f"cannot build its check: {_first_line(exc)}")
                continue
            op = graph.call_function(node.target, tuple(args), dict(node.kwargs))
            op.meta["val"] = out_fake
            op.meta["custom"] = {ANNOTATION_KEY: annotation}
            stress_outputs.append(len(outputs))
            outputs.append(op)
            sigs.append(sig)
            enumeration = _add_enumeration(graph, node, k, fake_mode, annotation, inputs, outputs)
            specs += [None] * (len(inputs) - len(specs))  # (enumeration inputs: made per chunk)
            if enumeration is not None:
                enumerations[sig] = enumeration
        if not outputs:
            return verdicts
        graph.output(tuple(outputs))
        ran = _compile_and_run(graph, inputs, f"{graph_name}/bitwise-check", todo, sigs, graph_name,
                               lite_config, fusion_configs)
        if isinstance(ran, dict):
            return {**verdicts, **ran}
        check_gm, aten_gm, want, got = ran
        whys: dict[tuple[Any, ...], str] = {}
        for round_ in range(RANDOM_ROUNDS + 1):
            if round_:  # the same kernels again on values without the blocks of specials
                for i, spec in enumerate(specs):
                    if spec is not None:
                        inputs[i] = stress_tensor(*spec[:3], gen, operand=spec[3], blocks=False)
                want, got = aten_gm(*inputs), check_gm(*inputs)
            for sig, out in zip(sigs, stress_outputs):
                why = None if sig in whys else difference(want[out], got[out], check_strides=False)
                if why is not None:
                    whys[sig] = why
        del want, got
        refused_by_stress = set(whys)
        try:
            _enumerate(check_gm, inputs, enumerations, whys)
        except LiteCompilerError:
            raise
        except Exception as exc:  # noqa: BLE001 - a run that fails proves nothing: not fusible
            for sig in enumerations:
                whys.setdefault(sig, f"the enumeration failed: {_first_line(exc)}")
        for sig in sigs:
            enumeration = enumerations[sig][0] if sig in enumerations else None
            if sig in refused_by_stress:
                enumeration = None
                coverage = "stress values at the real ranks (they refused it: not enumerated)"
            elif enumeration is not None:
                coverage = enumeration.coverage() + "; and stress values at the real ranks"
            else:
                coverage = ("stress values at the real ranks only (an op with a 0-dim operand is"
                            " not enumerated in 1-D: it would promote types differently)")
            proven = enumeration is not None and enumeration.exhaustive
            verdicts[sig] = (Verdict(False, whys[sig], coverage, proven) if sig in whys
                             else Verdict(True, "", coverage, proven))
    return verdicts


def bit_patterns(val: torch.Tensor, round_: int = 0) -> torch.Tensor:
    """A real tensor shaped, strided and offset as ``val``, holding bit patterns: its k-th
    element (in order) of filling ``round_`` holds (k + round_ * numel) * odd mod 2**width, so
    every 2**width elements over the fillings hold each pattern of a 16-bit dtype once (NaN
    payloads, -0, subnormals); wider dtypes get as many distinct patterns over their range."""
    from lite_compiler.bitwise_enumerate import _from_bits, dtype_bits

    width = dtype_bits(val.dtype)
    n = val.numel()
    index = torch.arange(round_ * n, (round_ + 1) * n, device=val.device, dtype=torch.int64)
    odd = {1: 1, 8: 167, 16: 40503, 32: 2654435761}.get(width, 0x9E3779B97F4A7C15 - (1 << 64))
    ints = index * odd
    if width < 64:
        ints = ints & ((1 << width) - 1)
    storage = torch.zeros(max(_span(val), 1), dtype=torch.int64, device=val.device)
    place = torch.arange(storage.numel(), device=val.device).as_strided(
        tuple(val.shape), val.stride(), val.storage_offset())
    storage[place.reshape(-1)] = ints  # (an element several places share: one of their patterns)
    return _from_bits(storage, val.dtype).as_strided(tuple(val.shape), val.stride(), val.storage_offset())


def _span(val: torch.Tensor) -> int:
    """Storage elements a strided tensor reaches."""
    if val.numel() == 0:
        return 0
    return val.storage_offset() + 1 + sum((d - 1) * st for d, st in zip(val.shape, val.stride()))


# Fillings of a data-movement check: enough that each input of a 16-bit (or narrower) dtype
# holds every bit pattern over them (a small input needs several), at least 2, at most 64.
MOVE_ROUNDS = (2, 64)


def _move_rounds(vals: list[torch.Tensor]) -> int:
    from lite_compiler.bitwise_enumerate import dtype_bits

    need = [-(-(1 << dtype_bits(v.dtype)) // max(v.numel(), 1)) for v in vals if dtype_bits(v.dtype) <= 16]
    return min(max([MOVE_ROUNDS[0], *need]), MOVE_ROUNDS[1])


class _PatternsSeen:
    """Which input bit patterns went through one data-movement op, over the fillings."""

    def __init__(self, vals: list[torch.Tensor]):
        from lite_compiler.bitwise_enumerate import dtype_bits

        self.widths = [dtype_bits(v.dtype) for v in vals]
        self.maps = [torch.zeros(1 << w, dtype=torch.bool, device=v.device) if w <= 16 else None
                     for v, w in zip(vals, self.widths)]
        self.counts = [0] * len(vals)

    def add(self, reals: list[torch.Tensor]) -> None:
        for i, real in enumerate(reals):
            flat = bits(real).reshape(-1)
            if self.maps[i] is not None:
                self.maps[i][flat.to(torch.int64) & ((1 << self.widths[i]) - 1)] = True
            else:  # distinct within a filling by construction, and between fillings
                self.counts[i] += int(flat.unique().numel())

    def coverage(self, rounds: int) -> tuple[str, bool]:
        """What the fillings covered, and whether that is every pattern of every input (each
        output element is one input element or a constant: then it is a proof)."""
        every, counts = True, []
        for i, width in enumerate(self.widths):
            seen = int(self.maps[i].sum()) if self.maps[i] is not None else self.counts[i]
            counts.append(f"{seen:,} of {1 << width:,}")
            every = every and seen == 1 << width
        what = "every bit pattern of each input" if every else "distinct bit patterns"
        return (f"{what} moved at its real shapes and strides ({'; '.join(counts) or 'no tensor'}"
                f" input patterns over {rounds} fillings; its output holds only copies and"
                " constants: the data-movement probe)"), every


def _run_exact_checks(todo: Mapping[tuple[Any, ...], torch.fx.Node], graph_name: str,
                      lite_config: Mapping[str, Any], fusion_configs: Mapping[str, Any]
                      ) -> dict[tuple[Any, ...], Verdict]:
    """Data-movement signatures (views aside): each op once, at its real shapes and strides, on
    bit patterns (bit_patterns), compiled as one check region and compared with ATen bit for
    bit, twice (two fillings)."""
    from lite_compiler.annotate import ANNOTATION_KEY, region_annotation

    fake_mode = _fake_mode()
    graph = torch.fx.Graph()
    inputs: list[torch.Tensor] = []
    vals: list[torch.Tensor] = []  # per input, the value it stands for (shape, strides, dtype)
    per_sig: dict[tuple[Any, ...], list[int]] = {}  # sig -> its input slots
    outputs: list[torch.fx.Node] = []
    sigs: list[tuple[Any, ...]] = []
    annotation = region_annotation(CHECK_REGION, fusion_configs)
    verdicts: dict[tuple[Any, ...], Verdict] = {}
    with _real_tensors():
        for sig, node in todo.items():
            slots: list[int] = []

            def put(arg: Any) -> Any:
                """A placeholder of bit patterns for each tensor argument (lists item by item)."""
                val = arg.meta["val"]
                real = bit_patterns(val)
                placeholder = graph.placeholder(f"in{len(inputs)}")
                placeholder.meta["val"] = fake_mode.from_tensor(real, static_shapes=True)
                slots.append(len(inputs))
                inputs.append(real)
                vals.append(val)
                return placeholder

            try:
                args = torch.fx.node.map_arg(node.args, put)
                kwargs = torch.fx.node.map_arg(node.kwargs, put)
                with fake_mode:
                    out_fake = node.target(*torch.fx.node.map_arg(args, lambda n: n.meta["val"]),
                                           **torch.fx.node.map_arg(kwargs, lambda n: n.meta["val"]))
            except Exception as exc:  # noqa: BLE001 - a signature we cannot stage is not fusible
                verdicts[sig] = Verdict(False, f"cannot build its check: {_first_line(exc)}")
                continue
            op = graph.call_function(node.target, args, kwargs)
            op.meta["val"] = out_fake
            op.meta["custom"] = {ANNOTATION_KEY: annotation}
            per_sig[sig] = slots
            outputs.append(op)
            sigs.append(sig)
        if not outputs:
            return verdicts
        graph.output(tuple(outputs))
        ran = _compile_and_run(graph, inputs, f"{graph_name}/bitwise-check-moves", todo, sigs,
                               graph_name, lite_config, fusion_configs)
        if isinstance(ran, dict):
            return {**verdicts, **ran}
        check_gm, aten_gm, want, got = ran
        whys: dict[tuple[Any, ...], str] = {}
        rounds = _move_rounds(vals)
        seen = {sig: _PatternsSeen([vals[i] for i in per_sig[sig]]) for sig in sigs}
        for round_ in range(rounds):
            if round_:  # the same kernels on the next filling
                for i, val in enumerate(vals):
                    inputs[i] = bit_patterns(val, round_)
                want, got = aten_gm(*inputs), check_gm(*inputs)
            for out, sig in enumerate(sigs):
                seen[sig].add([inputs[i] for i in per_sig[sig]])
                why = None if sig in whys else difference(want[out], got[out], check_strides=False)
                if why is not None:
                    whys[sig] = why
        for sig in sigs:
            text, every = seen[sig].coverage(rounds)
            verdicts[sig] = (Verdict(False, whys[sig], text, every) if sig in whys
                             else Verdict(True, "", text, every))
    return verdicts


def _compile_and_run(graph: torch.fx.Graph, inputs: list[torch.Tensor], name: str,
                     todo: Mapping[tuple[Any, ...], torch.fx.Node], sigs: list[tuple[Any, ...]],
                     graph_name: str, lite_config: Mapping[str, Any], fusion_configs: Mapping[str, Any]
                     ) -> tuple[Any, Any, Any, Any] | dict[tuple[Any, ...], Verdict]:
    """The check graph run by ATen (a copy) and compiled as one check region under the fusion
    configs and run: (compiled, aten, ATen's outputs, Inductor's). When ATen or Inductor cannot
    run it as a whole, the verdicts instead: each signature judged alone (so one bad op blames only
    itself), or the one signature not fusible. A guard refusal stops the compile, as for any region."""
    from lite_compiler.fusion_regions import FusionHooks
    from lite_compiler.regions import compile_regions

    check_gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    aten_gm = torch.fx.GraphModule(torch.nn.Module(), _copy_graph(graph))
    try:
        want = aten_gm(*inputs)
    except Exception as exc:  # noqa: BLE001 - one op ATen cannot run on these values
        return _one_by_one(todo, sigs, graph_name, lite_config, fusion_configs, exc)
    try:
        compile_regions(check_gm, name, is_inference=True, is_backward=False,
                        lite_config=lite_config, fusion=FusionHooks(None, also=(CHECK_REGION,)))
        got = check_gm(*inputs)
    except LiteCompilerError:
        raise
    except Exception as exc:  # noqa: BLE001 - Inductor cannot compile or run it: not fusible
        if len(sigs) > 1:
            return _one_by_one(todo, sigs, graph_name, lite_config, fusion_configs, exc)
        return {sigs[0]: Verdict(False, f"Inductor failed: {_first_line(exc)}")}
    return check_gm, aten_gm, want, got


def _add_enumeration(graph: torch.fx.Graph, node: torch.fx.Node, k: int, fake_mode: Any,
                     annotation: Any, inputs: list[torch.Tensor], outputs: list[torch.fx.Node]
                     ) -> tuple[Any, ...] | None:
    """A second copy of ``node`` in the check graph, on 1-D inputs of its enumeration's chunk
    size; None when its signature is not enumerated (or would promote types otherwise in 1-D)."""
    from lite_compiler.annotate import ANNOTATION_KEY
    from lite_compiler.bitwise_enumerate import enumeration_for

    enumeration = enumeration_for(node, k)
    if enumeration is None:
        return None
    args, fakes, reals = [], [], []
    dtypes = iter(enumeration.dtypes)
    for arg in node.args:
        if not isinstance(arg, torch.fx.Node):
            args.append(arg)
            fakes.append(arg)
            continue
        real = torch.zeros(enumeration.chunk, dtype=next(dtypes), device=enumeration.device)
        fake = fake_mode.from_tensor(real, static_shapes=True)
        reals.append(real)
        fakes.append(fake)
        args.append(fake)
    with fake_mode:
        out_fake = node.target(*fakes, **node.kwargs)
    if not isinstance(out_fake, torch.Tensor) or out_fake.dtype != node.meta["val"].dtype:
        return None
    slots = []
    for i, arg in enumerate(args):
        if isinstance(arg, torch.Tensor):
            placeholder = graph.placeholder(f"in{len(inputs)}")
            placeholder.meta["val"] = arg
            slots.append(len(inputs))
            inputs.append(reals[len(slots) - 1])
            args[i] = placeholder
    op = graph.call_function(node.target, tuple(args), dict(node.kwargs))
    op.meta["val"] = out_fake
    op.meta["custom"] = {ANNOTATION_KEY: annotation}
    outputs.append(op)
    return enumeration, slots, len(outputs) - 1, node.target, tuple(node.args), dict(node.kwargs)


def _enumerate(check_gm: torch.fx.GraphModule, inputs: list[torch.Tensor],
               enumerations: Mapping[tuple[Any, ...], tuple[Any, ...]], whys: dict[Any, str]) -> None:
    """Run every enumeration, chunk by chunk, until each is done or differs (one sync a chunk)."""
    from lite_compiler.bitwise_enumerate import first_difference

    gens: dict[Any, torch.Generator] = {}
    rounds = max((e[0].rounds for e in enumerations.values()), default=0)
    for round_ in range(rounds):
        active = [(sig, e) for sig, e in enumerations.items()
                  if round_ < e[0].rounds and sig not in whys]
        if not active:
            return
        operands = {}
        for sig, (enumeration, slots, _, _, _, _) in active:
            device = enumeration.device
            gen = gens.setdefault(device, torch.Generator(device=device).manual_seed(1))
            operands[sig] = enumeration.inputs(round_, gen)
            for slot, tensor in zip(slots, operands[sig]):
                inputs[slot] = tensor
        got = check_gm(*inputs)
        results, flags = [], []
        for sig, (_, _, out, target, args, kwargs) in active:
            wants = [_aten(target, args, kwargs, operands[sig])]
            if wants[0].device.type == "cpu":
                # ATen's CPU kernels run a vector loop over the body and a scalar loop over the
                # tail, which can differ (a NaN's payload): every pattern must also match the
                # scalar loop, which a stride-2 view of each operand forces.
                wants.append(_aten(target, args, kwargs, [_strided(t) for t in operands[sig]]))
            for want in wants:
                results.append((sig, want, got[out]))
                flags.append((bits(want) != bits(got[out])).any().reshape(1)
                             if want.dtype == got[out].dtype and want.shape == got[out].shape
                             else torch.ones(1, dtype=torch.bool, device=want.device))
        del got
        for (sig, want, fused), differs in zip(results, torch.cat([f.cpu() for f in flags]).tolist()):
            if differs and sig not in whys:
                whys[sig] = first_difference(operands[sig], want, fused)


def _aten(target: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any],
          tensors: list[torch.Tensor]) -> torch.Tensor:
    """``target`` run by ATen with the tensor arguments replaced, in order, by ``tensors``."""
    it = iter(tensors)
    return target(*[next(it) if isinstance(a, torch.fx.Node) else a for a in args], **kwargs)


def _strided(t: torch.Tensor) -> torch.Tensor:
    """The same values as a stride-2 view (TensorIterator then takes its scalar loop)."""
    buffer = torch.empty(2 * t.numel(), dtype=t.dtype, device=t.device)
    view = buffer[::2]
    view.copy_(t)
    return view


def _one_by_one(todo: Mapping[tuple[Any, ...], torch.fx.Node], sigs: list[tuple[Any, ...]],
                graph_name: str, lite_config: Mapping[str, Any], fusion_configs: Mapping[str, Any],
                exc: Exception) -> dict[tuple[Any, ...], Verdict]:
    """The batch failed as a whole: check each signature alone, so one bad op blames only itself."""
    if len(sigs) == 1:
        return {sigs[0]: Verdict(False, _first_line(exc))}
    out: dict[tuple[Any, ...], Verdict] = {}
    for sig in sigs:
        out.update(_run_checks({sig: todo[sig]}, graph_name, lite_config, fusion_configs))
    return out


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"[:300]


def _copy_graph(graph: torch.fx.Graph) -> torch.fx.Graph:
    """A copy to run by ATen: compiling the region rewrites the original."""
    copy = torch.fx.Graph()
    out = copy.graph_copy(graph, {})
    copy.output(out)
    return copy
