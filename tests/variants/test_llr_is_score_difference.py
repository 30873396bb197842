"""``variants``' MLM ``llr`` is a difference of :meth:`BigBirdDNA.score` outputs: for SNVs with one base
per token, the alt window's per-base score at the allele minus the ref window's (both strands), to 1e-5.

The scores are computed twice on two different paths: the CLI (allele span masked, windows batched
with other variants) and ``model.score`` on each window (every base masked in turn, one sequence).
"""

from __future__ import annotations

import numpy as np

from bigbird_dna import BigBirdDNA
from bigbird_dna.variants.__main__ import main
from tests.likelihood.conftest import char_mlm_export  # noqa: F401  (fixture)
from tests.promoter.conftest import lambda_seq, write_fasta

WINDOW = 120


def test_cli_llr_of_snvs_equals_the_difference_of_per_base_scores(tmp_path, char_mlm_export):  # noqa: F811
    seq = lambda_seq()[:2000]
    fasta = write_fasta(tmp_path / "g.fa", {"chrA": seq})
    positions = [30, 700, 701, 1500, 1990]  # 1-based; near both contig ends, where windows shift
    snvs = [(p, seq[p - 1], next(b for b in "TGCA" if b != seq[p - 1])) for p in positions]
    (tmp_path / "v.tsv").write_text("".join(f"chrA\t{p}\t{r}\t{a}\n" for p, r, a in snvs))
    out = main(["--model", str(char_mlm_export), "--fasta", str(fasta), "--tsv", str(tmp_path / "v.tsv"),
                "--out", str(tmp_path / "snv"), "--device", "cpu", "--window", str(WINDOW), "--batch-size", "3"])
    lines = out.read_text().splitlines()
    columns = lines[1].split("\t")
    llr = [float(dict(zip(columns, line.split("\t")))["llr"]) for line in lines[2:]]

    model = BigBirdDNA.from_pretrained(char_mlm_export, device="cpu")
    expected = []
    for p, ref, alt in snvs:
        start = min(max(0, p - 1 - WINDOW // 2), len(seq) - WINDOW)  # variants' window: centred, moved inwards
        window = seq[start:start + WINDOW]
        i = p - 1 - start
        alt_window = window[:i] + alt + window[i + 1:]
        ref_score, alt_score = model.score([window, alt_window], strands="both").per_base
        expected.append(alt_score[i].item() - ref_score[i].item())
    print("llr", llr, "\nscore differences", expected)
    assert np.abs(expected).max() > 0.01  # the trained model does tell the alleles apart
    np.testing.assert_allclose(llr, expected, atol=1e-5, rtol=0)
