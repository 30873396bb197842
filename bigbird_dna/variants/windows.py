"""Ref and alt windows around a variant, and where the alleles sit in them.

A window is ``W`` bases of the genome, 0-based and half-open on the forward strand:

- **Ref window**: centred on the REF allele, ``[c - W//2, c - W//2 + W)`` with ``c = start + len(REF)//2``,
  shifted inwards at a contig end so it stays ``W`` long (a contig shorter than ``W`` is one
  window, the whole contig).
- **Alt window**: the same window on the alt genome, the contig with REF replaced by ALT. Its left
  end is the ref window's; an indel moves only the far end, which takes ``len(REF) - len(ALT)`` more
  bases of the genome (a deletion) or fewer (an insertion), so both windows are ``W`` long. Indels
  are therefore scored, not skipped.

Alleles longer than ``W // 2`` do not fit a centred window and are skipped (counted as too long).
"""

from __future__ import annotations

from dataclasses import dataclass

from bigbird_dna.errors import InputError
from bigbird_dna.genome.reader import GenomeReader
from bigbird_dna.genome.records import unknown_record
from bigbird_dna.variants.vcf import Variant


@dataclass(frozen=True)
class VariantWindows:
    """The two windows of a variant; ``*_span`` is the allele's ``[start, end)`` inside its window."""

    variant: Variant
    start: int  # 0-based start of the ref window on the contig
    ref_seq: str
    alt_seq: str
    ref_span: tuple[int, int]
    alt_span: tuple[int, int]
    genome_ref: str  # the genome's bases under REF (upper case)

    @property
    def ref_matches(self) -> bool:
        return self.genome_ref == self.variant.ref.upper()


def fits(variant: Variant, window: int) -> bool:
    """Whether both alleles fit a centred window of ``window`` bases."""
    return max(len(variant.ref), len(variant.alt)) <= window // 2


def _place(start: int, length: int, contig: int) -> int:
    """``start`` moved inwards so ``[start, start + length)`` lies inside ``[0, contig)`` (0 if it cannot)."""
    return max(0, min(start, contig - length))


def variant_windows(genome: GenomeReader, variant: Variant, window: int, source: str = "input") -> VariantWindows:
    """The ref and alt windows of ``variant`` (see the module docstring).

    Raises:
        InputError: the contig is not in the genome, or REF runs past its end; the message names
            the line of ``source``.
    """
    contig = genome.record_lengths.get(variant.chrom)
    where = f"{source} line {variant.line} ({variant.chrom}:{variant.pos})"
    if contig is None:
        missing = unknown_record(variant.chrom, genome.record_lengths, f"the genome {genome.path}", "contig")
        raise InputError(f"{where}: {missing} Give the FASTA the calls were made on, or rename the VCF's contigs "
                         "to match it.")
    s, r, a = variant.start, len(variant.ref), len(variant.alt)
    if s + r > contig:
        raise InputError(f"{where}: the REF allele ends at {s + r}, past the end of {variant.chrom} ({contig} bp).")
    ref_start = _place(s + r // 2 - window // 2, window, contig)
    ref_end = min(contig, ref_start + window)
    alt_contig = contig - r + a
    alt_start = min(ref_start, _place(ref_start, window, alt_contig))
    alt_end = min(alt_contig, alt_start + window)
    # alt coordinates: x < s -> genome x; s <= x < s + a -> ALT[x - s]; x >= s + a -> genome x - a + r
    alt_seq = genome.fetch(variant.chrom, alt_start, s) + variant.alt.upper() + \
        genome.fetch(variant.chrom, s + r, alt_end - a + r)
    return VariantWindows(variant, ref_start, genome.fetch(variant.chrom, ref_start, ref_end), alt_seq,
                          (s - ref_start, s - ref_start + r), (s - alt_start, s - alt_start + a),
                          genome.fetch(variant.chrom, s, s + r))
