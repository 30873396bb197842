"""bigbird_dna: long-context DNA language models on BigBird block-sparse attention.

Coordinates are 0-based and half-open (BED convention) everywhere in this package.

The public API is :class:`BigBirdDNA` (``from bigbird_dna import BigBirdDNA``). It is imported on
first use, so ``import bigbird_dna.errors`` and the CLIs' ``--help`` stay cheap (no torch).
"""

from bigbird_dna.version import __version__

__all__ = ["BigBirdDNA", "__version__"]


def __getattr__(name: str):
    if name == "BigBirdDNA":
        from bigbird_dna.pretrained import BigBirdDNA

        return BigBirdDNA
    raise AttributeError(f"module 'bigbird_dna' has no attribute {name!r}")
