#!/usr/bin/env bash
# The GPU measurements of one 15-minute GPU window, on a bare GPU machine (torch + triton +
# transformers; the other runtime dependencies come as wheels in .whl/, see benchmarks/README.md):
# the default call of at most 8.5 minutes, the most important figures first, then an optional
# second call (--extra) of at most 3 minutes. It measures a committed tree: first it records the
# commit and refuses a dirty working tree (exit 2) unless --allow-dirty, which flags every result
# "dirty": true with the `git status --porcelain` text. Each step runs under its own time limit and
# writes JSON under $OUT, so a step that runs out of time or fails still leaves the others'
# results. Last, the steps are merged into one file (device, versions, clocks, commit, dirty flag,
# target table): $OUT/gpu_suite.json, copied to benchmarks/results/<date>_<machine>/gpu_suite-<HHMM>.json.
#
#   bash benchmarks/gpu_suite.sh                 # call 1, <= 510 s: GPU tests, attention vs Flex, training at 4K, promoter scan
#   bash benchmarks/gpu_suite.sh --extra         # call 2, <= 180 s: dense cuDNN and HF baselines, padding-mask kernels
#   bash benchmarks/gpu_suite.sh --only env,attention_variants   # these steps only, one call of <= 510 s
#   bash benchmarks/gpu_suite.sh --allow-dirty   # uncommitted changes: results flagged dirty
#   bash benchmarks/gpu_suite.sh --dry-run       # any machine, CPU: both budgets, then every step in smoke mode (~2 min)
#   bash benchmarks/gpu_suite.sh --check-budget  # both budgets only
#
# The budget: a call's step limits (each plus KILL_AFTER_S, the grace before SIGKILL) and
# OVERHEAD_S (wheels, tree check, merge) must add up to at most the seconds the call allows, or the
# suite stops before anything runs with one error: line (exit 2). LIMIT_<step>=SECONDS overrides a
# step's limit (e.g. LIMIT_promoter_scan=420 PROMOTER_MBP=200 --only env,promoter_scan: the 200-Mbp scan).
# $OUT defaults to outputs/gpu_suite/<date>-<HHMM>/ (git-ignored, never counted as dirty); $PYTHON to python3.
set -uo pipefail
cd "$(dirname "$0")/.."

# Every step in run order, with its time limit in seconds. The default call: the GPU-only tests;
# attention, ours against Flex at 4K/16K/64K (eager, CUDA graph, host time per call); training
# tokens/s and MFU at 4K (one row now, room for a second, e.g. a hybrid encoder); the promoter scan.
# The --extra call: ours against dense cuDNN and HF; the padding-mask kernels. Later calls, by
# --only: equal tokens per step and Flex max-autotune (attention_more), every training row
# (train_all), the kernel variants (attention_variants).
LIMITS=(env:15 tests:100 attention:175 train:100 promoter_scan:60
        attention_dense:80 attention_mask:25 attention_more:240 train_all:170 attention_variants:290)
PROFILE_DEFAULT="env tests attention train promoter_scan"
PROFILE_EXTRA="env attention_dense attention_mask"
CALL_S=510 EXTRA_CALL_S=180 OVERHEAD_S=20 KILL_AFTER_S=5
STEPS_ALL=""
for entry in "${LIMITS[@]}"; do STEPS_ALL+="${STEPS_ALL:+ }${entry%%:*}"; done

DRY_RUN=0 ALLOW_DIRTY=0 EXTRA=0 CHECK_ONLY=0 ONLY=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --dry-run) DRY_RUN=1; ALLOW_DIRTY=1 ;;
        --allow-dirty) ALLOW_DIRTY=1 ;;
        --extra) EXTRA=1 ;;
        --check-budget) CHECK_ONLY=1 ;;
        --only) [[ -n "${2:-}" ]] || { echo "error: --only needs STEP[,STEP...]" >&2; exit 2; }
                ONLY="${2//,/ }"; shift ;;
        -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
        *) echo "error: unknown argument '$1' (known: --dry-run, --allow-dirty, --extra, --only STEP[,STEP...]," \
                "--check-budget)" >&2; exit 2 ;;
    esac
    shift
done
for name in $ONLY; do
    if [[ " $STEPS_ALL " != *" $name "* ]]; then
        echo "error: unknown step '$name' in --only (steps: $STEPS_ALL)" >&2; exit 2
    fi
