"""Published results on public DNA benchmarks, to set beside ours when a dataset carries a
benchmark's name: the one place those numbers live, each with its source, protocol and metric.

- **Genomic Benchmarks** (Grešová et al. 2023), top-1 **accuracy** in %, on the benchmark's own
  single train/test split. CNN, DNABERT and HyenaDNA as the HyenaDNA paper reports them (Nguyen et al.
  2023, NeurIPS); the benchmark's own baseline CNN as its paper reports it.
- **Nucleotide Transformer benchmark** (Dalla-Torre et al. 2023), as the Caduceus paper reports it
  (Schiff et al. 2024, ICML, Table 2): 10-fold cross-validation, with each task's own metric:
  **F1** for the promoter tasks, **accuracy** for splice sites, **MCC** for enhancers and histone marks.

A dataset is matched by its name (the folder name, or ``--name``), lower-cased, against each
benchmark's dataset names and the aliases of the folders the benchmark ships (e.g.
``human_ensembl_regulatory`` for the HyenaDNA paper's "Human Regulatory"). Nothing is matched
approximately: another name gets no published numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

HYENADNA = ("Nguyen et al. 2023, HyenaDNA: Long-Range Genomic Sequence Modeling at Single Nucleotide "
            "Resolution (NeurIPS), Genomic Benchmarks table")
GENOMIC_BENCHMARKS = ("Grešová et al. 2023, Genomic benchmarks: a collection of datasets for genomic sequence "
                      "classification (BMC Genomic Data), the benchmark's baseline CNN")
CADUCEUS = ("Schiff et al. 2024, Caduceus: Bi-Directional Equivariant Long-Range DNA Sequence Modeling "
            "(ICML), Table 2")

GB_PROTOCOL = "the benchmark's single train/test split"
NT_PROTOCOL = "10-fold cross-validation"


@dataclass(frozen=True)
class PublishedResult:
    """One source's scores on one dataset.

    Attributes:
        benchmark: the benchmark the dataset belongs to.
        dataset: the dataset's name in that benchmark.
        metric: which metric the scores are: ``accuracy``, ``f1`` or ``mcc`` (binary F1 and MCC of
            the positive class; accuracy is top-1), named as :mod:`bigbird_dna.evaluation.metrics`
            names ours.
        unit: ``"%"`` (a score times 100) or ``""`` (a fraction).
        protocol: how the scores were obtained (split, folds).
        scores: ``{model: score}`` in ``unit``, in the source's order.
        source: the citation.
    """

    benchmark: str
    dataset: str
    metric: str
    unit: str
    protocol: str
    scores: dict[str, float]
    source: str

    def as_fraction(self, model: str) -> float:
        """A score on the 0..1 scale of our metrics."""
        return self.scores[model] / (100.0 if self.unit == "%" else 1.0)


def _gb(dataset: str, cnn: float, dnabert: float, hyena: float) -> PublishedResult:
    return PublishedResult("Genomic Benchmarks", dataset, "accuracy", "%", GB_PROTOCOL,
                           {"CNN": cnn, "DNABERT": dnabert, "HyenaDNA": hyena}, HYENADNA)


def _gb_simple_cnn(dataset: str, accuracy: float) -> PublishedResult:
    return PublishedResult("Genomic Benchmarks", dataset, "accuracy", "%", GB_PROTOCOL,
                           {"benchmark CNN": accuracy}, GENOMIC_BENCHMARKS)


def _nt(dataset: str, metric: str, dnabert2: float, nt_v2: float, caduceus: float) -> PublishedResult:
    return PublishedResult("Nucleotide Transformer benchmark", dataset, metric, "", NT_PROTOCOL,
                           {"DNABERT-2": dnabert2, "NT-v2 500M": nt_v2, "Caduceus-Ph 1.9M": caduceus}, CADUCEUS)


PUBLISHED: tuple[PublishedResult, ...] = (
    _gb("human_nontata_promoters", 84.6, 85.6, 96.6),
    _gb("human_enhancers_cohn", 69.5, 74.0, 74.2),
    _gb("human_enhancers_ensembl", 68.9, 85.7, 89.2),
    _gb("demo_coding_vs_intergenomic", 87.6, 92.5, 91.3),
    _gb("demo_human_or_worm", 93.0, 96.5, 96.6),
    _gb("dummy_mouse_enhancers", 69.0, 66.9, 85.1),
    _gb("human_ocr_ensembl", 68.0, 75.1, 80.9),
    _gb("human_regulatory", 93.3, 88.1, 93.8),
    _gb_simple_cnn("human_nontata_promoters", 83.7),
    _gb_simple_cnn("demo_coding_vs_intergenomic", 87.3),
    _gb_simple_cnn("demo_human_or_worm", 92.7),
    _nt("promoter_all", "f1", 0.971, 0.976, 0.970),
    _nt("splice_sites_all", "accuracy", 0.939, 0.983, 0.940),
    _nt("enhancers", "mcc", 0.516, 0.548, 0.546),
    _nt("H3", "mcc", 0.785, 0.784, 0.815),
)

# The folder names the benchmarks ship, where the papers' tables shorten them.
ALIASES = {
    "demo_coding_vs_intergenomic_seqs": "demo_coding_vs_intergenomic",
    "dummy_mouse_enhancers_ensembl": "dummy_mouse_enhancers",
    "human_ensembl_regulatory": "human_regulatory",
}


def published_results(name: str) -> list[PublishedResult]:
    """Every published result for the dataset called ``name`` (case-insensitive; exact, or a
    shipped folder name of :data:`ALIASES`); empty for any other name."""
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    return [result for result in PUBLISHED if result.dataset.lower() == key]
