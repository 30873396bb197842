"""``python -m bigbird_dna.variants`` on models trained in the session: the planted-promoter delta,
REF mismatches, multi-allelic splitting, plain vs gzip, the MLM llr and one-line input errors."""

from __future__ import annotations

import gzip
import math

import pytest

from bigbird_dna.demo.synthetic_promoters import ELEMENT, planted_sequences
from bigbird_dna.variants.__main__ import main
from tests.promoter.conftest import lambda_seq, write_fasta

ELEMENT_AT = 165  # 0-based start of the element in a planted sequence (tss_index 200)
HEADER = "##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"


def _vcf_line(chrom: str, pos: int, ref: str, alt: str) -> str:
    return f"{chrom}\t{pos}\t.\t{ref}\t{alt}\t.\t.\t.\n"


def _rows(path) -> list[dict[str, str]]:
    lines = path.read_text().splitlines()
    assert lines[0].startswith("# bigbird_dna variants ")
    columns = lines[1].split("\t")
    return [dict(zip(columns, line.split("\t"))) for line in lines[2:]]


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """A genome whose contig ``prom`` is an unseen planted promoter (240 bp, one prediction window)."""
    seqs, labels = planted_sequences(20, 240, 200, seed=7)
    seq = next(s for s, y in zip(seqs, labels) if y == 1)
    assert seq[ELEMENT_AT:ELEMENT_AT + len(ELEMENT)] == ELEMENT
    folder = tmp_path_factory.mktemp("planted")
    return seq, write_fasta(folder / "genome.fa", {"prom": seq})


def test_destroying_the_motif_drops_the_score_far_change_does_not(tmp_path, element_classifier, planted, capsys):
    seq, fasta = planted
    box10 = ELEMENT_AT + 22  # 0-based start of the -10 box TATAAT
    far = 5
    wrong = "A" if seq[far + 10] != "A" else "C"
    other = "G" if seq[far] != "G" else "T"
    scrambled = "".join(sorted(ELEMENT, key=lambda b: "TAGC".index(b)))  # the element's bases, reordered
    vcf = HEADER + "".join([
        _vcf_line("prom", ELEMENT_AT + 1, ELEMENT, scrambled),  # the whole element destroyed (an MNP)
        _vcf_line("prom", box10 + 1, "TATAAT", "GCGCGC"),  # the -10 box rewritten
        _vcf_line("prom", far + 1, seq[far], ",".join(b for b in "ACGT" if b != seq[far])),  # far, multi-allelic
        _vcf_line("prom", far + 11, wrong, other),  # REF disagrees with the genome
        _vcf_line("prom", 50, seq[49], "<DEL>"),
    ])
    (tmp_path / "v.vcf").write_text(vcf)
    with gzip.open(tmp_path / "v.vcf.gz", "wt") as handle:
        handle.write(vcf)
    out = main(["--model", str(element_classifier), "--fasta", str(fasta), "--vcf", str(tmp_path / "v.vcf"),
                "--out", str(tmp_path / "plain"), "--device", "cpu"])
    err = capsys.readouterr().err
    rows = _rows(out)
    element, box, far_rows = rows[0], rows[1], rows[2:5]
    assert [(r["pos"], r["alt"]) for r in far_rows] == [(str(far + 1), b) for b in "ACGT" if b != seq[far]]
    assert "llr" not in element and all(r["ref_match"] == "1" for r in rows[:5]) and rows[5]["ref_match"] == "0"
    # The element is read on one strand (probability ~1 there, ~0 on the other), and the two strands
    # are averaged: a planted promoter scores ~0.5, so -0.5 is the largest possible drop.
    assert float(element["ref_score"]) > 0.45
    assert float(element["delta"]) < -0.4, element
    assert float(box["delta"]) < -0.05, box
    assert max(abs(float(r["delta"])) for r in far_rows) < 0.01, far_rows
    assert float(element["cos_dist"]) > max(float(r["cos_dist"]) for r in far_rows)
    assert "1 REF alleles disagree with the genome (first at line 6)" in err and "1 <symbolic>" in err
    gz = main(["--model", str(element_classifier), "--fasta", str(fasta), "--vcf", str(tmp_path / "v.vcf.gz"),
               "--out", str(tmp_path / "gz"), "--device", "cpu"])
    assert gz.read_text().splitlines()[1:] == out.read_text().splitlines()[1:]
    with pytest.raises(SystemExit) as stop:
        main(["--model", str(element_classifier), "--fasta", str(fasta), "--vcf", str(tmp_path / "v.vcf"),
              "--out", str(tmp_path / "strict"), "--device", "cpu", "--strict"])
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and err[-1].startswith("error: ") and "line 6" in err[-1] and "--strict" in err[-1]
    assert not (tmp_path / "strict.tsv").exists()


