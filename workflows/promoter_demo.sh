#!/usr/bin/env bash
# Promoter demo, end to end on the bundled H. pylori genome: pretrain -> fine-tune -> predict.
#
# Bacteria have no EPDnew, so step 1 plants promoters: the tac promoter core (sigma-70 -35 box,
# 16-bp spacer, -10 box) is written at 600 random TSSs on both strands of a copy of the genome,
# with an EPDnew-style BED (60-bp lines, TSS-49..TSS+10). Everything after that is the real pipeline:
#   1. plant promoters            -> $OUT/planted.{fa,bed}
#   2. MLM pretraining            -> $OUT/pretrain/export       (tiny encoder, planted genome)
#   3. promoter fine-tuning       -> $OUT/finetune/export       (experiment=promoter_sample: 500-bp
#      windows TSS-300..TSS+199, DeePromoter negatives + random genomic windows, last 15% of the
#      chromosome for validation and 15% for test)
#   4. predict on the genome      -> $OUT/predictions.{tsv,bed} (500-bp windows, stride 500, both strands)
#   5. how many planted TSSs of the held-out test region fall in a predicted window
#
# About 10 CPU-minutes (roughly 5-7 minutes on 2 free cores). Usage: bash workflows/promoter_demo.sh [OUT_DIR]
# Environment: PRETRAIN_STEPS (default 120), FINETUNE_STEPS (default 200).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${1:-outputs/promoter_demo}
PRETRAIN_STEPS=${PRETRAIN_STEPS:-120}
FINETUNE_STEPS=${FINETUNE_STEPS:-200}
mkdir -p "$OUT"
export TOKENIZERS_PARALLELISM=false
SECONDS=0

echo "== 1/5 planting promoters into sample_data/h_pylori_F32.fa"
python -m bigbird_dna.demo.synthetic_promoters --fasta sample_data/h_pylori_F32.fa --num 600 --out-prefix "$OUT/planted"

echo "== 2/5 MLM pretraining ($PRETRAIN_STEPS steps)"
python -m bigbird_dna.train data.fasta="$OUT/planted.fa" trainer.max_steps="$PRETRAIN_STEPS" \
    trainer.val_check_interval="$PRETRAIN_STEPS" hydra.run.dir="$OUT/pretrain"

echo "== 3/5 promoter fine-tuning from the MLM export ($FINETUNE_STEPS steps)"
python -m bigbird_dna.train experiment=promoter_sample data.fasta="$OUT/planted.fa" data.bed="$OUT/planted.bed" \
    task.backbone="$OUT/pretrain/export" trainer.max_steps="$FINETUNE_STEPS" hydra.run.dir="$OUT/finetune"

echo "== 4/5 scanning the genome"
python -m bigbird_dna.predict --model "$OUT/finetune/export" "$OUT/planted.fa" --window 500 --stride 500 \
    --batch-size 32 --out-prefix "$OUT/predictions"

echo "== 5/5 planted TSSs of the test region (last 15%) inside a predicted promoter window"
python - "$OUT" <<'PY'
import sys
from pathlib import Path
out = Path(sys.argv[1])
length = sum(len(line.strip()) for line in open(out / "planted.fa") if not line.startswith(">"))
test_start = int(length * 0.85)
tss = [int(l.split()[1]) + (49 if l.split()[5] == "+" else 10) for l in open(out / "planted.bed")]
tss = [t for t in tss if t >= test_start]
bed = [tuple(map(int, l.split()[1:3])) for l in open(out / "predictions.bed") if not l.startswith("track")]
test_windows = [l.split("\t") for l in open(out / "predictions.tsv") if not l.startswith(("record", "#"))]
test_windows = [w for w in test_windows if int(w[1]) >= test_start]
hit = sum(any(s <= t < e for s, e in bed) for t in tss)
called = [(s, e) for s, e in bed if s >= test_start]
true = sum(any(s <= t < e for t in tss) for s, e in called)
print(f"test region {test_start:,}-{length:,}: {len(tss)} planted TSSs, {len(test_windows)} windows scanned")
print(f"  TSSs inside a window scoring >= 0.5: {hit}/{len(tss)}")
print(f"  windows scoring >= 0.5 that hold a planted TSS: {true}/{len(called)}")
PY
echo "== done in ${SECONDS}s; fine-tuning summary: $OUT/finetune/summary.json"
