"""Labelled tasks built from an annotated genome: a FASTA plus its GFF3 or GTF annotation.

- :mod:`~bigbird_dna.data.annotation.gff`: the GFF3/GTF reader (genes, transcripts, exons;
  0-based, half-open coordinates);
- :mod:`~bigbird_dna.data.annotation.promoters`: TSS windows (positives) and named negatives,
  split so that no held-out window overlaps a training one;
- :mod:`~bigbird_dna.data.annotation.output`: the task folder (``train.tsv``, ``train.bed``, ...,
  ``manifest.json``);
- ``python -m bigbird_dna.data.annotation GENOME GFF --task promoters --out DIR``: the CLI;
- :mod:`~bigbird_dna.data.annotation.datamodule`: the same task built on the fly for training
  (``data=promoter_annotation``).
"""