def test_mlm_llr_is_finite_and_zero_for_no_change(tmp_path, mlm_export, capsys):
    seq = lambda_seq()[:3000]
    fasta = write_fasta(tmp_path / "g.fa", {"chrA": seq})
    variants = [("chrA", 1500, seq[1499], "A" if seq[1499] != "A" else "C"),  # SNV
                ("chrA", 1600, seq[1599:1603], seq[1599]),  # 3-bp deletion
                ("chrA", 1700, seq[1699], seq[1699] + "GATTACA"),  # insertion
                ("chrA", 2, seq[1], seq[1]),  # no change, at the contig start
                ("chrA", 2999, seq[2998], "T" if seq[2998] != "T" else "G")]  # near the end
    (tmp_path / "v.tsv").write_text("".join(f"{c}\t{p}\t{r}\t{a}\n" for c, p, r, a in variants))
    out = main(["--model", str(mlm_export), "--fasta", str(fasta), "--tsv", str(tmp_path / "v.tsv"),
                "--out", str(tmp_path / "mlm"), "--device", "cpu", "--window", "200"])
    rows = _rows(out)
    print("\n".join(f"{r['pos']} {r['ref']}>{r['alt']} llr={r['llr']} cos={r['cos_dist']}" for r in rows))
    assert len(rows) == 5 and "delta" not in rows[0]
    assert all(math.isfinite(float(r["llr"])) and float(r["cos_dist"]) >= -1e-6 for r in rows)
    assert float(rows[3]["llr"]) == 0.0 and abs(float(rows[3]["cos_dist"])) < 1e-6


@pytest.mark.parametrize("line,message", [(_vcf_line("chrZ", 5, "A", "C"), "'chrZ' is not in the genome"),
                                          (_vcf_line("chrA", 99999, "A", "C"), "past the end")])
def test_bad_input_is_one_error_line_naming_the_line(tmp_path, mlm_export, capsys, line, message):
    fasta = write_fasta(tmp_path / "g.fa", {"chrA": lambda_seq()[:500]})
    (tmp_path / "v.vcf").write_text(HEADER + line)
    with pytest.raises(SystemExit) as stop:
        main(["--model", str(mlm_export), "--fasta", str(fasta), "--vcf", str(tmp_path / "v.vcf"),
              "--out", str(tmp_path / "x"), "--device", "cpu"])
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and len(err) == 1 and err[0].startswith("error: ")
    assert "v.vcf line 3" in err[0] and message in err[0]
    assert not (tmp_path / "x.tsv").exists()


def test_an_empty_vcf_is_an_error_and_writes_nothing(tmp_path, mlm_export, capsys):
    fasta = write_fasta(tmp_path / "g.fa", {"chrA": lambda_seq()[:500]})
    (tmp_path / "v.vcf").write_text(HEADER)
    with pytest.raises(SystemExit) as stop:
        main(["--model", str(mlm_export), "--fasta", str(fasta), "--vcf", str(tmp_path / "v.vcf"),
              "--out", str(tmp_path / "x"), "--device", "cpu"])
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and len(err) == 1 and "holds no variant" in err[0], err
    assert not list(tmp_path.glob("x*")) and not list(tmp_path.glob(".x*"))


def test_a_slow_scan_writes_a_progress_line_at_least_every_interval(tmp_path, mlm_export, capsys, monkeypatch):
    """Not on a terminal, a line comes at least every EVERY_S seconds (30 s; 0.05 s here) however
    long one chunk of variants takes (each chunk is slowed to 0.3 s)."""
    import time

    from bigbird_dna.runtime import heartbeat
    from bigbird_dna.variants.output import VariantWriter

    monkeypatch.setattr(heartbeat, "EVERY_S", 0.05)
    write = VariantWriter.write
    monkeypatch.setattr(VariantWriter, "write", lambda self, *a: (time.sleep(0.3), write(self, *a))[1])
    fasta = write_fasta(tmp_path / "g.fa", {"chrA": lambda_seq()[:500]})
    (tmp_path / "v.vcf").write_text(HEADER + _vcf_line("chrA", 100, lambda_seq()[99], "N"))
    main(["--model", str(mlm_export), "--fasta", str(fasta), "--vcf", str(tmp_path / "v.vcf"),
          "--out", str(tmp_path / "x"), "--device", "cpu"])
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("scoring variants:")]
    assert len(lines) >= 4, lines  # 0.3 s at one line per 0.05 s, and the last one
    assert lines[-1].startswith("scoring variants: 1 variant")
