"""A small model zoo for lite-mode tests, benchmarks and the fuzzer: MLP, llama-style block,
conv net with batch norm, MoE block. Every model is tiny so a CPU compile takes seconds.

``annotate=True`` wraps one natural piece of each model in ``lite_compiler.region`` so the same
model serves both the fallback (bitwise) tests and the regional-compile tests.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import nn


def _region(annotate: bool, **kwargs: Any):
    if not annotate:
        return contextlib.nullcontext()
    import lite_compiler

    return lite_compiler.region(**kwargs)


class MLP(nn.Module):
    def __init__(self, dim: int = 16, hidden: int = 32, annotate: bool = False):
        super().__init__()
        self.fc1, self.fc2, self.annotate = nn.Linear(dim, hidden), nn.Linear(hidden, dim), annotate

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc1(x)
        with _region(self.annotate, id="act"):
            h = F.gelu(h) * torch.sigmoid(h)
        return self.fc2(h)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(dim)), eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


def rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class LlamaBlock(nn.Module):
    """RMSNorm, rotary embeddings, SDPA attention, SwiGLU MLP."""

    def __init__(self, dim: int = 32, heads: int = 2, hidden: int = 64, annotate: bool = False):
        super().__init__()
        self.heads, self.head_dim, self.annotate = heads, dim // heads, annotate
        self.attn_norm, self.mlp_norm = RMSNorm(dim), RMSNorm(dim)
        self.wqkv, self.wo = nn.Linear(dim, 3 * dim, bias=False), nn.Linear(dim, dim, bias=False)
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim))
        freqs = torch.outer(torch.arange(64).float(), inv)
        self.register_buffer("cos", torch.cat((freqs, freqs), -1).cos(), persistent=False)
        self.register_buffer("sin", torch.cat((freqs, freqs), -1).sin(), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        with _region(self.annotate, id="attn_norm"):
            h = self.attn_norm(x)
        q, k, v = self.wqkv(h).view(b, s, 3, self.heads, self.head_dim).unbind(2)
        cos, sin = self.cos[:s].to(x.dtype), self.sin[:s].to(x.dtype)
        q, k = rotary(q, cos[:, None], sin[:, None]), rotary(k, cos[:, None], sin[:, None])
        o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                           is_causal=True)
        x = x + self.wo(o.transpose(1, 2).reshape(b, s, d))
        h = self.mlp_norm(x)
        gate, up = self.w1(h), self.w3(h)
        with _region(self.annotate, id="swiglu"):
            act = F.silu(gate) * up
        return x + self.w2(act)


class ConvNet(nn.Module):
    def __init__(self, channels: int = 4, annotate: bool = False):
        super().__init__()
        self.conv1 = nn.Conv2d(3, channels, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(channels)
        self.head = nn.Linear(channels, 5)
        self.annotate = annotate

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.bn2(self.conv2(x))
        with _region(self.annotate, id="pool"):
            x = F.relu(x).mean(dim=(2, 3))
        return self.head(x)


class MoE(nn.Module):
    """Top-2 router over small SwiGLU experts, dispatched with index_add (no data-dependent shapes)."""

    def __init__(self, dim: int = 16, hidden: int = 32, experts: int = 4, annotate: bool = False):
        super().__init__()
        self.router = nn.Linear(dim, experts, bias=False)
        self.w1 = nn.Parameter(torch.randn(experts, dim, hidden) * 0.1)
        self.w2 = nn.Parameter(torch.randn(experts, hidden, dim) * 0.1)
        self.annotate = annotate

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = x.reshape(-1, x.shape[-1])
        with _region(self.annotate, id="router"):
            probs = torch.softmax(self.router(tokens).float(), dim=-1)
        weights, chosen = torch.topk(probs, 2, dim=-1)
        weights = (weights / weights.sum(-1, keepdim=True)).to(x.dtype)
        out = torch.zeros_like(tokens)
        for e in range(self.w1.shape[0]):
            gate = ((chosen == e).to(x.dtype) * weights).sum(-1, keepdim=True)
            h = F.silu(tokens @ self.w1[e]) @ self.w2[e]
            out = out + gate * h
        return out.reshape(x.shape)


@dataclass(frozen=True)
class ZooEntry:
    name: str
    make: Callable[..., nn.Module]
    example: Callable[[torch.dtype], tuple[torch.Tensor, ...]]


def _seeded(shape: tuple[int, ...]) -> Callable[[torch.dtype], tuple[torch.Tensor, ...]]:
    def example(dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
        g = torch.Generator().manual_seed(0)
        return (torch.randn(*shape, generator=g).to(dtype),)

    return example


ZOO: dict[str, ZooEntry] = {
    "mlp": ZooEntry("mlp", MLP, _seeded((4, 16))),
    "llama": ZooEntry("llama", LlamaBlock, _seeded((2, 8, 32))),
    "convnet": ZooEntry("convnet", ConvNet, _seeded((2, 3, 8, 8))),
    "moe": ZooEntry("moe", MoE, _seeded((2, 4, 16))),
}


def build(name: str, dtype: torch.dtype = torch.float32,
          annotate: bool = False) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """A freshly seeded model and its example inputs, identical on every call."""
    entry = ZOO[name]
    torch.manual_seed(0)
    model = entry.make(annotate=annotate).to(dtype)
    return model, entry.example(dtype)


def run_step(model: nn.Module, inputs: tuple[torch.Tensor, ...], compiled: Callable[..., Any],
             train: bool) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """One forward (and backward when training): the output and the parameter/input gradients."""
    model.train(train)
    model.zero_grad(set_to_none=True)
    inputs = tuple(t.detach().clone().requires_grad_(train) for t in inputs)
    if not train:
        with torch.no_grad():
            return compiled(*inputs), []
    out = compiled(*inputs)
    out.float().square().mean().backward()
    grads = [inputs[0].grad] + [p.grad for p in model.parameters()]
    return out.detach(), [g for g in grads if g is not None]


# ---- helpers shared by the lite compiler tests ------------------------------------------------

def assert_bitwise(a: Any, b: Any) -> None:
    (out_a, grads_a), (out_b, grads_b) = a, b
    assert torch.equal(out_a, out_b), "outputs differ from aot_eager"
    assert len(grads_a) == len(grads_b)
    for i, (ga, gb) in enumerate(zip(grads_a, grads_b)):
        assert torch.equal(ga, gb), f"gradient {i} differs from aot_eager"


def compile_lite(fn: Callable[..., Any], **kwargs: Any) -> Callable[..., Any]:
    import lite_compiler  # noqa: F401  (registers backend="lite")

    torch._dynamo.reset()
    return torch.compile(fn, backend="lite", **kwargs)


def aot_eager_result(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` compiled fresh with ``backend="aot_eager"``: the reference."""
    torch._dynamo.reset()
    return torch.compile(fn, backend="aot_eager")(*args)


