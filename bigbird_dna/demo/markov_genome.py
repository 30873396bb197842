"""A synthetic genome of known entropy rate: an order-``k`` Markov chain with peaky transitions.

Each of the ``4**k`` contexts draws its next-base distribution from a symmetric Dirichlet(``alpha``);
a small ``alpha`` (0.15) makes most contexts nearly deterministic. The exact entropy rate is
``sum_c pi(c) H(P(. | c))`` with ``pi`` the chain's stationary distribution over contexts, so a
model's bits per base can be placed between the unigram (what ignoring context costs) and the
source's rate (the best any model can do). With ``k=4, alpha=0.15, seed=0``: about 0.80
bits/base against a unigram of about 1.99.

Command line::

    python -m bigbird_dna.demo.markov_genome --out markov.fa --length 1000000
    # prints the entropy rate and the unigram entropy
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bigbird_dna.errors import InputError, exit_on_input_error
from bigbird_dna.runtime.atomic import write_text_atomic


@dataclass(frozen=True)
class MarkovSource:
    """An order-``order`` chain over A, C, G, T.

    Attributes:
        transitions: ``[4**order, 4]`` next-base probabilities per context; context index
            ``sum(base_i * 4**(order-1-i))`` over the last ``order`` bases, oldest first (A=0..T=3).
    """

    order: int
    transitions: np.ndarray

    @classmethod
    def peaky(cls, order: int = 4, alpha: float = 0.15, seed: int = 0) -> "MarkovSource":
        """Transitions drawn from Dirichlet(``alpha``) per context, seeded."""
        if order < 1 or alpha <= 0:
            raise InputError(f"order={order} and alpha={alpha}: need order >= 1 and alpha > 0.")
        rng = np.random.default_rng(seed)
        probs = rng.dirichlet([alpha] * 4, size=4 ** order)
        probs = np.clip(probs, 1e-6, None)  # every base stays possible (finite cross-entropy)
        return cls(order, probs / probs.sum(1, keepdims=True))

    def stationary(self) -> np.ndarray:
        """``[4**order]`` stationary distribution of the contexts (power iteration)."""
        n = 4 ** self.order
        pi = np.full(n, 1.0 / n)
        shifted = (np.arange(n) * 4) % n  # context c followed by base b -> shifted[c] + b
        for _ in range(10_000):
            new = np.zeros(n)
            for base in range(4):
                np.add.at(new, shifted + base, pi * self.transitions[:, base])
            if np.abs(new - pi).max() < 1e-13:
                return new
            pi = new
        return pi

    def entropy_rate(self) -> float:
        """Bits per base of the source: the floor for any model."""
        p = self.transitions
        return float(self.stationary() @ -(p * np.log2(p)).sum(1))

    def unigram_entropy(self) -> float:
        """Bits per base of the stationary base composition: what ignoring context costs."""
        bases = self.stationary() @ self.transitions  # [4]
        return float(-(bases * np.log2(bases)).sum())

    def sample(self, length: int, seed: int = 0) -> str:
        """``length`` bases of the chain, started from a random context."""
        rng = np.random.default_rng(seed)
        cumulative = self.transitions.cumsum(1)
        cumulative[:, -1] = 1.0
        draws = rng.random(length)
        n = 4 ** self.order
        context = int(rng.integers(n))
        out = bytearray(length)
        letters = b"ACGT"
        rows = cumulative.tolist()
        for i, u in enumerate(draws.tolist()):
            row = rows[context]
            base = 0 if u < row[0] else 1 if u < row[1] else 2 if u < row[2] else 3
            out[i] = letters[base]
            context = (context * 4 + base) % n
        return out.decode()


def write_markov_fasta(path: str | os.PathLike, length: int, order: int = 4, alpha: float = 0.15,
                       seed: int = 0) -> MarkovSource:
    """Write one record ``markov`` of ``length`` bases to ``path`` (60-bp lines); returns the source."""
    source = MarkovSource.peaky(order, alpha, seed)
    seq = source.sample(length, seed)
    write_text_atomic(Path(path), ">markov\n" + "\n".join(seq[i:i + 60] for i in range(0, length, 60)) + "\n")
    return source


@exit_on_input_error
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="FASTA to write")
    parser.add_argument("--length", type=int, default=1_000_000, help="bases (default 1,000,000)")
    parser.add_argument("--order", type=int, default=4, help="context length k (default 4)")
    parser.add_argument("--alpha", type=float, default=0.15, help="Dirichlet concentration (default 0.15)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    source = write_markov_fasta(args.out, args.length, args.order, args.alpha, args.seed)
    print(f"{args.out}: {args.length} bases; entropy rate {source.entropy_rate():.4f} bits/base, "
          f"unigram {source.unigram_entropy():.4f}")


if __name__ == "__main__":
    main()
