"""How people run real models, beyond one forward and backward: each usage mode compiled with
``backend="lite"`` and with ``backend="aot_eager"``, every output, gradient, buffer and updated
parameter compared with ``torch.equal``.

One job: the modes and their runner. ``tests/test_real_model_modes.py`` runs them (the heavy
ones marked slow); ``python bench/real_model_modes.py [MODE ...]`` prints one verdict line each.
Models are the zoo's (bench/real_model_zoo.py): random init, tiny configs, nothing downloaded.
"""

from __future__ import annotations

import contextlib
import copy
import io
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import lite_compiler  # noqa: E402
from bench.real_model_zoo import CASES, compare  # noqa: E402

Named = list[tuple[str, torch.Tensor]]

LLAMA = "transformers Llama"
RESNET = "torchvision resnet (BasicBlock [1,1,1,1])"
VIT = "timm vit_tiny (2 blocks, 32 px)"
T5 = "transformers T5"


def _model(name: str) -> torch.nn.Module:
    torch.manual_seed(0)
    return CASES[name].build()


def _inputs(name: str, seed: int = 0) -> tuple[tuple, dict]:
    return CASES[name].inputs(torch.Generator().manual_seed(seed))


def _leaves(value: Any) -> list[torch.Tensor]:
    if hasattr(value, "to_tuple"):
        value = value.to_tuple()
    return [t for t in torch.utils._pytree.tree_leaves(value)
            if isinstance(t, torch.Tensor) and t.is_floating_point()]


def _backward_and_collect(model: torch.nn.Module, outputs: Any, tag: str = "") -> Named:
    flat = _leaves(outputs)
    named = [(f"{tag}output[{i}]", o.detach()) for i, o in enumerate(flat)]
    live = [o for o in flat if o.requires_grad]
    if live:
        g = torch.Generator().manual_seed(7)
        torch.autograd.backward(live, [torch.randn(o.shape, generator=g).to(o) for o in live])
        named += [(f"{tag}grad {n}", p.grad.clone()) for n, p in model.named_parameters()
                  if p.grad is not None]
    named += [(f"{tag}buffer {n}", b.clone()) for n, b in model.named_buffers() if b.is_floating_point()]
    return named


def _compile(target: Any, backend: str, **kwargs: Any) -> Any:
    return torch.compile(target, backend=backend, **kwargs)


# --------------------------------------------------------------------------- modes
def mode_inference_mode(backend: str) -> Named:
    model = _model(LLAMA).eval()
    args, kwargs = _inputs(LLAMA)
    with torch.inference_mode():
        return [("logits", _compile(model, backend)(*args, **kwargs).logits.clone())]


def mode_no_grad_eval(backend: str) -> Named:
    model = _model(VIT).eval()
    args, _ = _inputs(VIT)
    with torch.no_grad():
        return [("logits", _compile(model, backend)(*args))]


def mode_autocast_bf16_train(backend: str) -> Named:
    model = _model(LLAMA).train()
    args, kwargs = _inputs(LLAMA)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = _compile(model, backend)(*args, labels=kwargs["input_ids"], **kwargs)
    return [("loss", out.loss.detach())] + _backward_and_collect(model, out.loss)


def mode_bf16_parameters_train(backend: str) -> Named:
    model = _model(VIT).to(torch.bfloat16).train()
    (x,), _ = _inputs(VIT)
    return _backward_and_collect(model, _compile(model, backend)(x.to(torch.bfloat16)))


def mode_channels_last_train(backend: str) -> Named:
    model = _model(RESNET).to(memory_format=torch.channels_last).train()
    (x,), _ = _inputs(RESNET)
    out = _compile(model, backend)(x.to(memory_format=torch.channels_last))
    return _backward_and_collect(model, out)


def mode_gradient_checkpointing(backend: str) -> Named:
    model = _model(LLAMA).train()
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    args, kwargs = _inputs(LLAMA)
    out = _compile(model, backend)(*args, labels=kwargs["input_ids"], **kwargs)
    return [("loss", out.loss.detach())] + _backward_and_collect(model, out.loss)


