"""How people use real models, beyond one forward and backward: activation checkpointing,
inference_mode, recompiles, regions on other submodules, a second compile. Each case compiles
with ``backend="lite"`` and ``backend="aot_eager"`` and compares every tensor with torch.equal.

Found by red-teaming lite mode with models and usage the real-model suite did not cover; each
test is the reduced failure (the slow ones run the real model it came from).
"""

import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import lite_compiler  # noqa: E402
from lite_compiler.testing import assert_bitwise_equal  # noqa: E402


class CheckpointedDropout(torch.nn.Module):
    """A random op inside torch.utils.checkpoint: the partitioner replays it in the backward."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(8, 16), torch.nn.Linear(16, 8)

    def _block(self, x):
        return F.dropout(F.gelu(self.fc1(x)), 0.5, training=True)

    def forward(self, x):
        return self.fc2(checkpoint(self._block, x, use_reentrant=False))


def test_checkpointed_random_op_is_bitwise_equal_to_aot_eager():
    # The partitioner wraps the recomputed dropout as run_and_save_rng_state (forward) and
    # run_with_rng_state (backward); lite mode refused that as an unregistered change.
    assert_bitwise_equal(CheckpointedDropout(), torch.randn(4, 8, requires_grad=True))


def test_checkpointed_random_op_replays_the_forward_draws():
    torch._dynamo.reset()
    model = CheckpointedDropout()
    compiled = torch.compile(model, backend="lite")
    x = torch.randn(4, 8, requires_grad=True)
    compiled(x).sum().backward()
    code = lite_compiler.last_ledger().graph_code
    forward = next(text for name, text in code.items() if name.endswith("/fw"))
    backward = next(text for name, text in code.items() if name.endswith("/bw"))
    assert "run_and_save_rng_state" in forward and "run_with_rng_state" in backward


class SqueezeExciteInplace(torch.nn.Module):
    """timm's SqueezeExcite shape, with nn.SiLU(inplace=True), the whole block in a region."""

    def __init__(self):
        super().__init__()
        self.reduce, self.expand = torch.nn.Conv2d(4, 2, 1), torch.nn.Conv2d(2, 4, 1)
        self.act = torch.nn.SiLU(inplace=True)

    def forward(self, x):
        with lite_compiler.region(id="se"):
            return x * self.expand(self.act(self.reduce(x.mean((2, 3), keepdim=True)))).sigmoid()


def test_backward_of_an_inplace_activation_in_a_region_compiles():
    # silu_'s backward links to no forward node by seq_nr, so it was traced undecomposed; the
    # region adopted it and Inductor refused it ("both a fallback and a decomp for same op").
    torch._dynamo.reset()
    x = torch.randn(2, 4, 4, 4, requires_grad=True)
    out = torch.compile(SqueezeExciteInplace(), backend="lite")(x)
    out.sum().backward()
    ledger = lite_compiler.last_ledger()
    assert any("/bw/region[se]" in name and "cpp_fused" in code for name, code in ledger.region_code.items())
    backward = next(text for name, text in ledger.graph_code.items() if name.endswith("/bw"))
    assert "torch.ops.aten.silu_backward.default" in backward  # run outside, as its ATen op
