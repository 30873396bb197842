"""``python -m bigbird_dna.score``: tiling regions so every base is scored with context on both sides,
bedGraph and bigWig output, and one-line input errors."""

from __future__ import annotations

import numpy as np
import pytest

from bigbird_dna import BigBirdDNA
from bigbird_dna.demo.markov_genome import MarkovSource
from bigbird_dna.score.__main__ import main
from tests.likelihood.conftest import markov_masked_log_probs, markov_oracle
from tests.promoter.conftest import write_fasta


def _bedgraph(path) -> dict[tuple[str, int], float]:
    """``(chrom, base) -> value`` of a per-base bedGraph (0-based)."""
    lines = path.read_text().splitlines()
    assert lines[0].startswith(f'track type=bedGraph name="{path.name}"')  # the final name, not the temporary one
    values = {}
    for line in lines[1:]:
        chrom, start, end, value = line.split("\t")
        for base in range(int(start), int(end)):
            values[chrom, base] = float(value)
    return values


def test_every_base_gets_the_exact_marginal_from_a_window_with_context_on_both_sides(tmp_path, monkeypatch,
                                                                                      char_export, capsys):
    """An order-3 Markov oracle: a base scored within 3 bases of a window edge inside the contig would
    get a different value than its exact marginal given the whole contig (8-base windows would do so).
    Regions: two overlapping --region strings (1-based, inclusive, merged) and a BED line (0-based)."""
    source = MarkovSource.peaky(order=3, alpha=0.3, seed=5)
    contigs = {"m1": source.sample(400, seed=1), "m2": source.sample(150, seed=2)}
    fasta = write_fasta(tmp_path / "g.fa", contigs)
    (tmp_path / "r.bed").write_text("m2\t0\t100\n")
    oracle = markov_oracle(BigBirdDNA.from_pretrained(char_export, device="cpu"), source)
    monkeypatch.setattr(BigBirdDNA, "from_pretrained", classmethod(lambda cls, *args, **kwargs: oracle))
    out = main([str(fasta), str(char_export), "--region", "m1:51-350", "--region", "m1:301-380",
                "--bed", str(tmp_path / "r.bed"), "--out", str(tmp_path / "s.bedGraph"), "--window", "32"])
    values = _bedgraph(out)
    expected_bases = [("m1", b) for b in range(50, 380)] + [("m2", b) for b in range(100)]
    assert sorted(values) == sorted(expected_bases)
    for name, seq in contigs.items():
        true = markov_masked_log_probs(source, seq)[np.arange(len(seq)), ["ACGT".index(c) for c in seq]]
        got = [(values[name, b], true[b]) for b in range(len(seq)) if (name, b) in values]
        np.testing.assert_allclose(*zip(*got), atol=1e-5, rtol=0)
    assert "430 bases scored in" in capsys.readouterr().err


def test_bigwig_holds_the_bedgraph_values_and_n_bases_have_none(tmp_path, char_export):
    import pyBigWig  # the tracks extra, as --out .bw needs
    rng = np.random.default_rng(0)
    seq = "".join(rng.choice(list("ACGT"), 300))
    seq = seq[:100] + "NNNN" + seq[104:]
    fasta = write_fasta(tmp_path / "g.fa", {"c": seq})
    args = [str(fasta), str(char_export), "--region", "c:1-250", "--window", "64"]
    values = _bedgraph(main([*args, "--out", str(tmp_path / "s.bedGraph")]))
    main([*args, "--out", str(tmp_path / "s.bw")])
    assert sorted(b for _, b in values) == [b for b in range(250) if not 100 <= b < 104]
    track = pyBigWig.open(str(tmp_path / "s.bw"))
    assert track.chroms() == {"c": 300}
    got = np.array(track.values("c", 0, 250))
    assert np.isnan(got[100:104]).all() and np.isnan(track.values("c", 250, 300)).all()
    np.testing.assert_allclose(got[[b for _, b in values]], list(values.values()), atol=1e-6)


@pytest.mark.parametrize("extra, message", [
    (["--region", "chrZ:1-10"], "contig 'chrZ' is not in the genome"),
    (["--region", "c:90-101"], "past the end of c (100 bp"),
    (["--region", "c:10"], "write chr:start-end (1-based, inclusive"),
    (["--region", "c:1-10", "--out", "x.txt"], "end the name in .bedGraph"),
    (["--classifier"], "is a 'promoter' model; a likelihood track needs an MLM export"),
])
def test_bad_input_is_one_error_line_and_no_file(tmp_path, char_export, capsys, extra, message):
    from bigbird_dna.tokenizer import char_tokenizer
    from tests.promoter.conftest import make_export

    fasta = write_fasta(tmp_path / "g.fa", {"c": "ACGT" * 25})
    model = char_export
    if extra == ["--classifier"]:
        model, extra = make_export(tmp_path / "p", "promoter", char_tokenizer()), ["--region", "c:1-10"]
    out = tmp_path / "s.bedGraph"
    with pytest.raises(SystemExit) as stop:
        main([str(fasta), str(model), "--out", str(out), *extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and len(err) == 1 and err[0].startswith("error: ") and message in err[0], err
    assert not out.exists() and not list(tmp_path.glob(".s.bedGraph*"))


def test_a_slow_track_writes_a_progress_line_at_least_every_interval(tmp_path, monkeypatch, char_export, capsys):
    """In a log, scoring shows it is alive (every EVERY_S: 30 s; 0.05 s here) with a slowed model,
    and ends with a line saying what it wrote."""
    import time

    from bigbird_dna.runtime import heartbeat

    monkeypatch.setattr(heartbeat, "EVERY_S", 0.05)
    score = BigBirdDNA.score
    monkeypatch.setattr(BigBirdDNA, "score", lambda self, *a, **k: (time.sleep(0.2), score(self, *a, **k))[1])
    fasta = write_fasta(tmp_path / "g.fa", {"m1": "ACGT" * 60})
    main([str(fasta), str(char_export), "--region", "m1:1-200", "--out", str(tmp_path / "s.bedGraph"),
          "--window", "64"])
    err = capsys.readouterr().err.splitlines()
    beats = [line for line in err if line.startswith("scoring windows:")]
    assert len(beats) >= 4 and "windows (100%" in beats[-1], err
    assert err[-1].startswith(f"wrote {tmp_path / 's.bedGraph'}")
