"""``BigBirdDNA``: load a trained model in one line, embed sequences, score them, save it.

    from bigbird_dna import BigBirdDNA
    model = BigBirdDNA.from_pretrained("outputs/mlm/runs/X/export")   # any task's export
    vectors = model.embed(["ACGT...", ...], pool="mean")              # float32 [N, hidden], CPU
    probs = model.predict(["ACGT...", ...])                           # promoter [N], chromatin [N, labels]
    logp = model.score(["ACGT...", ...])                              # MLM: per-base log p, .sums, .means
    why = model.attribute(["ACGT...", ...], method="ism")             # classifiers: per-base [N, L]
    model.class_names                                                 # classify: predict's columns, [N, C]
    model.save_pretrained("my_model")                                 # model.safetensors + config + tokenizer

Sequences are DNA strings of any case with N and IUPAC codes (anything else, and an empty string,
is refused with an :class:`~bigbird_dna.errors.InputError` naming the sequence's index and the
character); each is read as ``[CLS] tokens [SEP]``
exactly as in training (:func:`~bigbird_dna.tokenizer.specials.encode_with_specials`). Batching and
padding are internal. A sequence longer than the model's context is refused, not cut.

**Batch-mates.** A batch is padded to its longest row and a sparse layout depends on the block
count, so a short sequence's numbers move slightly with its batch's longest (from 12 blocks, for
BigBird-ITC). Give windows of one length (as the CLIs do) or ``batch_size=1`` to avoid it.

``from_pretrained`` reads ``model.safetensors`` and older exports' ``model.pt`` (``weights_only``);
nothing is unpickled or downloaded. Saving goes through :func:`~bigbird_dna.hf.write_hf_export`, not
``huggingface_hub``'s ``PyTorchModelHubMixin``, which would drop the task, tokenizer and layouts.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterable, Iterator, Literal, Sequence

import torch

from bigbird_dna.errors import InputError
from bigbird_dna.genome.sequence import ambiguous_fraction, reverse_complement
from bigbird_dna.hf import write_hf_export
from bigbird_dna.inference.batching import bases_that_fit
from bigbird_dna.inference.cuda_graphs import GraphedForward
from bigbird_dna.inference.device import autocast, resolve_device, resolve_precision
from bigbird_dna.inference.likelihood import Likelihoods, masked_likelihoods
from bigbird_dna.inference.request import STRAND_CHOICES, checked_sequences
from bigbird_dna.inference.scan import combine_strands, score_windows
from bigbird_dna.inference.windows import ScanWindow
from bigbird_dna.model.config import EncoderConfig
from bigbird_dna.model.export import Export, load_export
from bigbird_dna.model.model_card import portable_tree
from bigbird_dna.model.networks import network_from_export
from bigbird_dna.model.outputs import MASKED_LM, SOFTMAX, ModelOutput
from bigbird_dna.tokenizer import DNATokenizer
from bigbird_dna.tokenizer.specials import encode_with_specials, padding_mask_or_none

Pool = Literal["mean", "cls"] | None
PROGRESS_FROM = 256  # lists at least this long get a progress bar when ``progress=None``


class BigBirdDNA:
    """A trained BigBird DNA model of any task, ready for inference.

    Attributes:
        task: the export's task (``"mlm"``, ``"promoter"``, ``"chromatin"``, ``"classify"``...).
        config: the encoder's :class:`~bigbird_dna.model.config.EncoderConfig`.
        tokenizer: the :class:`~bigbird_dna.tokenizer.DNATokenizer` the model was trained with.
        module: the model in eval mode, a plain ``nn.Module``
            (:class:`~bigbird_dna.model.networks.SequenceClassifier` or
            :class:`~bigbird_dna.model.networks.MaskedLanguageModel`; ``module.encoder`` is the encoder).
        device: where it runs; ``precision``: ``"bf16"`` (autocast, GPU) or ``"fp32"``.
        cuda_graphs: on a GPU, :meth:`embed` and :meth:`predict` replay batches of a shape seen
            before from a CUDA graph (:class:`~bigbird_dna.inference.cuda_graphs.GraphedForward`).
    """

    def __init__(self, export: Export, device: str = "auto", precision: str = "auto", cuda_graphs: bool = True):
        self.export = export
        self.task: str = export.task
        self.config = EncoderConfig.from_dict(export.model_config)
        self.tokenizer: DNATokenizer = export.tokenizer
        self.device = resolve_device(device)
        self.precision = resolve_precision(precision, self.device)
        self.module = network_from_export(export).to(self.device)
        self.cuda_graphs = cuda_graphs
        graphed = GraphedForward if cuda_graphs else (lambda fn: fn)
        self._encoder = graphed(self.module.encoder)
        classifier = hasattr(self.module, "predict_proba")
        self._predict_proba = graphed(self.module.predict_proba) if classifier else None
        self._logits = graphed(self.module.logits) if classifier else None

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, device: str = "auto", precision: str = "auto",
                        cuda_graphs: bool = True) -> "BigBirdDNA":
        """Load a folder written by :meth:`save_pretrained` or a training run's ``export/``.

        Args:
            path: the folder (``config.json``, ``tokenizer.json``, ``model.safetensors`` or ``model.pt``).
            device: ``"auto"`` (CUDA if there is a GPU), ``"cpu"``, ``"cuda"``, ``"cuda:N"``.
            precision: ``"auto"`` (bf16 autocast on GPU, fp32 on CPU), ``"bf16"`` or ``"fp32"``.
            cuda_graphs: replay repeated batch shapes from CUDA graphs on a GPU (see the class).
        """
        return cls(load_export(path), device=device, precision=precision, cuda_graphs=cuda_graphs)

    def save_pretrained(self, path: str | os.PathLike) -> Path:
        """Write ``model.safetensors``, ``config.json``, ``tokenizer.json`` (HF-compatible),
        ``tokenizer_config.json``, ``special_tokens_map.json``, the model card ``README.md`` and the
        ``transformers`` remote code (:mod:`bigbird_dna.hf`) to the folder ``path``, atomically.
        ``AutoModel*.from_pretrained(path, trust_remote_code=True)`` then loads it. Absolute paths in
        the metadata and task config (older exports' ``source_checkpoint``) become relative to the
        export's parent, the run directory of a training export."""
        return write_hf_export(path, self.task, self.module.state_dict(), self.export.model_config, self.tokenizer,
                               self.module.output,
                               task_config=portable_tree(self.export.task_config, self.export.path.parent),
                               metadata=portable_tree(self.export.metadata, self.export.path.parent))

    def __repr__(self) -> str:
        """One line a notebook shows: the task, the output, the shape, the context and where it runs."""
        c = self.config
        stem = "" if c.stem is None else f", stem=(kernel {c.stem.kernel}, pool {c.stem.pool})"
        names = ", ".join(self.output.names[:4]) + (", ..." if self.output.num_outputs > 4 else "")
        head = f"{self.output.kind.name}[{names}]" if self.output.num_outputs else self.output.kind.name
        return (f"BigBirdDNA(task={self.task!r}, output={head}, layers={c.num_layers}, hidden={c.hidden_size}, "
                f"heads={c.num_heads}, max_tokens={c.max_input_tokens}{stem}, attention={c.attention.preset!r}, "
                f"tokenizer={self.tokenizer.vocab_size} tokens, device={self.device}, precision={self.precision}, "
                f"path={str(self.export.path)!r})")

    @property
    def output(self) -> ModelOutput:
        """What the head gives: its kind and output names (:mod:`bigbird_dna.model.outputs`)."""
        return self.module.output

    @property
    def num_labels(self) -> int:
        """Outputs of the classification head (0 for a model without one)."""
        return self.output.num_outputs

    @property
    def class_names(self) -> list[str] | None:
        """A softmax classifier's classes, in the column order of :meth:`predict`; else ``None``."""
        return list(self.output.names) if self.output.kind is SOFTMAX else None

    def encode(self, seqs: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """``(input_ids [B, T], attention_mask [B, T] bool)``: ``[CLS] tokens [SEP]``, right-padded.

        Raises:
            InputError: a sequence needs more than the model's ``max_input_tokens`` tokens.
        """
        ids, mask, truncated = encode_with_specials(self.tokenizer, seqs, self.config.max_input_tokens)
        if truncated:
            seq = seqs[truncated[0]]
            tokens = len(self.tokenizer.encode(seq)) + 2
            fit = bases_that_fit(len(seq), tokens, self.config.max_input_tokens)
            raise InputError(f"sequence {truncated[0]} ({len(seq)} bp) needs {tokens} tokens with [CLS] and [SEP], "
                             f"more than the model's {self.config.max_input_tokens}, which hold about {fit} bp of it; "
                             f"cut it into windows of {fit} bp or less (the embed CLI: --window {fit}).")
        return ids, mask

    @staticmethod
    def _bar(progress: bool | None, total: int, desc: str, unit: str = "seq"):
        """A tqdm bar over ``total`` items; ``progress=None``: only from 256 items."""
        from tqdm.auto import tqdm

        show = total >= PROGRESS_FROM if progress is None else progress
        return tqdm(total=total, desc=desc, unit=unit, disable=not show)

    def _batches(self, seqs: list[str], batch_size: int, progress: bool | None, desc: str) -> Iterator[list[str]]:
        if batch_size < 1:
            raise InputError(f"batch_size must be positive, got {batch_size}.")
        with self._bar(progress, len(seqs), desc) as bar:
            for start in range(0, len(seqs), batch_size):
                yield seqs[start:start + batch_size]
                bar.update(min(batch_size, len(seqs) - start))

    def embed(self, seqs: Iterable[str], pool: Pool = "mean", batch_size: int = 16,
              progress: bool | None = None) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Encoder hidden states of each sequence, float32 on the CPU.

        Args:
            seqs: DNA strings (a single string counts as one sequence).
            pool: ``"mean"``: the mean over the sequence's own tokens (``[CLS]``, ``[SEP]`` and
                padding left out; a sequence with no token gives zeros); ``"cls"``: the ``[CLS]``
                vector (what the classifiers read); ``None``: every position.
            batch_size: sequences per forward pass.
            progress: a tqdm bar; ``None`` = only for lists of at least 256 sequences.

        Returns:
            ``[N, hidden]`` when pooled; with ``pool=None`` ``(hidden [N, T, hidden], mask [N, T])``,
            ``T`` the longest tokenized sequence with ``[CLS]`` and ``[SEP]``, ``mask`` True on real
            tokens (``[CLS]`` at 0, ``[SEP]`` last).
        """
        if pool not in ("mean", "cls", None):
            raise InputError(f"pool={pool!r}: use 'mean', 'cls' or None.")
        seqs = checked_sequences(seqs)
        pooled: list[torch.Tensor] = []
        states: list[tuple[torch.Tensor, torch.Tensor]] = []
        for batch in self._batches(seqs, batch_size, progress, "embedding"):
            ids, mask = self.encode(batch)
            with torch.inference_mode(), autocast(self.device, self.precision):
                device_mask = padding_mask_or_none(mask)
                device_mask = None if device_mask is None else device_mask.to(self.device)
                hidden = self._encoder(ids.to(self.device), device_mask)
            hidden = hidden.float().cpu()  # [B, T, hidden]
            if pool is None:
                states.append((hidden, mask))
            elif pool == "cls":
                pooled.append(hidden[:, 0])
            else:
                body = mask.clone()
                body[:, 0] = False
                body[torch.arange(len(batch)), mask.sum(1) - 1] = False  # [SEP]
                weights = body.unsqueeze(-1).float()
                pooled.append((hidden * weights).sum(1) / weights.sum(1).clamp(min=1.0))
        if pool is not None:
            return torch.cat(pooled) if pooled else torch.empty(0, self.config.hidden_size)
        width = max((h.shape[1] for h, _ in states), default=0)
        hidden = torch.cat([torch.nn.functional.pad(h, (0, 0, 0, width - h.shape[1])) for h, _ in states]) \
            if states else torch.zeros(0, 0, self.config.hidden_size)
        mask = torch.cat([torch.nn.functional.pad(m, (0, width - m.shape[1])) for _, m in states]) \
            if states else torch.zeros(0, 0, dtype=torch.bool)
        return hidden, mask

    def predict(self, seqs: Iterable[str], strands: str = "both", batch_size: int = 16,
                progress: bool | None = None) -> torch.Tensor:
        """Classifier probabilities of each sequence, float32 on the CPU.

        Scores exactly as ``python -m bigbird_dna.predict`` scores a window of the same bases: the
        same driver, tokenization and strand averaging (in batches of ``batch_size`` windows, a
        sequence's ``-`` strand right after its ``+`` strand).

        Args:
            seqs: DNA strings, each read on the strand given.
            strands: ``"both"`` (mean of the sequence and its reverse complement), ``"+"`` or ``"-"``.
            batch_size: windows (one per strand) per forward pass.
            progress: a tqdm bar; ``None`` = only for lists of at least 256 sequences.

        Returns:
            ``[N]`` for a one-output model (promoter probability), else ``[N, num_labels]``; for a
            ``classify`` model softmax probabilities ``[N, C]`` whose rows sum to 1, columns in
            :attr:`class_names` order.
        """
        if not self.num_labels:
            raise InputError(f"this is a '{self.task}' model without a classification head: nothing to predict; "
                             "use embed(), or load a fine-tuned classifier.")
        if strands not in STRAND_CHOICES:
            raise InputError(f"strands={strands!r}: use one of {sorted(STRAND_CHOICES)}.")
        seqs = checked_sequences(seqs)
        chosen = STRAND_CHOICES[strands]
        windows = (ScanWindow(f"seq{i}", 0, len(seq), strand, reverse_complement(seq) if strand == "-" else seq,
                              ambiguous_fraction(seq))
                   for batch in self._batches(seqs, batch_size, progress, "predicting")
                   for i, seq in enumerate(batch) for strand in chosen)
        scored = score_windows(self._predict_proba, self.tokenizer, windows, batch_size,
                               self.config.max_input_tokens, self.device, self.precision)
        rows = [scores for _, _, _, scores in combine_strands(scored, chosen, "mean")]
        probs = torch.stack(rows) if rows else torch.empty(0, self.num_labels)
        return probs[:, 0] if self.num_labels == 1 else probs

    def forward(self, scale: str) -> Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor]:
        """The batched scorer ``predict`` uses: ``(input_ids, mask) -> [B, C]`` logits (``"logit"``)
        or probabilities (``"probability"``), CUDA-graphed on a GPU."""
        return self._predict_proba if scale == "probability" else self._logits

    def attribute(self, seqs: Iterable[str], method: str = "integrated_gradients", target: str | int | None = None,
                  output: str = "logit", per_letter: bool = False, strands: str = "+",
                  span: tuple[int, int] | None = None, steps: int | None = None, batch_size: int = 16,
                  progress: bool | None = None) -> torch.Tensor:
        """Why a classifier scores each sequence: float32 per-base ``[N, L]``, or ``[N, L, 4]`` (``ACGT``)
        with ``per_letter``. ``method``: ``"integrated_gradients"``, ``"gradient_x_input"`` (the
        ``explain`` extra) or ``"ism"``; ``target``: a name or 0-based column. Arguments, shapes and
        conventions: :func:`bigbird_dna.attribution.attribute`."""
        from bigbird_dna.attribution import attribute

        seqs = checked_sequences(seqs)
        with self._bar(progress, len(seqs), "explaining") as bar:
            return attribute(self, seqs, method, target, output, per_letter, strands, span, steps, batch_size,
                             lambda n: bar.update(n) if method != "ism" else None)

    def score(self, seqs: Iterable[str], spans: Sequence[tuple[int, int]] | None = None, strands: str = "+",
              batch_size: int = 64, progress: bool | None = None) -> Likelihoods:
        """Masked-marginal log-likelihoods (natural log) of an MLM model, per base.

        Every token is masked on its own, one forward pass each: a sequence of ``T`` tokens costs
        ``T`` passes (a 510-bp sequence: 3.8 s on the tiny model, 2 CPU cores). A token's
        ``log p`` is shared equally by its bases; bases of tokens with N or IUPAC codes are NaN.
        See :mod:`bigbird_dna.inference.likelihood` for the method, spans and strands.

        Args:
            seqs: DNA strings (a single string counts as one sequence), each within the context.
            spans: ``None`` (every base), or one ``[a, b)`` per sequence (0-based, half-open) whose
                tokens are masked together in one pass, as ``variants`` scores an allele.
            strands: ``"+"`` (as given) or ``"both"`` (mean with the reverse complement's scores).
            batch_size: masked rows per forward pass.
            progress: a tqdm bar; ``None`` = only from 4,096 passes.

        Returns:
            :class:`~bigbird_dna.inference.likelihood.Likelihoods`: ``.per_base`` (float32 ``[L_i]`` per
            sequence), ``.sums`` and ``.means`` (``[N]``, NaN bases left out).
        """
        if self.output.kind is not MASKED_LM:
            raise InputError(f"this is a '{self.task}' model: score() needs the masked-LM head of an MLM export "
                             "(a pretraining run's export/), not a classifier.")
        return masked_likelihoods(self, checked_sequences(seqs), spans, strands, batch_size, progress)
