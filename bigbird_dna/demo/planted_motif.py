"""A labelled set with a planted motif in real genome windows: can a model find a short motif?

Windows of ``length`` bases are cut at random places of a genome (windows with N skipped). In the
positives (half of them, in random order) one copy of :data:`MOTIF` is written at a random
position, on a random strand, each base equal to the consensus with probability ``consensus``
(else one of the other three): a transcription factor site as a position weight matrix would draw
it. Negatives are the genome's own windows. A CNN's first layer is a bank of such detectors; a
Transformer must learn one (issue 31: the tiny encoder stayed at val AUROC 0.53 where a small CNN
reached 0.95; ``benchmarks/planted_motif.py`` compares the hybrid encoder).

Command line: one FASTA per class and split, for ``data=classify``::

    python -m bigbird_dna.demo.planted_motif --fasta genome.fa --out-dir planted
    # -> planted/{train,val}/{motif,background}.fa
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

from bigbird_dna.errors import InputError, exit_on_input_error
from bigbird_dna.genome import open_genome
from bigbird_dna.genome.sequence import reverse_complement
from bigbird_dna.runtime.atomic import atomic_directory

MOTIF = "TGACGTCATC"  # 10 bp; its reverse complement differs, so the strand matters
BASES = "ACGT"


def noisy_copy(motif: str, consensus: float, rng: np.random.Generator) -> str:
    """``motif`` with each base kept with probability ``consensus``, else one of the other three."""
    out = []
    for base in motif:
        if rng.random() < consensus:
            out.append(base)
        else:
            out.append(rng.choice([b for b in BASES if b != base]))
    return "".join(out)


def planted_windows(fasta: str | os.PathLike, count: int, length: int = 200, motif: str = MOTIF,
                    consensus: float = 0.85, seed: int = 0) -> tuple[list[str], list[int]]:
    """``count`` windows of ``length`` bp from the genome ``fasta``, half of them with ``motif``
    planted (module docstring), in random order.

    Returns:
        ``(sequences, labels)``: upper-case strings, labels 1 (motif planted) or 0.

    Raises:
        InputError: no record holds a window of ``length`` bases, or the motif is longer than one.
    """
    if len(motif) > length:
        raise InputError(f"the motif ({len(motif)} bp) is longer than a window ({length} bp).")
    rng = np.random.default_rng(seed)
    with open_genome(fasta) as genome:
        lengths = {name: size for name, size in genome.record_lengths.items() if size >= length}
        if not lengths:
            raise InputError(f"no record of {fasta} holds a {length}-bp window.")
        names, sizes = list(lengths), np.array(list(lengths.values()), dtype=float)
        seqs, labels = [], []
        while len(seqs) < count:
            name = names[rng.choice(len(names), p=sizes / sizes.sum())]
            start = int(rng.integers(0, lengths[name] - length + 1))
            seq = genome.fetch(name, start, start + length).upper()
            if set(seq) - set(BASES):
                continue
            label = len(seqs) % 2
            if label:
                site = noisy_copy(motif, consensus, rng)
                site = reverse_complement(site) if rng.random() < 0.5 else site
                at = int(rng.integers(0, length - len(motif) + 1))
                seq = seq[:at] + site + seq[at + len(site):]
            seqs.append(seq)
            labels.append(label)
    order = rng.permutation(count)
    return [seqs[i] for i in order], [labels[i] for i in order]


def write_classes(fasta: str | os.PathLike, out_dir: str | os.PathLike, train: int, val: int, length: int,
                  consensus: float, seed: int) -> Path:
    """``out_dir/{train,val}/{motif,background}.fa`` (the splits from different seeds), atomically."""
    with atomic_directory(out_dir) as staging:
        for split, count, split_seed in (("train", train, seed), ("val", val, seed + 1)):
            seqs, labels = planted_windows(fasta, count, length, consensus=consensus, seed=split_seed)
            (staging / split).mkdir()
            for name, wanted in (("motif", 1), ("background", 0)):
                rows = [s for s, label in zip(seqs, labels) if label == wanted]
                (staging / split / f"{name}.fa").write_text("".join(f">{name}_{i}\n{s}\n" for i, s in enumerate(rows)))
    return Path(out_dir)


@exit_on_input_error
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fasta", required=True, help="genome to cut windows from")
    parser.add_argument("--out-dir", required=True, help="writes OUT/{train,val}/{motif,background}.fa")
    parser.add_argument("--train", type=int, default=4000, help="train windows (default 4000)")
    parser.add_argument("--val", type=int, default=1000, help="val windows (default 1000)")
    parser.add_argument("--length", type=int, default=200, help="bases per window (default 200)")
    parser.add_argument("--consensus", type=float, default=0.85, help="per-base consensus of a planted copy")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    out = write_classes(args.fasta, args.out_dir, args.train, args.val, args.length, args.consensus, args.seed)
    print(f"wrote {out}/train and {out}/val (motif.fa, background.fa)")


if __name__ == "__main__":
    main()
