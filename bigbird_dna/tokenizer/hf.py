"""A project tokenizer as HF ``transformers`` expects it: ``tokenizer.json`` plus its two side files.

The project's :class:`~bigbird_dna.tokenizer.DNATokenizer` upper-cases in Python and adds
``[CLS]``/``[SEP]`` from the ids, so its raw ``tokenizer.json`` loaded into
``transformers.PreTrainedTokenizerFast`` turns lowercase (soft-masked) bases into ``[UNK]``, adds no
special tokens, and cannot pad. :func:`hf_tokenizer_json` moves both steps into the file:

- upper-casing in the normalizer, first in a ``Sequence`` with the tokenizer's own normalizer if any
  (``tokenizers`` has no ``Uppercase`` normalizer, so it is 26 ``Replace`` steps, ``a``..``z`` to
  ``A``..``Z``: the ASCII part of the ``str.upper()`` that ``DNATokenizer`` applies);
- a ``TemplateProcessing`` post-processor ``[CLS] $A [SEP]`` (pairs: ``[CLS] $A [SEP] $B [SEP]``).

``DNATokenizer`` loads the result and gives the same ids (its ``encode`` asks for no special
tokens, so the post-processor does not fire there). :func:`hf_side_files` declares the pad, mask,
cls, sep and unk tokens in ``tokenizer_config.json`` and ``special_tokens_map.json``. Nothing here
imports ``transformers``: it is only needed by whoever loads the files.
"""

from __future__ import annotations

import json

from bigbird_dna.tokenizer.bpe import DNATokenizer

SPECIAL_TOKENS_MAP = {"pad_token": "[PAD]", "unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]",
                      "mask_token": "[MASK]"}
_UPPERCASE = [{"type": "Replace", "pattern": {"String": chr(c)}, "content": chr(c).upper()}
              for c in range(ord("a"), ord("z") + 1)]


def _with_uppercase(normalizer: dict | None) -> dict:
    """Upper-casing first, then the existing normalizer; unchanged if it already starts so."""
    steps = [] if normalizer is None else (
        normalizer["normalizers"] if normalizer.get("type") == "Sequence" else [normalizer])
    if steps[:len(_UPPERCASE)] == _UPPERCASE:
        return normalizer
    return {"type": "Sequence", "normalizers": [*_UPPERCASE, *steps]}


def _cls_sep_template(tokenizer: DNATokenizer) -> dict:
    def special(name: str, type_id: int = 0) -> dict:
        return {"SpecialToken": {"id": name, "type_id": type_id}}

    def sequence(name: str, type_id: int) -> dict:
        return {"Sequence": {"id": name, "type_id": type_id}}

    cls, sep = SPECIAL_TOKENS_MAP["cls_token"], SPECIAL_TOKENS_MAP["sep_token"]
    return {"type": "TemplateProcessing",
            "single": [special(cls), sequence("A", 0), special(sep)],
            "pair": [special(cls), sequence("A", 0), special(sep), sequence("B", 1), special(sep, 1)],
            "special_tokens": {cls: {"id": cls, "ids": [tokenizer.cls_id], "tokens": [cls]},
                               sep: {"id": sep, "ids": [tokenizer.sep_id], "tokens": [sep]}}}


def hf_tokenizer_json(tokenizer: DNATokenizer) -> str:
    """``tokenizer.json`` text that HF ``transformers`` and :class:`DNATokenizer` both read to the same ids.

    Idempotent: a tokenizer loaded from such a file comes back unchanged.
    """
    spec = json.loads(tokenizer.to_str())
    spec["normalizer"] = _with_uppercase(spec.get("normalizer"))
    spec["post_processor"] = _cls_sep_template(tokenizer)
    return json.dumps(spec, indent=2, ensure_ascii=False)


def hf_side_files(model_max_length: int) -> dict[str, str]:
    """``{file name: text}`` of ``tokenizer_config.json`` and ``special_tokens_map.json``."""
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": model_max_length or None,
              "padding_side": "right", "clean_up_tokenization_spaces": False, **SPECIAL_TOKENS_MAP}
    return {"tokenizer_config.json": json.dumps(config, indent=2),
            "special_tokens_map.json": json.dumps(SPECIAL_TOKENS_MAP, indent=2)}


def project_tokenizer(text: str) -> DNATokenizer:
    """The project tokenizer behind a ``tokenizer.json`` text, HF-compatible or not.

    Undoes :func:`hf_tokenizer_json` (our ``[CLS] $A [SEP]`` template, the leading upper-casing), so
    an export's tokenizer has the fingerprint (``sha256``) of the tokenizer the model trained with.
    Ids are the same either way.
    """
    spec = json.loads(text)
    probe = DNATokenizer.from_str(text)
    if spec.get("post_processor") == _cls_sep_template(probe):
        spec["post_processor"] = None
    normalizer = spec.get("normalizer")
    if normalizer and normalizer.get("type") == "Sequence" and normalizer["normalizers"][:26] == _UPPERCASE:
        rest = normalizer["normalizers"][26:]
        spec["normalizer"] = None if not rest else rest[0] if len(rest) == 1 else {"type": "Sequence",
                                                                                   "normalizers": rest}
    return DNATokenizer.from_str(json.dumps(spec))
