"""Promoter data with a planted signal, for demos and tests on genomes that have no EPDnew.

The signal is the core of the *tac* promoter: a sigma-70 -35 box (``TTGACA``), a 16-bp spacer and
a -10 box (``TATAAT``), :data:`ELEMENT`, placed at :data:`ELEMENT_OFFSET` (TSS-35 .. TSS-7) in the
promoter's orientation.

- :func:`plant_promoters` copies a genome FASTA with the element planted at random TSSs on both
  strands, and writes an EPDnew-style BED (60-bp lines, TSS-49..TSS+10, strand in column 6), so the
  whole EPDnew path (``data=promoter_epdnew``) runs on, e.g., the bundled *H. pylori* genome.
- :func:`planted_sequences` makes a small labelled set: AT-rich random backgrounds with the
  element (positives), and negatives that are either DeePromoter-substituted positives or
  element-free backgrounds.

Command line (used by ``workflows/promoter_demo.sh``)::

    python -m bigbird_dna.demo.synthetic_promoters --fasta genome.fa --num 600 --out-prefix planted
    # -> planted.fa, planted.bed
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

from bigbird_dna.data.promoter.negatives import deepromoter_negative
from bigbird_dna.errors import InputError, exit_on_input_error
from bigbird_dna.genome import open_genome
from bigbird_dna.genome.sequence import reverse_complement
from bigbird_dna.runtime.atomic import atomic_paths

ELEMENT = "TTGACAATTAATCATCGGCTCGTATAATG"  # tac promoter core: -35 box, 16-bp spacer, -10 box
ELEMENT_OFFSET = -35  # first base of the element relative to the TSS, in the promoter's orientation


def _background(length: int, rng: np.random.Generator, gc: float = 0.39) -> str:
    probs = [(1 - gc) / 2, gc / 2, gc / 2, (1 - gc) / 2]  # A C G T
    return np.frombuffer(b"ACGT", dtype=np.uint8)[rng.choice(4, size=length, p=probs)].tobytes().decode()


def plant(seq: str, tss_index: int) -> str:
    """``seq`` with :data:`ELEMENT` written over ``[tss_index - 35, tss_index - 6)``."""
    start = tss_index + ELEMENT_OFFSET
    if start < 0 or start + len(ELEMENT) > len(seq):
        raise ValueError(f"the element does not fit around index {tss_index} of a {len(seq)}-bp sequence")
    return seq[:start] + ELEMENT + seq[start + len(ELEMENT):]


def planted_sequences(count: int, length: int, tss_index: int, seed: int = 0) -> tuple[list[str], list[int]]:
    """``count`` labelled sequences, half positives, in random order.

    Positives are AT-rich (39% GC) random sequence with the element planted before ``tss_index``.
    Negatives alternate between a DeePromoter-substituted positive and a fresh background.

    Returns:
        ``(sequences, labels)`` with labels 1 (promoter) or 0.
    """
    rng = np.random.default_rng(seed)
    seqs, labels = [], []
    for i in range(count):
        positive = plant(_background(length, rng), tss_index)
        if i % 2 == 0:
            seqs.append(positive)
            labels.append(1)
        else:
            seqs.append(deepromoter_negative(positive, rng) if i % 4 == 1 else _background(length, rng))
            labels.append(0)
    order = rng.permutation(count)
    return [seqs[i] for i in order], [labels[i] for i in order]


def plant_promoters(fasta: str | os.PathLike, out_prefix: str | os.PathLike, num: int, margin_bp: int = 6000,
                    seed: int = 0) -> tuple[Path, Path]:
    """Plant the element at ``num`` random TSSs of a genome; write ``PREFIX.fa`` and ``PREFIX.bed``.

    TSSs lie at least ``margin_bp`` from record ends and 100 bp apart, on random
    strands. The BED lines follow EPDnew: ``[tss-49, tss+11)`` on ``+``, ``[tss-10, tss+50)`` on ``-``
    (0-based, half-open), named ``planted_<i>``.
    """
    rng = np.random.default_rng(seed)
    with open_genome(fasta) as genome:
        records = {name: list(genome.fetch(name, 0, length)) for name, length in genome.record_lengths.items()}
    names = [n for n, s in records.items() if len(s) > 2 * margin_bp]
    if not names:
        raise InputError(f"no record of {fasta} is longer than {2 * margin_bp} bp; lower --margin.")
    sites: dict[str, set[int]] = {n: set() for n in names}
    spacing = 100  # two elements never overlap, whatever their strands
    for _ in range(num * 100):
        if sum(map(len, sites.values())) == num:
            break
        name = names[rng.integers(len(names))]
        tss = int(rng.integers(margin_bp, len(records[name]) - margin_bp))
        if all(abs(tss - other) >= spacing for other in sites[name]):
            sites[name].add(tss)
    lines = []
    for name in names:
        seq = records[name]
        for i, tss in enumerate(sorted(sites[name])):
            strand = "+" if rng.random() < 0.5 else "-"
            if strand == "+":
                start = tss + ELEMENT_OFFSET
                seq[start:start + len(ELEMENT)] = ELEMENT
                lines.append(f"{name}\t{tss - 49}\t{tss + 11}\tplanted_{name}_{i}\t900\t+\n")
            else:  # on the minus strand the element reads 5'->3' leftwards from tss + 35
                end = tss - ELEMENT_OFFSET + 1
                seq[end - len(ELEMENT):end] = reverse_complement(ELEMENT)
                lines.append(f"{name}\t{tss - 10}\t{tss + 50}\tplanted_{name}_{i}\t900\t-\n")
    fa, bed = Path(f"{out_prefix}.fa"), Path(f"{out_prefix}.bed")
    with atomic_paths([fa, bed]) as (fa_tmp, bed_tmp):  # both files appear together, or neither
        with open(fa_tmp, "w") as out:
            for name, seq in records.items():
                text = "".join(seq)
                out.write(f">{name}\n" + "".join(text[i:i + 60] + "\n" for i in range(0, len(text), 60)))
        Path(bed_tmp).write_text("".join(lines))
    return fa, bed


@exit_on_input_error
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fasta", required=True, help="genome to plant promoters into")
    parser.add_argument("--num", type=int, default=600, help="promoters to plant (default 600)")
    parser.add_argument("--margin", type=int, default=6000, help="min distance of a TSS from record ends")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out-prefix", required=True, help="writes PREFIX.fa and PREFIX.bed")
    args = parser.parse_args(argv)
    fa, bed = plant_promoters(args.fasta, args.out_prefix, args.num, args.margin, args.seed)
    print(f"wrote {fa} and {bed} ({sum(1 for _ in open(bed))} promoters)")


if __name__ == "__main__":
    main()
