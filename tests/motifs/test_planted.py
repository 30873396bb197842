"""Planted-motif tasks: every planted instance is where sites.bed says, on its strand; the rest of
each sequence is its genome window unchanged; the spacing rule's sequences have the spacing their
kind claims; the task is deterministic per seed, balanced, and loads with the labelled-data
readers. And the spacing task is what it claims: a presence-only score separates the presence
task's classes but not the spacing task's, while the relative position does."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from bigbird_dna.data.classes.files import read_table as read_class_table
from bigbird_dna.data.promoter.files import read_table
from bigbird_dna.errors import InputError
from bigbird_dna.genome import open_genome
from bigbird_dna.motifs.pwm import max_log_odds, site_scores
from tests.motifs.conftest import GENOME, make_task, read_rows, read_sites

pytest.importorskip("pyjaspar")


def _composite(sites, a_id):
    """``(order, gap)`` of a two-site sequence read in the composite's orientation: order ``AB`` or
    ``BA``, gap = bp between the first motif's end and the second's start."""
    (s1, e1, m1, strand), (s2, e2, m2, _) = sorted(sites)
    first = m1 if strand == "+" else m2
    return ("AB" if first == a_id else "BA"), s2 - e1


def test_sites_hold_the_planted_instances_and_nothing_else_changed(presence_task, spacing_task, pair):
    pfms = {m.id: m.pfm for m in pair}
    with open_genome(GENOME) as genome:
        for task in (presence_task, spacing_task):
            sites = read_sites(task)
            on_strand, other_strand = [], []
            for row in read_rows(task):
                original = genome.fetch(row["record"], int(row["start"]), int(row["end"]))
                assert len(row["sequence"]) == len(original) == int(row["end"]) - int(row["start"])
                changed = {i for i, (a, b) in enumerate(zip(row["sequence"], original)) if a != b}
                covered = {i for start, end, _, _ in sites.get(row["name"], []) for i in range(start, end)}
                assert changed <= covered, row["name"]  # outside its sites a sequence is its genome window
                for start, end, motif_id, strand in sites.get(row["name"], []):
                    assert end - start == len(pfms[motif_id])
                    scores = site_scores(row["sequence"][start:end], pfms[motif_id])[0]
                    on_strand.append(scores[0 if strand == "+" else 1])
                    other_strand.append(scores[1 if strand == "+" else 0])
            on_strand, other_strand = np.array(on_strand), np.array(other_strand)
            # sampled instances vary: most score far above chance (background's 99th percentile is < 2 bits)
            assert np.median(on_strand) > 8 and (on_strand > 0).mean() > 0.97
            assert (on_strand > other_strand).mean() > 0.95


def test_presence_positives_carry_the_motif_and_negatives_carry_nothing(presence_task, pair):
    sites = read_sites(presence_task)
    rows = read_rows(presence_task)
    for row in rows:
        planted = sites.get(row["name"], [])
        if row["label"] == "1":
            assert row["kind"] == "positive" and [s[2] for s in planted] == [pair[0].id]
        else:
            assert row["kind"] == "background" and planted == []
    assert sum(len(v) for v in sites.values()) == sum(row["label"] == "1" for row in rows)


def test_one_of_positives_carry_exactly_one_of_the_motifs_each_about_equally_often(tmp_path, pair):
    task = make_task(tmp_path / "task", pair, rule="one_of", num=400)
    sites, rows = read_sites(task), read_rows(task)
    chosen = []
    for row in rows:
        planted = sites.get(row["name"], [])
        assert len(planted) == (1 if row["label"] == "1" else 0), row["name"]
        chosen += [s[2] for s in planted]
    counts = [chosen.count(m.id) for m in pair]
    assert sum(counts) == 200 and min(counts) > 70, counts  # binomial(200, 0.5): 70 is 4 sd below 100


def test_spacing_sequences_have_the_spacing_their_kind_claims(spacing_task, pair):
    sites = read_sites(spacing_task)
    kinds = set()
    for row in read_rows(spacing_task):
        planted = sites[row["name"]]
        assert sorted(s[2] for s in planted) == sorted(m.id for m in pair) and len({s[3] for s in planted}) == 1
        order, gap = _composite(planted, pair[0].id)
        expected = {"positive": ("AB", 10, 20), "far": ("AB", 40, 80), "swapped": ("BA", 10, 20)}[row["kind"]]
        assert order == expected[0] and expected[1] <= gap <= expected[2], (row["name"], row["kind"], order, gap)
        assert (row["label"] == "1") == (row["kind"] == "positive")
        kinds.add(row["kind"])
    assert kinds == {"positive", "far", "swapped"}


def test_every_split_is_balanced_and_the_manifest_counts_it(spacing_task):
    manifest = json.loads((spacing_task / "manifest.json").read_text())
    rows = read_rows(spacing_task)
    for split, total in {"train": 1600, "val": 200, "test": 200}.items():
        labels = [row["label"] for row in rows if row["split"] == split]
        assert len(labels) == total == manifest["totals"][split]
        assert labels.count("1") == labels.count("0") == manifest["counts"][split]["labels"]["1"]
    assert [(m["role"], m["id"].split(".")[0]) for m in manifest["motifs"]] == [("A", "MA0139"), ("B", "MA0148")]
    assert manifest["windows"]["train_000000"] == [rows[0]["record"], int(rows[0]["start"]), int(rows[0]["end"])]


def test_the_same_seed_gives_the_same_task_and_another_seed_another(tmp_path, pair):
    folders = [make_task(tmp_path / name, pair, rule="spacing", num=200, seed=seed)
               for name, seed in (("a", 3), ("b", 3), ("c", 4))]
    files = ("train.tsv", "val.tsv", "test.tsv", "sites.bed", "manifest.json")
    assert all((folders[0] / f).read_bytes() == (folders[1] / f).read_bytes() for f in files)
    assert (folders[0] / "train.tsv").read_bytes() != (folders[2] / "train.tsv").read_bytes()


def test_the_labelled_data_readers_load_every_split(presence_task):
    for split, size in (("train", 800), ("val", 100), ("test", 100)):
        binary = read_table(presence_task / f"{split}.tsv")
        assert len(binary.seqs) == size and np.asarray(binary.labels).mean() == 0.5
        classes = read_class_table(presence_task / f"{split}.tsv")
        assert len(classes.seqs) == size


def test_windows_come_from_any_fasta_never_overlap_and_hold_no_n(tmp_path, pair):
    rng = np.random.default_rng(0)
    records = {"chr1": "".join(rng.choice(list("ACGT"), 3000)) + "N" * 500 + "".join(rng.choice(list("ACGT"), 2000)),
               "chr2": "".join(rng.choice(list("ACGTN"), 4000, p=[0.245, 0.245, 0.245, 0.245, 0.02])), "tiny": "ACGT"}
    fasta = tmp_path / "genome.fa"
    fasta.write_text("".join(f">{name} test\n{seq}\n" for name, seq in records.items()))
    task = make_task(tmp_path / "task", pair[:1], genome=fasta, num=40, length=(80, 120), seed=1)
    spans = sorted((row["record"], int(row["start"]), int(row["end"])) for row in read_rows(task))
    for (record, start, end), following in zip(spans, spans[1:] + [None]):
        assert 80 <= end - start <= 120 and "N" not in records[record][start:end]
        assert following is None or following[0] != record or end <= following[1]


@pytest.mark.parametrize("motifs, settings, message", [
    (1, {"rule": "spacing"}, "exactly two motifs"),
    (2, {"rule": "presence", "length": (20, 20)}, "cannot hold"),
    (2, {"rule": "spacing", "spacing": (20, 10)}, "LOW-HIGH"),
    (2, {"rule": "spacing", "far_spacing": (15, 30)}, "must start above"),
    (2, {"rule": "spacing", "negatives": ("near",)}, "far, swapped"),
    (1, {"rule": "presence", "num": 100000}, "room for"),
    (1, {"rule": "presence", "val_fraction": 0.5, "test_fraction": 0.5}, "sum to less than 1"),
    (1, {"rule": "motif"}, "unknown rule"),
])
def test_impossible_settings_are_input_errors(tmp_path, pair, motifs, settings, message):
    with pytest.raises(InputError, match=message):
        make_task(tmp_path / "task", pair[:motifs], **settings)
    assert not (tmp_path / "task").exists()


def test_a_spacing_task_of_one_motif_with_itself_refuses_swapped_negatives(tmp_path, pair):
    with pytest.raises(InputError, match="swapped negatives are positives"):
        make_task(tmp_path / "task", [pair[0], pair[0]], rule="spacing")
    make_task(tmp_path / "far", [pair[0], pair[0]], rule="spacing", negatives=("far",), num=20)


def _presence_scores(rows, motif):
    return np.array([max_log_odds(row["sequence"], motif.pfm) for row in rows])


def _spacing_score(row, a, b):
    """1 when the best A hit and the best B hit sit as in a positive: ``A, 10-20 bp, B`` on one strand."""
    hits = []
    for motif in (a, b):
        scores = site_scores(row["sequence"], motif.pfm)
        start, strand = np.unravel_index(scores.argmax(), scores.shape)
        hits.append((int(start), int(start) + motif.length, int(strand)))
    (a_start, a_end, a_strand), (b_start, b_end, b_strand) = hits
    gap = b_start - a_end if a_strand == 0 else a_start - b_end
    return float(a_strand == b_strand and 10 <= gap <= 20)


def test_presence_alone_separates_the_presence_task_but_not_the_spacing_task(presence_task, spacing_task, pair):
    a, b = pair
    presence_rows = read_rows(presence_task)
    presence_auroc = roc_auc_score([int(r["label"]) for r in presence_rows], _presence_scores(presence_rows, a))
    rows = read_rows(spacing_task)
    labels = [int(r["label"]) for r in rows]
    spacing_aurocs = {m.name: roc_auc_score(labels, _presence_scores(rows, m)) for m in pair}
    both = roc_auc_score(labels, _presence_scores(rows, a) + _presence_scores(rows, b))
    relative = roc_auc_score(labels, [_spacing_score(r, a, b) for r in rows])
    print(f"presence task, max log-odds of {a.name}: AUROC {presence_auroc:.3f}; spacing task: "
          f"{', '.join(f'{k} {v:.3f}' for k, v in spacing_aurocs.items())}, sum {both:.3f}; "
          f"best hits' relative position {relative:.3f}")
    assert presence_auroc > 0.97
    assert all(abs(v - 0.5) < 0.05 for v in [*spacing_aurocs.values(), both])  # 2000 rows: SE ~0.013
    assert relative > 0.8
