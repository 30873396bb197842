#!/usr/bin/env bash
# One call of experiment=pretrain_gpu (conf/experiment/pretrain_gpu.yaml) on a GPU machine that
# allows at most 10 minutes a command: start the run, or resume it, in ONE run directory; stop
# cleanly before the call's time is up; say where the run stands; write its learning curve.
# Make the same call again until it says "finished" (docs/pretraining.md, "One GPU in 10-minute calls").
#
#   bash benchmarks/pretrain_gpu.sh [OVERRIDES...]    # the same command (and overrides) every call
#
# - Start or resume: once the run directory holds checkpoints/last.ckpt or an hpc_ckpt_<n>.ckpt,
#   the trainer gets ckpt_path=last (the newer of the two: step, optimizer, LR schedule, data
#   position and RNG states as saved).
# - The stop: `timeout --foreground -s TERM` sends SIGTERM to the trainer alone, once the call's
#   budget is spent; the trainer saves hpc_ckpt_<n>.ckpt at the next step boundary and exits 75.
#   --foreground keeps the signal off the DataLoader workers: a worker killed by it would end the
#   trainer (PyTorch's SIGCHLD check) before it could save. Not trainer.max_time: Lightning keeps
#   the Timer's elapsed time in the checkpoint, so a per-call limit would stop every resumed call
#   at its first step.
# - A finished run (summary.json newer than every checkpoint) is not trained again: the call reports.
# - Last lines: the call's exit, steps and tokens/s, the step reached, the latest and best val
#   bits/base and the k-mer baselines on the same bases (benchmarks/pretrain_curve.py).
#
# Environment (defaults):
#   RUN_DIR=outputs/pretrain_gpu/run   the run directory (git-ignored; it lives as long as the machine)
#   OUT=$RUN_DIR/report                this call's report: pretrain_gpu.json (the learning curve),
#                                      pretrain_gpu.png, pretrain_gpu-call<N>.log (this call's output;
#                                      every call's stays in $RUN_DIR/calls/), and once finished
#                                      summary.json.
#   CALL_SECONDS=560                   the whole call's budget, set-up and report included (limit 600)
#   RESERVE_SECONDS=30                 kept back from the trainer for its stop and the report
#   KILL_AFTER=15                      SIGKILL this long after the SIGTERM if the trainer is still up
#   PYTHON=python3
#
# Copy the repository with .whl/ (benchmarks/fetch_wheels.sh) to the GPU machine and run the same
# command there once per call; RUN_DIR must survive from one call to the next (the run resumes from
# its checkpoints), so make the calls on one machine, or carry RUN_DIR over.
set -uo pipefail
cd "$(dirname "$0")/.."

RUN_DIR="${RUN_DIR:-outputs/pretrain_gpu/run}"
OUT="${OUT:-$RUN_DIR/report}"
CALL_SECONDS="${CALL_SECONDS:-560}"
RESERVE_SECONDS="${RESERVE_SECONDS:-30}"
KILL_AFTER="${KILL_AFTER:-15}"
PY="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
SECONDS=0

# The runtime dependencies the GPU image lacks come as wheels in .whl/ (benchmarks/fetch_wheels.sh);
# bigbird_dna.conf and bigbird_dna.sample_data exist only once the package is installed.
if [[ -d /tmp/site ]]; then export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"; fi
if ! "$PY" -c "import hydra, omegaconf, pyfaidx, Bio" 2> /dev/null && compgen -G ".whl/*.whl" > /dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
if ! "$PY" -c "import bigbird_dna.conf, bigbird_dna.sample_data" 2> /dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-build-isolation -e . || exit 1
fi

mkdir -p "$RUN_DIR/calls" "$OUT" || exit 1
CALLS="$RUN_DIR/calls.tsv"
[[ -f "$CALLS" ]] || printf 'call\tstarted_utc\tseconds\texit\tresumed\tdevice\n' > "$CALLS"

finished() {  # summary.json written after every checkpoint of the run
    [[ -f "$RUN_DIR/summary.json" ]] || return 1
    local ckpt
    for ckpt in "$RUN_DIR"/checkpoints/last.ckpt "$RUN_DIR"/hpc_ckpt_*.ckpt; do
        if [[ -e "$ckpt" && "$ckpt" -nt "$RUN_DIR/summary.json" ]]; then return 1; fi
    done
    return 0
}

rc=0
if finished; then
    echo "== pretrain_gpu: $RUN_DIR is finished (summary.json newer than its checkpoints); nothing to train"
else
    CALL=$(( $(wc -l < "$CALLS") ))   # the header line counts for this call
    LOG="$RUN_DIR/calls/call$CALL.log"
    RESUME=()
    resumed=new
    if [[ -f "$RUN_DIR/checkpoints/last.ckpt" ]] || compgen -G "$RUN_DIR/hpc_ckpt_*.ckpt" > /dev/null; then
        RESUME=(ckpt_path=last)
        resumed=resumed
    fi
    budget=$(( CALL_SECONDS - RESERVE_SECONDS - SECONDS ))
    if (( budget < 30 )); then
        echo "error: only ${budget}s of CALL_SECONDS=$CALL_SECONDS left after the set-up; nothing trained" >&2
        exit 1
    fi
    device="$( (nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null || true) | head -n 1)"
    device="${device:-no GPU}"
    started_utc="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "== pretrain_gpu call $CALL ($resumed) in $RUN_DIR on $device: SIGTERM to the trainer after ${budget}s" \
        | tee "$LOG"
    start=$SECONDS
    timeout --foreground --preserve-status --signal=TERM --kill-after="$KILL_AFTER" "$budget" \
        "$PY" -m bigbird_dna.train experiment=pretrain_gpu "hydra.run.dir=$RUN_DIR" "${RESUME[@]}" "$@" 2>&1 \
        | tee -a "$LOG"
    rc=${PIPESTATUS[0]}
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$CALL" "$started_utc" "$((SECONDS - start))" "$rc" "$resumed" "$device" \
        >> "$CALLS"
    cp "$LOG" "$OUT/pretrain_gpu-call$CALL.log"
fi

if finished; then cp "$RUN_DIR/summary.json" "$OUT/summary.json"; fi
"$PY" benchmarks/pretrain_curve.py "$RUN_DIR" --out "$OUT/pretrain_gpu.json" --png "$OUT/pretrain_gpu.png" \
    --exit "$rc"
case $rc in
    0|75) exit 0 ;;   # finished, or stopped on time with a checkpoint
    *) exit "$rc" ;;
esac
