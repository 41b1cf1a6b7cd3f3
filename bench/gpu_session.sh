#!/usr/bin/env bash
# Everything issue #13 measures on the GPU, in one device call of under 10 minutes, on a machine
# with two GPUs: llama (then the flex-attention example) on GPU 0, resnet18 on GPU 1, the guard
# tests on torch 2.11 beside them. Results and logs go to $OUT (8 files at most come back).
#   bash bench/gpu_session.sh            (GPU_BENCH_COMMIT names the code; OUT the result folder)
# backend="lite" is an entry point: the package must be installed (or its dist-info on the path).
set -u
OUT=${OUT:-/tmp/gpu_session}
mkdir -p "$OUT"
export CUBLAS_WORKSPACE_CONFIG=:4096:8 PYTHONUNBUFFERED=1
# Two benchmark streams share the host's cores: cap each process's Inductor compile workers.
export TORCHINDUCTOR_COMPILE_THREADS=${TORCHINDUCTOR_COMPILE_THREADS:-12}
LLAMA_VARIANTS=${LLAMA_VARIANTS:-inductor,aot_eager,ours_cudagraphs,ours_layers_cudagraphs,ours,ours_regions_cudagraphs,cudagraphs_backend,upstream_lite,eager,ours_layers,ours_regions,ours_model_cudagraphs}
RESNET_VARIANTS=${RESNET_VARIANTS:-inductor,aot_eager,ours_cudagraphs,ours_layers_cudagraphs,ours,cudagraphs_backend,eager,upstream_lite,ours_layers,ours_model_cudagraphs}
{ nvidia-smi -L; nproc; python3 -c "import torch, transformers, torchvision, triton; print(torch.__version__, transformers.__version__, torchvision.__version__, triton.__version__, torch.cuda.device_count()); print('lite' in torch._dynamo.list_backends())"; } > "$OUT/env.txt" 2>&1

# Stream 1 (GPU 0): llama. Stream 2 (GPU 1): resnet18, the flex-attention example, then the guard
# tests on this torch (last: their small CUDA graphs would disturb the timings).
( CUDA_VISIBLE_DEVICES=0 timeout 560 python3 bench/gpu_models.py --models llama --variants "$LLAMA_VARIANTS" \
    --profile --deadline 450 --json "$OUT/gpu_models_llama.json" > "$OUT/llama.log" 2>&1 ) &
( CUDA_VISIBLE_DEVICES=1 timeout 400 python3 bench/gpu_models.py --models resnet --variants "$RESNET_VARIANTS" \
    --profile --deadline 300 --json "$OUT/gpu_models_resnet.json" > "$OUT/resnet.log" 2>&1
  CUDA_VISIBLE_DEVICES=1 timeout $((500 - SECONDS)) python3 bench/gpu_flex_attention.py \
    --timeout 90 --json "$OUT/gpu_flex_attention.json" > "$OUT/flex.log" 2>&1
  # TESTS_TREE: run the tests on another checkout (e.g. the working tree, when the benchmark
  # runs on a clean snapshot of a commit).
  cd "${TESTS_TREE:-.}" && PYTHONPATH="${EXTRA_SITE:+$EXTRA_SITE:}$PWD" CUDA_VISIBLE_DEVICES=1 \
    timeout $((570 - SECONDS)) python3 -m pytest -q -n 6 tests/test_guard_registry.py \
    tests/test_guard_mutations.py tests/test_guard_passes.py tests/test_cudagraphs.py tests/test_lazy_inductor.py \
    -p no:cacheprovider > "$OUT/tests.log" 2>&1; echo "pytest exit $?" >> "$OUT/tests.log" ) &
wait
echo "session done after $SECONDS s"
