#!/usr/bin/env bash
# Everything issue #13 measures on the GPU in one device call of under 10 minutes: llama, resnet18,
# the flex-attention example, the guard tests on this torch. Two GPUs: llama on GPU 0 beside the
# rest on GPU 1. One GPU: one after the other, each part given a share of the time (a part that
# runs out of time records what it did not run). Results and logs go to $OUT (8 files come back).
#   GPU_BENCH_COMMIT=<commit> OUT=<folder> bash bench/gpu_session.sh
#   PARTS="breaks models flex tests" LLAMA_VARIANTS=... RESNET_VARIANTS=... choose what runs;
#   ROUNDS=N runs every variant N times interleaved (the rows report the median round)
#   (MODELS="llama resnet" which models).
# backend="lite" is an entry point: the package must be installed (or its dist-info on the path).
set -u
OUT=${OUT:-/tmp/gpu_session}
mkdir -p "$OUT"
export CUBLAS_WORKSPACE_CONFIG=:4096:8 PYTHONUNBUFFERED=1
PARTS=${PARTS:-"breaks models flex tests"}
LLAMA_VARIANTS=${LLAMA_VARIANTS:-inductor,aot_eager,ours_cudagraphs,ours_fused_cudagraphs,ours_proven_fused_cudagraphs,ours_layers_cudagraphs,ours_layers_fused_cudagraphs,ours,cudagraphs_backend,ours_model_cudagraphs,upstream_lite,eager,ours_fused,ours_regions_cudagraphs}
RESNET_VARIANTS=${RESNET_VARIANTS:-inductor,aot_eager,ours_cudagraphs,ours_fused_cudagraphs,ours_layers_cudagraphs,ours_model_cudagraphs,ours,ours_fused,cudagraphs_backend,eager,upstream_lite}
GPUS=$(python3 -c "import torch; print(torch.cuda.device_count())")
{ nvidia-smi -L; nproc; python3 -c "import torch, transformers, torchvision, triton; print(torch.__version__, transformers.__version__, torchvision.__version__, triton.__version__, torch.cuda.device_count()); print('lite backend:', 'lite' in torch._dynamo.list_backends())"; } > "$OUT/env.txt" 2>&1

left() { echo $(( $1 - SECONDS )); }  # seconds from now to the session's second $1

models() {  # $1 model, $2 variants, $3 GPU, $4 last second to start a variant, $5 last second
  [ "$(left "$4")" -gt 20 ] || { echo "$1: no time left" >> "$OUT/$1.log"; return; }
  CUDA_VISIBLE_DEVICES=$3 timeout "$(left "$5")" python3 bench/gpu_models.py --models "$1" --variants "$2" \
    --profile --rounds "${ROUNDS:-1}" --deadline "$(left "$4")" --json "$OUT/gpu_models_$1.json" > "$OUT/$1.log" 2>&1
}
flex() {  # $1 GPU, $2 last second
  [ "$(left "$2")" -gt 30 ] || return
  [[ " $PARTS " == *" flex "* ]] || return
  CUDA_VISIBLE_DEVICES=$1 timeout "$(left "$2")" python3 bench/gpu_flex_attention.py --timeout 60 \
    --json "$OUT/gpu_flex_attention.json" > "$OUT/flex.log" 2>&1
}
tests() {  # $1 GPU, $2 last second. TESTS_TREE: another checkout (the working tree, when the
  # benchmark runs on a clean snapshot of a commit); EXTRA_SITE: what that tree needs on the path.
  [ "$(left "$2")" -gt 30 ] || return
  [[ " $PARTS " == *" tests "* ]] || return
  ( cd "${TESTS_TREE:-.}" && PYTHONPATH="${EXTRA_SITE:+$EXTRA_SITE:}$PWD${PYTHONPATH:+:$PYTHONPATH}" CUDA_VISIBLE_DEVICES=$1 \
    timeout "$(left "$2")" python3 -m pytest -q -n 8 -m gpu --continue-on-collection-errors tests/ -p no:cacheprovider \
    > "$OUT/tests.log" 2>&1; echo "pytest exit $?" >> "$OUT/tests.log" )  # -m gpu: every test that skips without a GPU
}
graph_breaks() {  # $1 GPU, $2 last second: does module_regions break the Dynamo graph here?
  [[ " $PARTS " == *" breaks "* ]] || return
  CUDA_VISIBLE_DEVICES=$1 timeout "$(left "$2")" python3 bench/gpu_graph_breaks.py \
    --json "$OUT/gpu_graph_breaks.json" > "$OUT/breaks.log" 2>&1
}
proof_cost() {  # $1 GPU, $2 last second: what the bitwise-fusion signature proofs cost here
  [ "$(left "$2")" -gt 25 ] || return
  [[ " $PARTS " == *" tests "* ]] || return
  CUDA_VISIBLE_DEVICES=$1 timeout "$(left "$2")" python3 bench/bitwise_proof_cost.py --device cuda \
    --out "$OUT/bitwise_proof_cost.json" > "$OUT/proof_cost.log" 2>&1
}
run_models=$([[ " $PARTS " == *" models "* ]] && echo 1 || echo 0)
if [ "$GPUS" -ge 2 ]; then
  # GPU 0: llama. GPU 1: the Dynamo graph-break check and flex (short), resnet18, then the tests
  # (last: their small CUDA graphs would disturb the timings).
  ( [ "$run_models" = 1 ] && models llama "$LLAMA_VARIANTS" 0 ${LLAMA_START_BY:-470} ${LLAMA_END_BY:-545}
    proof_cost 0 ${PROOF_COST_END_BY:-580} ) &
  ( graph_breaks 1 ${BREAKS_END_BY:-45}; flex 1 ${FLEX_END_BY:-215}
    [ "$run_models" = 1 ] && models resnet "$RESNET_VARIANTS" 1 ${RESNET_START_BY:-420} ${RESNET_END_BY:-470}
    tests 1 ${TESTS_END_BY:-575} ) &
  wait
else
  graph_breaks 0 ${BREAKS_END_BY:-60}
  if [ "$run_models" = 1 ]; then
    [[ " ${MODELS:-llama resnet} " == *" llama "* ]] && \
      models llama "$LLAMA_VARIANTS" 0 ${LLAMA_START_BY:-250} ${LLAMA_END_BY:-330}
    [[ " ${MODELS:-llama resnet} " == *" resnet "* ]] && \
      models resnet "$RESNET_VARIANTS" 0 ${RESNET_START_BY:-420} ${RESNET_END_BY:-470}
  fi
  flex 0 ${FLEX_END_BY:-565}
  tests 0 570
fi
echo "session done after $SECONDS s ($GPUS GPUs)"