def refused_by_lite(fn: Callable[..., Any], *args: Any) -> Any:
    """The ``LitePassViolation`` a lite compile of ``fn(*args)`` raises (fails if none)."""
    import pytest

    import lite_compiler

    with pytest.raises(lite_compiler.LitePassViolation) as err:
        compile_lite(fn)(*args)
    return err.value


def lowering_hook_op(qualname: str) -> tuple[Any, list[Callable[[], None]], Callable[..., Any]]:
    """A custom op ``qualname`` computing ``x * 2`` whose fake kernel runs each callable of the
    returned list while Inductor lowers a region holding the op (``V.graph`` is a
    ``GraphLowering``): how the guard's red-team tests run code inside a region's lowering.
    Returns (the op, the list, the fake kernel, to put back after replacing it)."""
    hooks: list[Callable[[], None]] = []

    @torch.library.custom_op(qualname, mutates_args=())
    def op(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    def fake(x: torch.Tensor) -> torch.Tensor:
        from torch._inductor.virtualized import V

        try:
            lowering = type(V.graph).__name__ == "GraphLowering"
        except (AttributeError, AssertionError):
            lowering = False
        if lowering:
            for act in hooks:
                act()
        return torch.empty_like(x)

    op.register_fake(fake)
    return op, hooks, fake
