"""DNA tokenizer: BPE on HF ``tokenizers`` with fixed special ids and isolated N runs (see :mod:`.bpe`)."""

from bigbird_dna.tokenizer.bpe import (
    ALPHABET,
    SPECIAL_TOKENS,
    TOKENIZER_FILE,
    DNATokenizer,
    sample_training_chunks,
    train_bpe_tokenizer,
)

__all__ = [
    "ALPHABET",
    "SPECIAL_TOKENS",
    "TOKENIZER_FILE",
    "DNATokenizer",
    "sample_training_chunks",
    "train_bpe_tokenizer",
]
