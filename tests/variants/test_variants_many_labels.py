"""Variant scores of a many-label (chromatin) classifier: ``PREFIX.tsv`` holds the largest |delta|,
``PREFIX.h5`` every label's ref, alt and delta, and both agree with ``BigBirdDNA.predict``."""

from __future__ import annotations

import h5py
import numpy as np
import torch

from bigbird_dna import BigBirdDNA
from bigbird_dna.model.export import write_export
from bigbird_dna.tasks.chromatin import ChromatinTask
from bigbird_dna.variants.__main__ import main
from tests.promoter.conftest import TINY_MODEL, lambda_seq, tiny_tokenizer, write_fasta  # noqa: F401 (fixture)

LABELS = ["DNase_A", "CTCF_B", "H3K4me3_C"]
WINDOW = 200


def _chromatin_export(folder, tokenizer):
    """An untrained 3-label chromatin export (random head: every label responds differently)."""
    torch.manual_seed(0)
    model = {**TINY_MODEL, "vocab_size": tokenizer.vocab_size, "pad_id": 0}
    module = ChromatinTask(model, {}, num_labels=len(LABELS), pos_weight=None, label_names=LABELS,
                           tokenizer_sha256=tokenizer.sha256)
    module.eval()
    task_config = {"name": "chromatin", "label_names": LABELS, "predict_window_bp": WINDOW}
    return write_export(folder / "export", "chromatin", module.state_dict(), module.config.to_dict(), tokenizer,
                        task_config=task_config)


def test_every_label_is_written_to_hdf5_and_matches_predict(tmp_path, tiny_tokenizer):
    export = _chromatin_export(tmp_path, tiny_tokenizer)
    seq = lambda_seq()[:1000]
    fasta = write_fasta(tmp_path / "genome.fa", {"chrL": seq})
    pos = [301, 500, 702]  # 1-based, as in VCF
    alts = ["A" if seq[p - 1] != "A" else "C" for p in pos]
    (tmp_path / "v.tsv").write_text("".join(f"chrL\t{p}\t{seq[p - 1]}\t{a}\n" for p, a in zip(pos, alts)))
    out = main(["--model", str(export), "--fasta", str(fasta), "--tsv", str(tmp_path / "v.tsv"),
                "--out", str(tmp_path / "scores"), "--device", "cpu", "--window", str(WINDOW)])
    lines = out.read_text().splitlines()
    columns = lines[1].split("\t")
    rows = [dict(zip(columns, line.split("\t"))) for line in lines[2:]]
    assert "max_abs_delta" in columns and "delta" not in columns and len(rows) == 3

    with h5py.File(tmp_path / "scores.h5") as h5:
        assert [n.decode() for n in h5["label_names"][:]] == LABELS
        ref, alt, delta = h5["ref"][:], h5["alt"][:], h5["delta"][:]
        assert ref.shape == alt.shape == delta.shape == (3, len(LABELS))
        assert list(h5["pos"][:]) == pos and [a.decode() for a in h5["alt_allele"][:]] == alts
        assert h5.attrs["task"] == "chromatin"
    np.testing.assert_allclose(delta, alt - ref, atol=1e-6)
    assert np.abs(delta).max() > 0  # the alleles change some label's score
    np.testing.assert_allclose([float(r["max_abs_delta"]) for r in rows], np.abs(delta).max(1), rtol=1e-4)

    # The ref scores are BigBirdDNA.predict on the variant-centred ref window (0-based [p-1-W/2, p-1+W/2)).
    model = BigBirdDNA.from_pretrained(export, device="cpu")
    windows = [seq[p - 1 - WINDOW // 2:p - 1 + WINDOW // 2] for p in pos]
    np.testing.assert_allclose(ref, model.predict(windows).numpy(), atol=1e-5)
