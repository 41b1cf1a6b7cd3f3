"""The inputs a signature check enumerates: every bit pattern where that is affordable, else a sample.

An elementwise op computes each output element from the elements at the same place in its inputs,
so checking it on every combination of input bit patterns is a proof for those dtypes. It is
checked on 1-D inputs: broadcasting and rank change only the indexing, not what is computed per
element. The stress check at the signature's real ranks runs as well (bitwise_check).

- Exhaustive when the float/int operands hold at most EXHAUST_BITS bits together (16-bit unary:
  65,536 patterns; on the GPU also 16-bit binary, fp32 unary, and where(bool, bf16, bf16)),
  enumerated in chunks of CHUNK elements.
- Sampled otherwise: SAMPLE uniformly random bit patterns per operand (every exponent, NaN
  payloads, subnormals), the first chunk starting with every pair of special values.
- Neither for an op with a 0-dim tensor operand: as 1-D it would follow other type-promotion
  rules, so only the stress check (which keeps its rank) judges it.
"""

from __future__ import annotations

from dataclasses import dataclass
import torch
import torch.fx

# Per device type: how many input bits together are enumerated exhaustively, the elements of
# one launch, and the sample size when not exhaustive.
EXHAUST_BITS = {"cuda": 33, "cpu": 17}
CHUNK = {"cuda": 1 << 24, "cpu": 1 << 16}
SAMPLE = {"cuda": 1 << 26, "cpu": 1 << 20}

_INT_OF_WIDTH = {8: torch.int8, 16: torch.int16, 32: torch.int32, 64: torch.int64}
_SPECIALS = (0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-40, -1e-40, 1.0, -1.0, 0.5,
             -0.5, 2.0, 65504.0, -65504.0, 3e38, -3e38)


def dtype_bits(dtype: torch.dtype) -> int:
    return 1 if dtype == torch.bool else dtype.itemsize * 8


@dataclass(frozen=True)
class Enumeration:
    """The inputs of one signature's enumeration: the operands' dtypes, in argument order."""

    dtypes: tuple[torch.dtype, ...]
    device: torch.device
    chunk: int

    @property
    def bits(self) -> int:
        return sum(dtype_bits(d) for d in self.dtypes)

    @property
    def exhaustive(self) -> bool:
        return self.bits <= EXHAUST_BITS.get(self.device.type, 17)

    @property
    def count(self) -> int:
        return 1 << self.bits if self.exhaustive else SAMPLE.get(self.device.type, SAMPLE["cpu"])

    @property
    def rounds(self) -> int:
        return -(-self.count // self.chunk)

    def coverage(self) -> str:
        if self.exhaustive:
            return f"exhaustive over all {self.count:,} input bit-pattern combinations"
        return (f"sampled {self.count:,} random input bit patterns (every pair of special values"
                " among them)")

    def inputs(self, round_: int, gen: torch.Generator) -> list[torch.Tensor]:
        """The operands for one launch: the next chunk of combinations, or a random chunk."""
        if self.exhaustive:
            index = torch.arange(round_ * self.chunk, (round_ + 1) * self.chunk, device=self.device)
            index = index % self.count
            out, offset = [], 0
            for dtype in self.dtypes:
                width = dtype_bits(dtype)
                out.append(_from_bits((index >> offset) & ((1 << width) - 1), dtype))
                offset += width
            return out
        out = [_random_bits(self.chunk, dtype, self.device, gen) for dtype in self.dtypes]
        if round_ == 0:
            _special_pairs(out)
        return out


def _from_bits(ints: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    if dtype == torch.bool:
        return ints.bool()
    same_width = ints.to(_INT_OF_WIDTH[dtype.itemsize * 8])  # wraps: the low bits are kept
    return same_width.view(dtype)


def _random_bits(n: int, dtype: torch.dtype, device: torch.device, gen: torch.Generator) -> torch.Tensor:
    if dtype == torch.bool:
        return torch.randint(0, 2, (n,), generator=gen, device=device).bool()
    width = dtype.itemsize * 8
    low, high = (-(1 << 62), 1 << 62) if width == 64 else (-(1 << (width - 1)), 1 << (width - 1))
    return torch.randint(low, high, (n,), generator=gen, device=device,
                         dtype=_INT_OF_WIDTH[width]).view(dtype)


def _special_pairs(operands: list[torch.Tensor]) -> None:
    """The first elements: float operand 0 cycles through the specials fastest, operand 1 by
    blocks, so the two meet in every pair."""
    specials = torch.tensor(_SPECIALS, dtype=torch.float64)
    block = min(len(_SPECIALS) ** 2, operands[0].numel())
    position = torch.arange(block)
    floats = [t for t in operands if t.dtype.is_floating_point]
    for j, t in enumerate(floats):
        pattern = specials[(position // len(_SPECIALS) ** min(j, 1) + 7 * max(j - 1, 0)) % len(_SPECIALS)]
        t[:block] = pattern.float().to(t.dtype).to(t.device)


def enumeration_for(node: torch.fx.Node, index: int) -> Enumeration | None:
    """How ``node``'s signature is enumerated (None: stress values only). ``index``: the node's
    place in the check graph, which gives each a loop size of its own (no fusing together)."""
    vals = [a.meta.get("val") for a in node.args if isinstance(a, torch.fx.Node)]
    vals += [v.meta.get("val") for v in node.kwargs.values() if isinstance(v, torch.fx.Node)]
    if not vals or any(not isinstance(v, torch.Tensor) or v.dim() == 0 for v in vals):
        return None
    if any(isinstance(v, torch.fx.Node) for v in node.kwargs.values()):
        return None  # (tensor keyword arguments: not an elementwise operand we place)
    device = node.meta["val"].device
    chunk = CHUNK.get(device.type, CHUNK["cpu"]) - 2 * index - 1
    return Enumeration(tuple(v.dtype for v in vals), device, chunk)


def first_difference(operands: list[torch.Tensor], want: torch.Tensor, got: torch.Tensor) -> str:
    """The first input combination whose outputs differ, as bit patterns."""
    from lite_compiler.bits import bits

    a, b = bits(want).reshape(-1), bits(got).reshape(-1)
    i = int((a != b).nonzero()[0])
    return (f"in one chunk, {int((a != b).sum())} of {a.numel()} outputs differ, e.g. inputs"
            f" ({', '.join(_hex(t.reshape(-1)[i]) for t in operands)}): ATen {_hex(want.reshape(-1)[i])},"
            f" Inductor {_hex(got.reshape(-1)[i])}")


def _hex(value: torch.Tensor) -> str:
    if value.dtype == torch.bool:
        return str(bool(value))
    width = value.dtype.itemsize * 8
    raw = int(value.reshape(1).view(_INT_OF_WIDTH[width])[0]) & ((1 << width) - 1)
    return f"0x{raw:0{width // 4}x}"


__all__ = ["CHUNK", "EXHAUST_BITS", "SAMPLE", "Enumeration", "enumeration_for", "first_difference"]
