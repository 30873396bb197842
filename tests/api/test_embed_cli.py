"""``python -m bigbird_dna.embed``: records, sliding windows and BED intervals to HDF5, atomically."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from bigbird_dna import BigBirdDNA
from bigbird_dna.embed import main
from tests.conftest import run_cli
from tests.promoter.conftest import lambda_seq, write_fasta

SEQ = lambda_seq()
RECORDS = {"chrA": SEQ[:900], "chrB": SEQ[2000:2300]}


def test_windows_of_every_record_with_coordinates_and_the_apis_vectors(tmp_path, mlm_export):
    fasta = write_fasta(tmp_path / "g.fa.gz", RECORDS)
    out = main(["--model", str(mlm_export), str(fasta), "--window", "400", "--stride", "300", "--out",
                str(tmp_path / "w.h5"), "--device", "cpu", "--batch-size", "1"])
    with h5py.File(out) as h5:
        coords = list(zip(h5["record"].asstr()[:], h5["start"][:], h5["end"][:]))
        vectors = h5["embeddings"][:]
        assert h5.attrs["pool"] == "mean" and h5.attrs["window"] == 400 and h5.attrs["task"] == "mlm"
    assert coords == [("chrA", 0, 400), ("chrA", 300, 700), ("chrA", 500, 900), ("chrB", 0, 300)]
    model = BigBirdDNA.from_pretrained(mlm_export, device="cpu")
    expected = model.embed([RECORDS[r][s:e] for r, s, e in coords], batch_size=1).numpy()
    np.testing.assert_array_equal(vectors, expected)


def test_bed_intervals_of_a_genome(tmp_path, mlm_export):
    fasta = write_fasta(tmp_path / "g.fa", RECORDS)
    bed = tmp_path / "r.bed"
    bed.write_text("chrA\t10\t210\nchrB\t0\t100\n")
    out = main(["--model", str(mlm_export), "--bed", str(bed), "--fasta", str(fasta), "--pool", "cls",
                "--out", str(tmp_path / "b.h5"), "--device", "cpu"])
    with h5py.File(out) as h5:
        assert h5["embeddings"].shape == (2, BigBirdDNA.from_pretrained(mlm_export).config.hidden_size)
        assert list(h5["start"][:]) == [10, 0] and list(h5["end"][:]) == [210, 100]


@pytest.mark.parametrize("args, message", [
    (["--bed", "x.bed"], "--bed and --fasta go together"),
    ([], "nothing to embed"),
    (["missing.fa"], "input not found: missing.fa"),
])
def test_bad_input_is_one_error_line_and_exit_2(tmp_path, mlm_export, args, message):
    result = run_cli("bigbird_dna.embed", "--model", str(mlm_export), "--out", str(tmp_path / "x.h5"), *args)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert result.stderr.count("error:") == 1 and not (tmp_path / "x.h5").exists()


def test_a_window_too_long_for_the_model_leaves_no_file_and_says_what_fits(tmp_path, mlm_export):
    fasta = write_fasta(tmp_path / "g.fa", {"long": SEQ[:5000]})
    result = run_cli("bigbird_dna.embed", "--model", str(mlm_export), str(fasta), "--window", "5000",
                     "--out", str(tmp_path / "x.h5"))
    assert result.returncode == 2 and "more than the model's 256, which hold about" in result.stderr
    assert "--window" in result.stderr
    assert list(tmp_path.iterdir()) == [fasta]


def test_without_window_a_long_record_is_cut_into_the_models_own_windows(tmp_path, mlm_export):
    """The MLM's own window (its 1024-bp training windows, cut to what its 256 BPE tokens hold): a
    3-kbp record gives windows of it, a short record one vector."""
    import h5py

    fasta = write_fasta(tmp_path / "g.fa", {"long": SEQ[:3000], "short": SEQ[:300]})
    result = run_cli("bigbird_dna.embed", "--model", str(mlm_export), str(fasta), "--out", str(tmp_path / "x.h5"))
    assert result.returncode == 0, result.stderr
    with h5py.File(tmp_path / "x.h5") as h5:
        spans = list(zip(h5["record"].asstr()[:], h5["start"][:], h5["end"][:]))
        window = int(h5.attrs["model_window"])
    assert 300 < window <= 1024
    starts = list(range(0, 3000 - window + 1, window)) + ([3000 - window] if 3000 % window else [])
    assert spans == [("long", s, s + window) for s in starts] + [("short", 0, 300)]