def mode_dynamic_batch_mark_dynamic(backend: str) -> Named:
    """mark_dynamic on the batch, then a second call with another batch size (no recompile)."""
    model = _model(RESNET).train()
    compiled = _compile(model, backend)
    named = []
    for i, batch in enumerate((4, 3)):
        x = torch.randn(batch, 3, 32, 32, generator=torch.Generator().manual_seed(i))
        torch._dynamo.mark_dynamic(x, 0)
        named += _backward_and_collect(model, compiled(x), tag=f"call{i} ")
        model.zero_grad(set_to_none=True)
    return named


def mode_dynamic_sequence_recompile(backend: str) -> Named:
    """Two sequence lengths on a decoder: a recompile (automatic dynamic shapes)."""
    model = _model(LLAMA).train()
    compiled = _compile(model, backend)
    named = []
    for i, seq in enumerate((16, 12, 9)):
        ids = torch.randint(0, 128, (2, seq), generator=torch.Generator().manual_seed(i))
        out = compiled(input_ids=ids, labels=ids)
        named += [(f"call{i} loss", out.loss.detach())] + _backward_and_collect(model, out.loss, f"call{i} ")
        model.zero_grad(set_to_none=True)
    return named


def mode_graph_breaks(backend: str) -> Named:
    """A training step with a print and an .item() between model calls: several graphs."""
    model = _model(RESNET).train()

    def step(x):
        y = model(x)
        print("logits mean", y.mean().item(), file=io.StringIO())
        return model.fc(torch.relu(y[:, :10] @ torch.ones(10, 512))) + y

    x, = _inputs(RESNET)[0]
    return _backward_and_collect(model, _compile(step, backend)(x))


def mode_compiled_optimizer_step(backend: str) -> Named:
    """Two training steps with AdamW; the optimizer's step compiled with the same backend."""
    model = _model(VIT).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    compiled_model = _compile(model, backend)
    compiled_step = _compile(opt.step, backend)
    (x,), _ = _inputs(VIT)
    named = []
    for i in range(2):
        torch.manual_seed(100 + i)
        compiled_model(x).square().mean().backward()
        compiled_step()
        opt.zero_grad(set_to_none=True)
        named += [(f"step{i} param {n}", p.detach().clone()) for n, p in model.named_parameters()]
    named += [(f"state {k}", v.clone()) for s in opt.state.values() for k, v in s.items()
              if isinstance(v, torch.Tensor) and v.is_floating_point()]
    return named


def mode_submodule_compiled(backend: str) -> Named:
    """Only one decoder layer is compiled (model.model.layers[0].compile(...)), the rest eager."""
    model = _model(LLAMA).train()
    model.model.layers[0].compile(backend=backend)
    args, kwargs = _inputs(LLAMA)
    out = model(*args, labels=kwargs["input_ids"], **kwargs)
    return [("loss", out.loss.detach())] + _backward_and_collect(model, out.loss)


def mode_encoder_decoder_loss(backend: str) -> Named:
    model = _model(T5).train()
    _, kwargs = _inputs(T5)
    out = _compile(model, backend)(input_ids=kwargs["input_ids"], labels=kwargs["decoder_input_ids"])
    return [("loss", out.loss.detach())] + _backward_and_collect(model, out.loss)


def mode_padded_batch_attention_mask(backend: str) -> Named:
    """Left padding with an attention mask, output_hidden_states and output_attentions (eager
    attention), return_dict=False."""
    torch.manual_seed(0)
    from bench.real_model_zoo import _hf, _DECODER  # noqa: PLC0415

    model = _hf("LlamaForCausalLM", "LlamaConfig", **_DECODER, attn_implementation="eager")().train()
    ids = torch.randint(0, 128, (2, 12), generator=torch.Generator().manual_seed(3))
    mask = torch.ones(2, 12, dtype=torch.long)
    mask[0, :4] = 0
    out = _compile(model, backend)(input_ids=ids, attention_mask=mask, output_hidden_states=True,
                                   output_attentions=True, return_dict=False)
    return _backward_and_collect(model, out[0]) + [(f"extra[{i}]", t.detach()) for i, t in
                                                   enumerate(_leaves(out[1:]))]


