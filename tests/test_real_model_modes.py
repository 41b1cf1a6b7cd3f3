"""Usage modes on real models (bench/real_model_modes.py): inference_mode, no_grad, CPU bf16
autocast, bf16 parameters, channels_last, gradient checkpointing, mark_dynamic with a second batch
size, recompiles on new sequence lengths, graph breaks, a compiled AdamW step, one compiled
submodule, an encoder-decoder loss, a padded batch with hidden states and attentions, generate()
with a static cache, and regions under torch.use_deterministic_algorithms(True).

Each compiles with ``backend="lite"`` and ``backend="aot_eager"``; every output, gradient,
buffer, updated parameter and optimizer state must be equal bit for bit (torch.equal).
"""

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

_MISSING = [lib for lib in ("torchvision", "timm", "transformers") if importlib.util.find_spec(lib) is None]
pytestmark = pytest.mark.skipif(bool(_MISSING), reason=f"{_MISSING} not installed (the test extra has them)")

from bench.real_model_modes import FAST, MODES, SELF_COMPARED, run_mode  # noqa: E402

PARAMS = [pytest.param(name, marks=() if name in FAST else pytest.mark.slow) for name in MODES]


@pytest.mark.parametrize("mode", PARAMS)
def test_lite_is_bitwise_equal_to_aot_eager_in_this_usage_mode(mode):
    verdict = run_mode(mode)
    assert verdict["bitwise"], verdict["detail"]
    assert verdict["tensors"] >= 1
    if mode not in SELF_COMPARED:
        assert verdict["detail"] == ""
