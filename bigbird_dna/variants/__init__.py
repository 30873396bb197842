"""Variant-effect scoring: ``python -m bigbird_dna.variants`` (``bigbird-dna-variants``).

- :mod:`~bigbird_dna.variants.vcf` reads a VCF or a ``chrom pos ref alt`` TSV, splitting multi-allelic sites;
- :mod:`~bigbird_dna.variants.windows` builds the ref and alt windows (indels included);
- :mod:`~bigbird_dna.variants.score` scores them: classifier delta, embedding cosine distance, and
  the MLM masked-marginal log-likelihood ratio ``llr`` (defined there);
- :mod:`~bigbird_dna.variants.output` writes ``PREFIX.tsv`` (and ``PREFIX.h5`` for many labels).
"""
