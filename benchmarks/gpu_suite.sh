#!/usr/bin/env bash
# The whole GPU measurement in one call of at most 10 minutes, on a bare GPU machine
# (torch + triton + transformers; the other runtime dependencies come as wheels in .whl/, see
# benchmarks/README.md). Each step runs under its own timeout and writes JSON under $OUT, so a
# step that runs out of time or fails still leaves the others' results. Last: the steps are merged
# into one file (device, versions, clocks, commit) and a short table is printed.
#
#   bash benchmarks/gpu_suite.sh             # GPU: merged file $OUT/gpu-<date>.json, copied to benchmarks/results/
#   bash benchmarks/gpu_suite.sh --dry-run   # any machine, CPU: every step in its smoke mode (~1 min)
#
# $OUT defaults to benchmarks/results/suite-<date>/ (git-ignored content is up to you); $PYTHON to python3.
set -uo pipefail
cd "$(dirname "$0")/.."

DRY_RUN=0
if [[ "${1:-}" == "--dry-run" ]]; then DRY_RUN=1; fi
STAMP="$(date -u +%Y-%m-%d-%H%M)"
OUT="${OUT:-$PWD/benchmarks/results/suite-$STAMP}"
PY="${PYTHON:-python3}"
mkdir -p "$OUT"
: > "$OUT/steps.tsv"
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=true

# The dependencies the image lacks. Not in a dry run: the wheels are for the GPU image's Python 3.12.
if [[ $DRY_RUN == 0 ]] && compgen -G ".whl/*.whl" > /dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl \
        && export PYTHONPATH=/tmp/site:$PWD
else
    export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi

# step NAME SECONDS COMMAND...: run COMMAND under `timeout`, its output in $OUT/NAME.log, and
# record name, exit status (124: timed out) and seconds in $OUT/steps.tsv.
step() {
    local name=$1 limit=$2
    shift 2
    local start=$SECONDS
    echo "== $name (limit ${limit}s)" >&2
    timeout --kill-after=10 "$limit" "$@" > "$OUT/$name.log" 2>&1
    local rc=$?
    printf '%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - start))" >> "$OUT/steps.tsv"
    tail -n 3 "$OUT/$name.log" >&2
}

if [[ $DRY_RUN == 1 ]]; then
    DRY=(--dry-run)
    SMOKE=(--smoke)
    ATTENTION=(--smoke --block 16 --head-dim 16)
    MASK_VARIANTS=(--variants preload)
    TRAIN_VARIANTS=(--variants loop preload)
    TESTS=(tests/attention/test_triton_gpu.py)   # all skipped without CUDA: checks the step, fast
    PROMOTER=(--smoke --genome-mbp 0.05)
else
    DRY=()
    SMOKE=()
    ATTENTION=(--seq 4096 16384 65536 --tokens 0)
    MASK_VARIANTS=(--variants loop preload preload-fused)
    TRAIN_VARIANTS=(--variants loop preload preload-fused)
    # GPU-only checks first, then the compiled kernels against the dense reference (bf16 included)
    TESTS=(tests/attention/test_triton_gpu.py tests/attention/test_triton_kernels.py
           tests/attention/test_encoder_backends.py tests/attention/test_triton_schedule.py)
    PROMOTER=(--genome-mbp 20)
    # compiling the kernels dominates the tests: 4 workers when pytest-xdist is there
    if "$PY" -c "import xdist" 2> /dev/null; then TESTS=(-n 4 "${TESTS[@]}"); fi
fi

# 1. the machine: clocks, power limit, versions, missing dependencies
step env 15 "$PY" benchmarks/gpu_suite_report.py env "$OUT/env.json" "${DRY[@]}"
# 2. the tests, one line per test in tests.log (read back even if the step times out)
step tests 120 "$PY" -m pytest -v -p no:cacheprovider "${TESTS[@]}"
# 3. attention at 4K, 16K, 64K: every kernel variant, FlexAttention, dense SDPA, HF BigBird at 4K
step attention 300 "$PY" benchmarks/attention.py "${ATTENTION[@]}" --out "$OUT/attention.json"
# 4. ours again with the all-True padding mask the encoder passes (the HAS_KPM kernels)
step attention_mask 45 "$PY" benchmarks/attention.py "${ATTENTION[@]}" --key-padding-mask --methods triton \
    "${MASK_VARIANTS[@]}" --out "$OUT/attention_mask.json"
# 5. host overhead: eager step against its CUDA-graph replay, ours and Flex (GPU time; no smoke mode)
if [[ $DRY_RUN == 0 ]]; then
    step graph_overhead 45 "$PY" benchmarks/graph_overhead.py --out "$OUT/graph_overhead.json"
fi
# 6. BigBird-base MLM training: ours vs transformers at 4K, ours at 16K and 64K (+ checkpoint_layers)
step train 95 "$PY" benchmarks/train_throughput.py "${SMOKE[@]}" "${TRAIN_VARIANTS[@]}" --out "$OUT/train.json"
# 7. promoter scanning throughput, end to end
step promoter_scan 50 "$PY" benchmarks/promoter_scan.py "${PROMOTER[@]}" --out "$OUT/promoter_scan.json"

"$PY" benchmarks/gpu_suite_report.py merge "$OUT" --stamp "$STAMP" "${DRY[@]}"