done

limit_of() {  # the limit of step $1: LIMIT_<step> if set, else its entry in LIMITS
    local entry override="LIMIT_$1"
    if [[ -n "${!override:-}" ]]; then echo "${!override}"; return; fi
    for entry in "${LIMITS[@]}"; do [[ ${entry%%:*} == "$1" ]] && echo "${entry#*:}"; done
}

# check_budget CALL SECONDS STEP...: the steps' limits, KILL_AFTER_S each and OVERHEAD_S within
# SECONDS; the sum in $BUDGET, or one error: line
check_budget() {
    local call=$1 allowed=$2 total=$OVERHEAD_S terms="" name limit
    shift 2
    for name in "$@"; do
        limit=$(limit_of "$name")
        [[ "$limit" =~ ^[0-9]+$ ]] || { echo "error: the limit of step $name is '$limit', not seconds" >&2; return 1; }
        total=$((total + limit + KILL_AFTER_S))
        terms+="${terms:+ + }$name $limit"
    done
    local sum="$terms, + ${KILL_AFTER_S} s grace per step + ${OVERHEAD_S} s wheels, tree check and merge = ${total} s"
    if (( total > allowed )); then
        echo "error: the $call's step limits add up to more than the call allows: $sum > ${allowed} s." \
             "Lower a limit (LIMIT_<step>) or move a step to another call." >&2
        return 1
    fi
    BUDGET="budget of the $call: $sum <= ${allowed} s"
}

if [[ $DRY_RUN == 1 || $CHECK_ONLY == 1 ]]; then  # both calls of a window, whatever runs now
    ok=0
    check_budget "default call" "$CALL_S" $PROFILE_DEFAULT && echo "$BUDGET" >&2 || ok=1
    check_budget "--extra call" "$EXTRA_CALL_S" $PROFILE_EXTRA && echo "$BUDGET" >&2 || ok=1
    if [[ $ok != 0 || $CHECK_ONLY == 1 ]]; then exit $((ok * 2)); fi
fi
if [[ -n "$ONLY" ]]; then SELECTED=$ONLY PROFILE=only ALLOWED=$CALL_S
elif [[ $EXTRA == 1 ]]; then SELECTED=$PROFILE_EXTRA PROFILE=extra ALLOWED=$EXTRA_CALL_S
elif [[ $DRY_RUN == 1 ]]; then SELECTED=$STEPS_ALL PROFILE=dry-run ALLOWED=$CALL_S
else SELECTED=$PROFILE_DEFAULT PROFILE=default ALLOWED=$CALL_S
fi
if [[ $DRY_RUN == 0 ]]; then
    check_budget "$( [[ $PROFILE == default ]] && echo "default" || echo "--$PROFILE") call" "$ALLOWED" $SELECTED || exit 2
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
if [[ $DRY_RUN == 0 ]]; then echo "$BUDGET" >&2; fi
mkdir -p "$OUT"
: > "$OUT/steps.tsv"

# The dependencies the image lacks. Not in a dry run: the wheels are for the GPU image's Python 3.12.
if [[ $DRY_RUN == 0 ]] && compgen -G ".whl/*.whl" > /dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl \
        && export PYTHONPATH=/tmp/site:$PWD
else
    export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi

# step NAME COMMAND...: run COMMAND under `timeout` (the step's limit), its output in $OUT/NAME.log,
# and record name, exit status (124: timed out), seconds and limit in $OUT/steps.tsv. Only the
# selected steps run.
step() {
    local name=$1 limit
    shift
    if [[ " $SELECTED " != *" $name "* ]]; then return; fi
    limit=$(limit_of "$name")
    local start=$SECONDS
    echo "== $name (limit ${limit}s)" >&2
    timeout --kill-after="$KILL_AFTER_S" "$limit" "$@" > "$OUT/$name.log" 2>&1
    local rc=$?
    printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - start))" "$limit" >> "$OUT/steps.tsv"
    tail -n 3 "$OUT/$name.log" >&2
}

