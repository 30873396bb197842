"""bigbird_dna: long-context DNA language models on BigBird block-sparse attention.

Coordinates are 0-based and half-open (BED convention) everywhere in this package.
"""

__version__ = "0.1.0"
