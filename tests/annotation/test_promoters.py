"""The promoter task: exact strand-aware windows, deduplicated TSSs, negatives' placement, splits."""

from __future__ import annotations

import pytest

from bigbird_dna.data.annotation.gff import read_annotation
from bigbird_dna.data.annotation.negatives import SiteIndex
from bigbird_dna.data.annotation.promoters import PromoterSettings, build_promoter_task
from bigbird_dna.data.annotation.split import drop_cross_split_overlaps, overlaps_other_split
from bigbird_dna.errors import InputError
from bigbird_dna.genome import open_genome
from bigbird_dna.genome.sequence import reverse_complement
from tests.annotation.conftest import EXPECTED_TSS, genome_sequences

SMALL = dict(min_tss_distance_bp=600, gene_body_tss_distance_bp=300)


def build(annotated, key="gff3", seed=0, **settings):
    with open_genome(annotated["fasta"]) as genome:
        annotation = read_annotation(annotated[key], genome.record_lengths)
        return build_promoter_task(genome, annotation, PromoterSettings(**{**SMALL, **settings}), seed), annotation


def all_samples(task):
    return [s for samples in task.samples.values() for s in samples]


def test_positive_windows_are_exact_and_strand_aware(annotated):
    task, _ = build(annotated)
    seqs = genome_sequences()
    positives = [s for s in all_samples(task) if s.kind == "promoter"]
    # kept: those inside one split; chrB:+100 runs off the record start, chrA:+16100 crosses train|val.
    kept = [t for t in EXPECTED_TSS if t not in {("chrB", "+", 100), ("chrA", "+", 16100)}]
    assert sorted((s.record, s.strand, s.start + 250 if s.strand == "+" else s.end - 251) for s in positives) == kept
    for s in positives:
        assert len(s.sequence) == 300 and s.label == 1
        forward = seqs[s.record][s.start:s.end]
        assert s.sequence == (reverse_complement(forward) if s.strand == "-" else forward)
    by_tss = {(s.record, s.strand): s for s in positives if s.record == "chrB"}
    minus = by_tss[("chrB", "-")]  # TSS 2999 on -: window [2950, 3250), TSS base at seq[250]
    assert (minus.start, minus.end) == (2950, 3250)
    assert minus.sequence[250] == reverse_complement(seqs["chrB"][2999])
    plus = next(s for s in positives if (s.record, s.strand, s.start) == ("chrA", "+", 1750))
    assert plus.sequence[250] == seqs["chrA"][2000] and plus.sequence == seqs["chrA"][1750:2050]


def test_tss_dedup_and_drop_counts(annotated):
    task, _ = build(annotated)
    assert task.report["tss"] == {"transcripts": 12, "before_dedup": 12, "after_dedup": 11}
    assert task.report["dropped"]["promoter"] == {"outside_record": 1, "crossing_split_boundary": 1, "too_many_n": 0}
    assert task.report["dropped"]["overlapping_another_split"] == 0


def test_gff3_and_gtf_give_the_same_task(annotated):
    from_gff, _ = build(annotated, "gff3")
    from_gtf, _ = build(annotated, "gtf_gz")
    assert from_gff.samples == from_gtf.samples


def test_negatives_keep_their_distance_from_every_tss(annotated):
    task, annotation = build(annotated)
    index = SiteIndex((t.record, t.tss) for t in annotation.transcripts)
    background = [s for s in all_samples(task) if s.kind == "background"]
    assert background
    for s in background:
        assert index.distance(s.record, s.start, s.end) >= 600
        assert "N" not in s.sequence  # the N block is never drawn (max_n_fraction 0.1)
    positives = [s for s in all_samples(task) if s.label == 1]
    negatives = [s for s in all_samples(task) if s.kind in ("background", "gene_body")]
    for n in negatives:  # never on a promoter window
        assert not any(p.record == n.record and p.start < n.end and n.start < p.end for p in positives)


def test_gene_body_negatives_lie_inside_a_transcript_on_its_strand(annotated):
    task, annotation = build(annotated)
    index = SiteIndex((t.record, t.tss) for t in annotation.transcripts)
    gene_body = [s for s in all_samples(task) if s.kind == "gene_body"]
    assert gene_body
    seqs = genome_sequences()
    for s in gene_body:
        hosts = [t for t in annotation.transcripts
                 if t.record == s.record and t.strand == s.strand and t.start <= s.start and s.end <= t.end]
        assert hosts, s
        assert any((s.start - t.tss if t.strand == "+" else t.tss - s.end + 1) >= 300 for t in hosts)
        assert index.distance(s.record, s.start, s.end) >= 300
        forward = seqs[s.record][s.start:s.end]
        assert s.sequence == (reverse_complement(forward) if s.strand == "-" else forward)


def test_shuffled_negatives_come_from_their_split_positives(annotated):
    task, _ = build(annotated, negatives={"background": 0, "gene_body": 0, "shuffled": 2})
    for split, samples in task.samples.items():
        positives = {(s.record, s.start, s.strand): s.sequence for s in samples if s.kind == "promoter"}
        shuffled = [s for s in samples if s.kind == "shuffled"]
        assert len(shuffled) == 2 * len(positives)
        for s in shuffled:
            source = positives[(s.record, s.start, s.strand)]
            assert sorted(source) == sorted(s.sequence) and s.label == 0


def test_no_window_overlaps_a_window_of_another_split(annotated):
    task, _ = build(annotated, negatives={"background": 2, "gene_body": 2, "shuffled": 1})
    for split, samples in task.samples.items():
        for s in samples:
            assert not overlaps_other_split(task.samples, split, s)
            assert any(r.record == s.record and r.start <= s.start and s.end <= r.end for r in task.regions[split])
    assert task.regions["val"][0].start == 16000 and task.regions["test"][0].start == 18000  # splits.py's cuts


def test_cross_split_guard_drops_overlaps():
    from bigbird_dna.data.annotation.promoters import Sample

    a = Sample("A", 1, "chrA", 100, 200, "+", "promoter")
    b = Sample("A", 0, "chrA", 150, 250, "+", "background")
    c = Sample("A", 0, "chrA", 200, 300, "+", "background")
    kept, dropped = drop_cross_split_overlaps({"train": [a], "val": [b, c], "test": []})
    assert dropped == 2 and kept == {"train": [], "val": [c], "test": []}  # a and b overlap each other


def test_record_lists_hold_out_whole_records(annotated):
    task, _ = build(annotated, val_records=("chrB",), test_records=("chrC",))
    assert {s.record for s in task.samples["val"]} == {"chrB"}
    assert {s.record for s in task.samples["test"]} == {"chrC"}
    assert {s.record for s in task.samples["train"]} == {"chrA"}
    assert task.report["dropped"]["promoter"]["crossing_split_boundary"] == 0


def test_same_seed_same_task_other_seed_other_negatives(annotated):
    one, _ = build(annotated, seed=3)
    assert one.samples == build(annotated, seed=3)[0].samples
    other = build(annotated, seed=4)[0]
    assert [s for s in one.samples["train"] if s.label] == [s for s in other.samples["train"] if s.label]
    assert one.samples["train"] != other.samples["train"]


@pytest.mark.parametrize("settings,message", [
    ({"negatives": {"random": 1}}, "unknown negative kind"),
    ({"holdout_fraction": 0.6}, "holdout_fraction"),
    ({"val_records": ("chrQ",)}, "'chrQ'"),
])
def test_bad_settings_are_input_errors(annotated, settings, message):
    with pytest.raises(InputError, match=message):
        build(annotated, **settings)
