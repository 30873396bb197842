"""Sequences of 2..N named classes: the class files (one FASTA per class, label tables, Genomic
Benchmarks folders) and their DataModule."""
