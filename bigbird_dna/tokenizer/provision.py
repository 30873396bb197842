"""Which tokenizer a run uses: the one place that decides.

In order of precedence:

1. a given tokenizer (a fine-tuning run's backbone export brings its own; ``tokenizer.path`` may
   only repeat it);
2. ``tokenizer.path``;
3. ``<run dir>/tokenizer.json`` (a resumed run, or a DDP rank > 0 re-entering rank 0's run);
4. a new one of ``tokenizer.kind``: ``char`` and ``kmer`` need no training; ``bpe`` is trained
   on ``tokenizer.sample_bp`` bases of the run's training text.

The main process saves the result as ``<run dir>/tokenizer.json``.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Callable, Iterable

from bigbird_dna.errors import InputError
from bigbird_dna.tokenizer.bpe import TOKENIZER_FILE, DNATokenizer
from bigbird_dna.tokenizer.fixed import tokenizer_from_config

log = logging.getLogger(__name__)


def provision_tokenizer(settings: dict[str, Any], run_dir: str | os.PathLike, is_main_process: bool,
                        training_text: Callable[[int], Iterable[str]], given: DNATokenizer | None = None,
                        given_by: str = "") -> DNATokenizer:
    """The run's tokenizer, saved to ``<run_dir>/tokenizer.json`` by the main process.

    Args:
        settings: the ``tokenizer`` config group (``kind``, ``path``; for BPE ``vocab_size``,
            ``max_token_length``, ``sample_bp``; for k-mers ``k``).
        run_dir: the run directory.
        is_main_process: only the main process writes the file.
        training_text: ``training_text(total_bp)`` yields about ``total_bp`` bases of training
            sequence; called only when a tokenizer has to be trained.
        given: a tokenizer that must be used (a backbone's); ``settings["path"]`` may only repeat it.
        given_by: where ``given`` comes from, for messages.

    Raises:
        InputError: ``tokenizer.path`` names another tokenizer than ``given``, or cannot be read.
    """
    in_run_dir = Path(run_dir) / TOKENIZER_FILE
    path = settings.get("path")
    if given is not None:
        if path and DNATokenizer.load(path).sha256 != given.sha256:
            raise InputError(f"tokenizer.path={path} differs from the tokenizer of the backbone {given_by}; "
                             "a fine-tuned model must keep its backbone's tokenizer: drop tokenizer.path.")
        tokenizer = given
    elif path:
        tokenizer = DNATokenizer.load(path)
    elif in_run_dir.exists():
        tokenizer = DNATokenizer.load(in_run_dir)
    else:
        if settings.get("kind", "bpe") == "bpe":
            log.info("Training a BPE tokenizer on %s bp of the training sequences", settings["sample_bp"])
        tokenizer = tokenizer_from_config(settings, lambda: training_text(settings["sample_bp"]))
    if is_main_process and not in_run_dir.exists():
        tokenizer.save(in_run_dir)
    return tokenizer
