"""Labelled tasks built from an annotated genome: a FASTA plus its GFF3 or GTF annotation.

- :mod:`~bigbird_dna.data.annotation.gff`: the GFF3/GTF reader (genes, transcripts, exons;
  0-based, half-open coordinates);
- :mod:`~bigbird_dna.data.annotation.samples`: what every task shares (windows around a cut,
  positives' checks, negatives per positive, the last steps);
- :mod:`~bigbird_dna.data.annotation.promoters`: TSS windows (positives) and named negatives;
- :mod:`~bigbird_dna.data.annotation.splice`: splice donor or acceptor windows
  (:mod:`~bigbird_dna.data.annotation.splice_sites`) against GT/AG-matched decoys
  (:mod:`~bigbird_dna.data.annotation.decoys`);
- :mod:`~bigbird_dna.data.annotation.split`: splits such that no held-out window overlaps a training one;
- :mod:`~bigbird_dna.data.annotation.output`: the task folder (``train.tsv``, ``train.bed``, ...,
  ``manifest.json``);
- ``python -m bigbird_dna.data.annotation GENOME GFF --task promoters|splice_donors|splice_acceptors
  --out DIR``: the CLI (:mod:`~bigbird_dna.data.annotation.build` names the tasks);
- :mod:`~bigbird_dna.data.annotation.datamodule`: the same tasks built on the fly for training
  (``data=promoter_annotation``, ``data=splice_annotation``).
"""
