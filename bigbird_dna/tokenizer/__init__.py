"""DNA tokenizers on HF ``tokenizers`` with fixed special ids: BPE (:mod:`.bpe`), char and k-mer (:mod:`.fixed`)."""

from bigbird_dna.tokenizer.bpe import (
    ALPHABET,
    MASK_ID,
    SPECIAL_TOKENS,
    TOKENIZER_FILE,
    DNATokenizer,
    train_bpe_tokenizer,
)
from bigbird_dna.tokenizer.fixed import char_tokenizer, kmer_tokenizer, tokenizer_from_config

__all__ = [
    "ALPHABET",
    "MASK_ID",
    "SPECIAL_TOKENS",
    "TOKENIZER_FILE",
    "DNATokenizer",
    "char_tokenizer",
    "kmer_tokenizer",
    "tokenizer_from_config",
    "train_bpe_tokenizer",
]
