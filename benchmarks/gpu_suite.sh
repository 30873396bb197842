#!/usr/bin/env bash
# The whole GPU measurement in one call of at most 10 minutes, on a bare GPU machine
# (torch + triton + transformers; the other runtime dependencies come as wheels in .whl/, see
# benchmarks/README.md). It measures a committed tree: first it records the commit and refuses a
# dirty working tree (exit 2) unless --allow-dirty, which flags every result "dirty": true with
# the `git status --porcelain` text. Each step runs under its own timeout and writes JSON under
# $OUT, so a step that runs out of time or fails still leaves the others' results. Last: the steps
# are merged into one file (device, versions, clocks, commit, dirty flag, target table).
#
#   bash benchmarks/gpu_suite.sh                 # GPU: merged file $OUT/gpu_suite.json, copied to
#                                                # benchmarks/results/<date>_<machine>/gpu_suite-<HHMM>.json
#   bash benchmarks/gpu_suite.sh --allow-dirty   # GPU, uncommitted changes: results flagged dirty
#   bash benchmarks/gpu_suite.sh --dry-run       # any machine, CPU: every step in its smoke mode (~1 min; allows dirty)
#   bash benchmarks/gpu_suite.sh --only env,attention   # some steps only (comma-separated names)
#   bash benchmarks/gpu_suite.sh --only env,attention_variants   # our kernel variants side by side
#                                                # (a call of its own: not in the default run)
#
# $OUT defaults to outputs/gpu_suite/<date>-<HHMM>/ (git-ignored, never counted as dirty); $PYTHON to python3.
set -uo pipefail
cd "$(dirname "$0")/.."

STEPS_ALL="env tests attention attention_mask train promoter_scan attention_variants"
STEPS_OPTIONAL=" attention_variants "  # run when named in --only (and in a dry run), else skipped
DRY_RUN=0
ALLOW_DIRTY=0
ONLY=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --dry-run) DRY_RUN=1; ALLOW_DIRTY=1 ;;
        --allow-dirty) ALLOW_DIRTY=1 ;;
        --only) [[ -n "${2:-}" ]] || { echo "error: --only needs STEP[,STEP...]" >&2; exit 2; }
                ONLY=",$2,"; shift ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        *) echo "error: unknown argument '$1' (known: --dry-run, --allow-dirty, --only STEP[,STEP...])" >&2; exit 2 ;;
    esac
    shift
