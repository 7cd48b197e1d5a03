#!/usr/bin/env bash
# Re-measure issue 28's table on one GPU, in about ten minutes: judgecp bench capture at two sizes of
# random judge (built once per size, in bfloat16, straight on the GPU; nothing written but kilobytes).
#
#   scripts/bench_capture_gpu.sh [OUTPUT]          # default: bench-capture-gpu-<UTC time>.txt
#
# Sizes (the issue's): a 1.6B LLaVA (Llama hidden 4096, 8 layers, 32,000-token vocabulary), 16 documents,
# 64 generated tokens, batch 1, 8 and auto; a 4.3B one (24 layers), 8 documents, 32 tokens, batch 1 and 8.
# Each size runs under a 5-minute limit; the output file starts with the card, the driver and the versions,
# so the figures can go to docs/lm_eval.md with the card, model size, dtype and date.
#
# SMOKE=1 runs the same steps with tiny models on the CPU (a minute or two), to check the script itself.
set -euo pipefail

OUTPUT=${1:-bench-capture-gpu-$(date -u +%Y%m%dT%H%MZ).txt}
JUDGECP=${JUDGECP:-judgecp}
PYTHON=${PYTHON:-python}
if [[ "${SMOKE:-0}" == "1" ]]; then
  DEVICE=(--device cpu --dtype float32)
  LARGE=(--hidden 64 --layers 2 --vocab 2000)
  LARGER=(--hidden 64 --layers 4 --vocab 2000)
else
  DEVICE=(--device cuda --dtype bfloat16)
  LARGE=(--hidden 4096 --layers 8 --vocab 32000)
  LARGER=(--hidden 4096 --layers 24 --vocab 32000)
fi

{
  echo "# judgecp bench capture, $(date -u +%Y-%m-%dT%H:%MZ), $(hostname)"
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  fi
  "$PYTHON" -c 'from importlib.metadata import version as v
print(", ".join(f"{name} {v(name)}" for name in ("lm_eval", "transformers", "torch", "judgecp")))'
} | tee "$OUTPUT"

run() {
  echo | tee -a "$OUTPUT"
  echo "\$ judgecp bench capture $*" | tee -a "$OUTPUT"
  timeout 300 "$JUDGECP" bench capture "${DEVICE[@]}" "$@" | tee -a "$OUTPUT"
}

run "${LARGE[@]}" --documents 16 --gen-tokens 64 --repeats 3 --batch-size 1,8,auto
run "${LARGER[@]}" --documents 8 --gen-tokens 32 --repeats 3 --batch-size 1,8

echo | tee -a "$OUTPUT"
echo "written: $OUTPUT" >&2
