"""bigbird_dna: long-context DNA language models on BigBird block-sparse attention.

Coordinates are 0-based and half-open (BED convention) everywhere in this package.

The public API is :class:`BigBirdDNA` (``from bigbird_dna import BigBirdDNA``). It is imported on
first use, so ``import bigbird_dna.errors`` and the CLIs' ``--help`` stay cheap (no torch).
"""

__version__ = "0.1.0"  # the one version string: pyproject.toml reads it, every CLI's --version prints it
__all__ = ["BigBirdDNA", "__version__"]


def __getattr__(name: str):
    if name == "BigBirdDNA":
        from bigbird_dna.pretrained import BigBirdDNA

        return BigBirdDNA
    raise AttributeError(f"module 'bigbird_dna' has no attribute {name!r}")