done
if [[ -n "$ONLY" ]]; then
    for name in ${ONLY//,/ }; do
        if [[ " $STEPS_ALL " != *" $name "* ]]; then
            echo "error: unknown step '$name' in --only (steps: $STEPS_ALL)" >&2; exit 2
        fi
    done
fi
STAMP="$(date -u +%Y-%m-%d-%H%M)"
OUT="${OUT:-$PWD/outputs/gpu_suite/$STAMP}"
PY="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=true

# 0. the tree: commit, dirty flag and `git status --porcelain`, once, before any step writes a file
TREE=(check "$OUT/git.json" --ignore "$OUT")
if [[ $ALLOW_DIRTY == 1 ]]; then TREE+=(--allow-dirty); fi
"$PY" -m benchmarks.common.provenance "${TREE[@]}" || exit $?
export SUITE_GIT_STATE="$OUT/git.json"
mkdir -p "$OUT"
: > "$OUT/steps.tsv"

# The dependencies the image lacks. Not in a dry run: the wheels are for the GPU image's Python 3.12.
if [[ $DRY_RUN == 0 ]] && compgen -G ".whl/*.whl" > /dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl \
        && export PYTHONPATH=/tmp/site:$PWD
else
    export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi

# step NAME SECONDS COMMAND...: run COMMAND under `timeout`, its output in $OUT/NAME.log, and
# record name, exit status (124: timed out) and seconds in $OUT/steps.tsv. Skipped outside --only.
step() {
    local name=$1 limit=$2
    shift 2
    if [[ -n "$ONLY" && "$ONLY" != *",$name,"* ]]; then return; fi
    if [[ -z "$ONLY" && $DRY_RUN == 0 && "$STEPS_OPTIONAL" == *" $name "* ]]; then return; fi
    local start=$SECONDS
    echo "== $name (limit ${limit}s)" >&2
    timeout --kill-after=10 "$limit" "$@" > "$OUT/$name.log" 2>&1
    local rc=$?
    printf '%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - start))" >> "$OUT/steps.tsv"
    tail -n 3 "$OUT/$name.log" >&2
}

if [[ $DRY_RUN == 1 ]]; then
    DRY=(--dry-run)
    TINY=(--smoke --block 16 --head-dim 16)
    ATTENTION=("${TINY[@]}")
    MASK=("${TINY[@]}")
    VARIANTS=("${TINY[@]}" --methods triton --variants preload-fused preload-fused-atomic-dq)
    TRAIN=(--smoke)
    TESTS=(tests/attention/test_triton_gpu.py)   # all skipped without CUDA: checks the step, fast
    PROMOTER=(--smoke --genome-mbp 0.05)
else
    DRY=()
    # B=1 at 4K/16K/64K with every baseline, then equal tokens per step (16 x 4K, 4 x 16K; 64K x 1
    # is the B=1 row) for ours and Flex; Flex max-autotune last, at 4K and 16K; dense: cuDNN only
    ATTENTION=(--seq 4096 16384 65536 --tokens 65536 --tokens-methods triton flex --sdpa-backends cudnn
               --autotune-seq 4096 16384 --budget-s 180)
    MASK=(--seq 4096 16384 65536 --tokens 0 --no-graph)
    # the backward candidates against the default, with cuDNN dense in the same file
    VARIANTS=(--seq 4096 16384 65536 --tokens 0 --methods triton sdpa --sdpa-backends cudnn
              --variants preload-fused preload-fused-atomic-dq preload-fused-atomic-dq-w8 preload-dkdv-w8 --budget-s 240)
    TRAIN=(--budget-s 130)
    # GPU-only checks first, then the compiled kernels against the dense reference (bf16 included)
    # In order of need (a step cut by its limit keeps the earlier results in tests.log): the
    # kernels on the GPU, direct launches, CUDA-graph capture, the no-padding path, compiled layers.
    TESTS=(tests/attention/test_triton_gpu.py tests/attention/test_triton_launch.py tests/model/test_cuda_graphs.py
           tests/model/test_no_padding_path.py tests/model/test_compiled_layers.py tests/attention/test_triton_kernels.py
           tests/attention/test_encoder_backends.py tests/attention/test_triton_schedule.py)
    # 20 Mbp fits this call; the 200-Mbp figure is a call of its own:
    #   PROMOTER_MBP=200 PROMOTER_LIMIT=420 bash benchmarks/gpu_suite.sh --only env,promoter_scan
    PROMOTER=(--genome-mbp "${PROMOTER_MBP:-20}")
    # compiling the kernels dominates the tests: 8 workers when pytest-xdist is there
    if "$PY" -c "import xdist" 2> /dev/null; then TESTS=(-n 8 "${TESTS[@]}"); fi
fi

# Step limits add up to 555 s (+ wheels and merge: under the 10-minute call).
# 1. the machine: clocks, power limit, versions, missing dependencies
step env 15 "$PY" -m benchmarks.common.gpu_suite_report env "$OUT/env.json" "${DRY[@]}"
# 2. the tests, one line per test in tests.log (read back even if the step times out)
step tests 100 "$PY" -m pytest -v -p no:cacheprovider "${TESTS[@]}"
# 3. attention: gated, 3 x 50 timed calls, eager and CUDA-graph replay, ours vs Flex, cuDNN, HF
step attention 195 "$PY" benchmarks/attention.py "${ATTENTION[@]}" --out "$OUT/attention.json"
# 4. ours again with the all-True padding mask the encoder passes (the HAS_KPM kernels)
step attention_mask 25 "$PY" benchmarks/attention.py "${MASK[@]}" --key-padding-mask --methods triton \
    --out "$OUT/attention_mask.json"
# 5. BigBird-base MLM training: equal tokens per step at 4K/16K/64K (MFU), ours vs transformers at 4K x 4
step train 170 "$PY" benchmarks/train_throughput.py "${TRAIN[@]}" --out "$OUT/train.json"
# 6. promoter scanning throughput, end to end
step promoter_scan "${PROMOTER_LIMIT:-50}" "$PY" benchmarks/promoter_scan.py "${PROMOTER[@]}" --out "$OUT/promoter_scan.json"
# 7. (--only attention_variants, or a dry run) our kernel variants, each gated, with cuDNN
step attention_variants 290 "$PY" benchmarks/attention.py "${VARIANTS[@]}" --out "$OUT/attention_variants.json"

"$PY" -m benchmarks.common.gpu_suite_report merge "$OUT" --stamp "$STAMP" "${DRY[@]}"