VARIANTS=(preload-fused preload-fused-atomic-dq preload-fused-atomic-dq-w8 preload-dkdv-w8)
if [[ $DRY_RUN == 1 ]]; then
    DRY=(--dry-run)
    SIZES=(--smoke --block 16 --head-dim 16)  # attention.py: 12 blocks, 1 head, fp32, the interpreter
    TRAIN_SMOKE=(--smoke) TRAIN_4K=()
    TESTS=(tests/attention/test_triton_gpu.py)   # all skipped without CUDA: checks the step, fast
    PROMOTER=(--smoke --genome-mbp 0.05)
    VARIANTS=("${VARIANTS[@]:0:2}")
else
    DRY=()
    SIZES=(--seq 4096 16384 65536)
    TRAIN_SMOKE=() TRAIN_4K=(--scaling-seq 4096)
    # In order of need (a step cut by its limit keeps the earlier results in tests.log): the
    # kernels on the GPU, direct launches, CUDA-graph capture, the no-padding path, compiled layers,
    # then the compiled kernels against the dense reference (bf16 included).
    TESTS=(tests/attention/test_triton_gpu.py tests/attention/test_triton_launch.py tests/model/test_cuda_graphs.py
           tests/model/test_no_padding_path.py tests/model/test_compiled_layers.py tests/attention/test_triton_kernels.py
           tests/attention/test_encoder_backends.py tests/attention/test_triton_schedule.py)
    PROMOTER=(--genome-mbp "${PROMOTER_MBP:-20}")
    # compiling the kernels dominates the tests: 8 workers when pytest-xdist is there
    if "$PY" -c "import xdist" 2> /dev/null; then TESTS=(-n 8 "${TESTS[@]}"); fi
fi
ATTENTION=("$PY" benchmarks/attention.py "${SIZES[@]}")
TRAIN=("$PY" benchmarks/train_throughput.py "${TRAIN_SMOKE[@]}")

# the machine: clocks, power limit, versions, missing dependencies
step env "$PY" -m benchmarks.common.gpu_suite_report env "$OUT/env.json" "${DRY[@]}"
# the GPU-only tests, one line per test in tests.log (read back even if the step times out)
step tests "$PY" -m pytest -v -p no:cacheprovider "${TESTS[@]}"
# ours against Flex at B=1: gated, 3 x 50 timed calls, eager, CUDA-graph replay and host time per call
step attention "${ATTENTION[@]}" --tokens 0 --methods triton flex --flex-modes default --budget-s 150 \
    --out "$OUT/attention.json"
# BigBird-base MLM training at 4K x 16: tokens/s and MFU (a row not started by 55 s is skipped)
step train "${TRAIN[@]}" "${TRAIN_4K[@]}" --batch 0 --checkpoint-seq --no-compile --no-hf --budget-s 55 --out "$OUT/train.json"
# promoter scanning throughput, end to end, on 20 Mbp (PROMOTER_MBP)
step promoter_scan "$PY" benchmarks/promoter_scan.py "${PROMOTER[@]}" --out "$OUT/promoter_scan.json"
# --extra: ours against dense cuDNN (4K/16K/64K) and HF BigBird attention (4K), in one file
step attention_dense "${ATTENTION[@]}" --tokens 0 --methods triton sdpa hf --sdpa-backends cudnn --budget-s 65 \
    --out "$OUT/attention_dense.json"
# --extra: ours with the all-True padding mask the encoder passes (the HAS_KPM kernels), eager
step attention_mask "${ATTENTION[@]}" --tokens 0 --methods triton --key-padding-mask --no-graph \
    --out "$OUT/attention_mask.json"
# later: equal tokens per step (16 x 4K, 4 x 16K) for ours and Flex, then Flex max-autotune at 4K and 16K
step attention_more "${ATTENTION[@]}" --tokens 65536 --methods triton flex --autotune-seq 4096 16384 \
    --budget-s 200 --out "$OUT/attention_more.json"
# later: every training row (equal tokens at 4K/16K/64K, compiled layers, variants, memory, HF)
step train_all "${TRAIN[@]}" --budget-s 130 --out "$OUT/train_all.json"
# later: our backward candidates beside the default and cuDNN, each gated
step attention_variants "${ATTENTION[@]}" --tokens 0 --methods triton sdpa --sdpa-backends cudnn \
    --variants "${VARIANTS[@]}" --budget-s 240 --out "$OUT/attention_variants.json"

"$PY" -m benchmarks.common.gpu_suite_report merge "$OUT" --stamp "$STAMP" "${DRY[@]}" --profile "$PROFILE" \
    --budget-s "$ALLOWED" --elapsed-s "$SECONDS"