def mode_generate_static_cache(backend: str) -> Named:
    model = _model(LLAMA).eval()
    model.config.use_cache = True
    model.forward = _compile(model.forward, backend)
    ids = torch.randint(0, 128, (2, 6), generator=torch.Generator().manual_seed(4))
    from transformers import StaticCache  # noqa: PLC0415

    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=4, do_sample=False,
                             past_key_values=StaticCache(config=model.config, max_cache_len=32),
                             output_scores=True, return_dict_in_generate=True, pad_token_id=0)
    return [("sequences", out.sequences.float())] + [(f"score{i}", s) for i, s in enumerate(out.scores)]


def mode_determinism_with_regions(backend: str) -> Named:
    """torch.use_deterministic_algorithms(True), regions on norms and MLPs: outside regions the
    result must not change; the regions compile deterministically (compared against
    themselves: two fresh compiles give the same bits)."""
    model = _model(LLAMA).train()
    args, kwargs = _inputs(LLAMA)
    torch.use_deterministic_algorithms(True)
    try:
        if backend == "aot_eager":
            out = _compile(model, backend)(*args, labels=kwargs["input_ids"], **kwargs)
            return [("loss", out.loss.detach())] + _backward_and_collect(model, out.loss)
        with lite_compiler.module_regions(model, CASES[LLAMA].rules()):
            runs = []
            for _ in range(2):
                torch._dynamo.reset()
                copy_ = copy.deepcopy(model)
                out = _compile(copy_, backend)(*args, labels=kwargs["input_ids"], **kwargs)
                runs.append([("loss", out.loss.detach())] + _backward_and_collect(copy_, out.loss))
        first, second = runs
        verdict = compare(first, second)
        if not verdict["bitwise"]:
            raise AssertionError(f"regions under determinism differ between compiles: {verdict['detail']}")
        row = [e for e in lite_compiler.last_ledger() if e.name == "config deterministic"]
        if not (row and row[0].allowed):
            raise AssertionError("regions were not compiled with the user's deterministic=True")
        return first
    finally:
        torch.use_deterministic_algorithms(False)


# Modes whose regions make the comparison with aot_eager meaningless compare lite with itself.
SELF_COMPARED = {"determinism_with_regions"}
MODES: dict[str, Callable[[str], Named]] = {
    name.removeprefix("mode_"): fn for name, fn in globals().items() if name.startswith("mode_")}
# The cheap ones (seconds on 2 cores) run in CI; the rest are @pytest.mark.slow.
FAST = {"no_grad_eval", "channels_last_train", "dynamic_batch_mark_dynamic", "graph_breaks"}


def run_mode(name: str) -> dict[str, Any]:
    """The verdict of one mode: lite against aot_eager (or against itself, SELF_COMPARED)."""
    results = {}
    for backend in ("aot_eager", "lite"):
        torch._dynamo.reset()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with contextlib.redirect_stdout(sys.stderr):
                results[backend] = MODES[name](backend)
    if name in SELF_COMPARED:
        return {"bitwise": True, "detail": "lite against itself", "tensors": len(results["lite"])}
    verdict = compare(results["aot_eager"], results["lite"])
    verdict["tensors"] = len(results["lite"])
    return verdict


def main(argv: list[str]) -> int:
    names = [n for n in MODES if not argv or any(a in n for a in argv)]
    failed = 0
    for name in names:
        try:
            verdict = run_mode(name)
            text = "bitwise" if verdict["bitwise"] else f"DIFFERS: {verdict['detail']}"
            text += f" ({verdict['tensors']} tensors)"
        except Exception as exc:  # noqa: BLE001 (reported: the point of the run)
            text = f"ERROR: {type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"
        failed += not text.startswith("bitwise")
        print(f"{name}: {text}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
