"""The splice tasks: positives exactly at the annotated cuts on both strands, GT/AG-matched decoys
never at a site, deduplication, record-end drops, dinucleotide counts, ratios and seeds."""

from __future__ import annotations

import numpy as np
import pytest

from bigbird_dna.data.annotation.gff import read_annotation
from bigbird_dna.data.annotation.negatives import SiteIndex
from bigbird_dna.data.annotation.splice import SpliceSettings, build_splice_task
from bigbird_dna.data.annotation.splice_sites import SITES, introns
from bigbird_dna.data.annotation.split import overlaps_other_split
from bigbird_dna.errors import InputError
from bigbird_dna.genome import open_genome
from bigbird_dna.genome.sequence import reverse_complement
from tests.annotation.conftest import EXPECTED_ACCEPTORS, EXPECTED_DONORS, LENGTHS, genome_sequences, gff3_text

EXPECTED = {"donor": EXPECTED_DONORS, "acceptor": EXPECTED_ACCEPTORS}
# chrB:+150 (a donor 150 bp from chrB's start) runs off the record; chrA:+16150 crosses train|val (16000).
DROPPED = {"donor": {("chrB", "+", 150), ("chrA", "+", 16150)}, "acceptor": set()}


def build(annotated, site="donor", key="gff3", seed=0, **settings):
    with open_genome(annotated["fasta"]) as genome:
        annotation = read_annotation(annotated[key], genome.record_lengths)
        return build_splice_task(genome, annotation, SpliceSettings(site=site, **settings), seed)


def of_kind(task, kind):
    return [s for samples in task.samples.values() for s in samples if s.kind == kind]


def cut_of(sample, upstream_bp=200, downstream_bp=200):
    """The cut a window was built around (samples.window_at_cut, inverted)."""
    return sample.start + (upstream_bp if sample.strand == "+" else downstream_bp)


def oriented(seqs, s):
    forward = seqs[s.record][s.start:s.end]
    return reverse_complement(forward) if s.strand == "-" else forward


@pytest.mark.parametrize("site", ["donor", "acceptor"])
def test_positives_sit_exactly_at_the_annotated_sites(annotated, site):
    task = build(annotated, site)
    seqs = genome_sequences()
    positives = of_kind(task, site)
    assert sorted((s.record, s.strand, cut_of(s)) for s in positives) == \
        [x for x in EXPECTED[site] if x not in DROPPED[site]]
    kind = SITES[site]
    for s in positives:
        assert s.label == 1 and len(s.sequence) == 400 and s.sequence == oriented(seqs, s)
        expected = "GC" if (s.record, s.strand, cut_of(s)) == ("chrB", "-", 2200) else kind.canonical
        assert s.sequence[200 + kind.offset:202 + kind.offset] == expected


def test_hand_computed_windows_on_each_strand(annotated):
    seqs = genome_sequences()
    chr_a = seqs["chrA"]
    comp = str.maketrans("ACGT", "TGCA")
    # intron chrA [2500, 3000) on +: donor cut 2500, acceptor cut 3000; upstream 30, downstream 10
    donors = {(s.record, s.strand, s.start): s for s in of_kind(build(annotated, upstream_bp=30, downstream_bp=10),
                                                                 "donor")}
    plus = donors[("chrA", "+", 2470)]
    assert (plus.start, plus.end) == (2470, 2510) and plus.sequence == chr_a[2470:2510]
    assert plus.sequence[30:32] == "GT" and plus.sequence[29] == chr_a[2499]  # last exon base, then the intron
    # intron chrA [6000, 7000) on -: the donor is at the genomic start of exon [7000, 8000): cut 7000
    minus = donors[("chrA", "-", 6990)]
    assert (minus.start, minus.end) == (6990, 7030) and minus.sequence == reverse_complement(chr_a[6990:7030])
    assert minus.sequence[30:32] == "GT" and chr_a[6998:7000] == "AC"
    assert minus.sequence[29] == chr_a[7000].translate(comp)  # the exon's first genomic base ends the exon
    acceptors = {(s.record, s.strand, s.start): s
                 for s in of_kind(build(annotated, "acceptor", upstream_bp=30, downstream_bp=10), "acceptor")}
    plus = acceptors[("chrA", "+", 2970)]
    assert (plus.start, plus.end) == (2970, 3010) and plus.sequence[28:30] == "AG" and plus.sequence[30] == chr_a[3000]
    minus = acceptors[("chrA", "-", 5990)]  # cut 6000: exon [4500, 6000) starts, on -, at base 5999
    assert (minus.start, minus.end) == (5990, 6030) and minus.sequence[28:30] == "AG"
    assert minus.sequence[30] == chr_a[5999].translate(comp) and chr_a[6000:6002] == "CT"


def test_shared_sites_count_once_per_strand_and_record_end_drops_are_counted(annotated):
    donors = build(annotated)
    assert donors.report["sites"] == {"transcripts": 12, "multi_exon_transcripts": 9, "introns": 9,
                                      "before_dedup": 9, "after_dedup": 8}  # tA1a and tA1b share their intron
    assert donors.report["dropped"]["donor"] == {"outside_record": 1, "crossing_split_boundary": 1, "too_many_n": 0,
                                                 "noncanonical": 0}
    acceptors = build(annotated, "acceptor")
    at_16300 = [s for s in of_kind(acceptors, "acceptor") if cut_of(s) == 16300]
    assert sorted(s.strand for s in at_16300) == ["+", "-"]  # tA6 (+) and tA4 (-): two sites at one cut
    assert all(s.start == 16100 for s in at_16300) and at_16300[0].sequence == reverse_complement(at_16300[1].sequence)


def test_dinucleotide_report_and_non_canonical_positives(annotated):
    kept = build(annotated)
    assert kept.report["dinucleotides"] == {"canonical": "GT", "counts": {"GT": 5, "GC": 1},
                                            "canonical_share": round(5 / 6, 6), "known_minor": {"GC": 1, "AT": 0},
                                            "other": 0, "noncanonical_kept": True}
    assert kept.report["window"] == {"bp": 400, "cut_offset": 200, "dinucleotide_offset": 200}
    dropped = build(annotated, keep_noncanonical=False)
    assert dropped.report["dropped"]["donor"]["noncanonical"] == 1
    assert dropped.report["dinucleotides"]["counts"] == {"GT": 5, "GC": 1}  # counted before the filter
    assert all(s.sequence[200:202] == "GT" for s in of_kind(dropped, "donor")) and len(of_kind(dropped, "donor")) == 5
    acceptors = build(annotated, "acceptor")
    assert acceptors.report["dinucleotides"]["canonical_share"] == 1.0
    assert acceptors.report["window"]["dinucleotide_offset"] == 198


@pytest.mark.parametrize("site", ["donor", "acceptor"])
def test_decoys_carry_the_dinucleotide_at_the_same_offset_and_are_never_at_a_site(annotated, site):
    task = build(annotated, site, negatives={"decoy": 3}, min_site_distance_bp=60)
    transcripts = read_annotation(annotated["gff3"], LENGTHS).transcripts  # gB3, CDS only, is its own
    seqs = genome_sequences()
    kind = SITES[site]
    decoys = of_kind(task, "decoy")
    assert len(decoys) == 3 * len(of_kind(task, site)) and len({(s.record, s.strand, s.start) for s in decoys}) == len(
        decoys)
    for s in decoys:
        cut = cut_of(s)
        assert s.label == 0 and s.sequence == oriented(seqs, s)
        assert s.sequence[200 + kind.offset:202 + kind.offset] == kind.canonical
        assert all(abs(cut - c) >= 60 for record, _, c in EXPECTED[site] if record == s.record), "never near a site"
        p = kind.dinucleotide_start(cut, s.strand)
        assert any(t.record == s.record and t.strand == s.strand and t.start <= p and p + 2 <= t.end
                   for t in transcripts), "inside a transcript, on its strand"
        assert any(r.record == s.record and r.start <= s.start and s.end <= r.end for split, regions in
                   task.regions.items() for r in regions if s in task.samples[split])
    for split, samples in task.samples.items():
        assert not any(overlaps_other_split(task.samples, split, s) for s in samples)


def test_ratios_seeds_and_background(annotated):
    one = build(annotated, seed=3, negatives={"decoy": 2, "background": 1})
    for split, counts in one.report["counts"].items():
        assert counts["decoy"] == 2 * counts["donor"] and counts["background"] == counts["donor"], split
    assert one.samples == build(annotated, seed=3, negatives={"decoy": 2, "background": 1}).samples
    other = build(annotated, seed=4, negatives={"decoy": 2, "background": 1})
    assert of_kind(one, "donor") == of_kind(other, "donor") and of_kind(one, "decoy") != of_kind(other, "decoy")
    for s in of_kind(one, "background"):  # no donor inside a background window, nor within 200 bp of one
        assert all(not (s.start - 200 <= c < s.end + 200) for r, _, c in EXPECTED_DONORS if r == s.record)


def test_every_decoy_candidate_keeps_its_distance_and_a_shortfall_is_reported(annotated):
    task = build(annotated, negatives={"decoy": 1000})  # more than there are: every candidate is taken
    stats = task.report["negatives"]["test"]["decoy"]
    assert stats["found"] == stats["candidates"] < stats["requested"] == 1000 and stats["shortfall"] > 0
    sites = [c for r, _, c in EXPECTED_DONORS if r == "chrA"]
    distances = [min(abs(cut_of(s) - c) for c in sites) for s in of_kind(task, "decoy") if s.record == "chrA"]
    assert min(distances) >= 50
    closer = build(annotated, negatives={"decoy": 1000}, min_site_distance_bp=1)
    assert min(min(abs(cut_of(s) - c) for c in sites) for s in of_kind(closer, "decoy") if s.record == "chrA") < 50


def test_site_index_nearest_distances():
    index = SiteIndex([("chrA", 100), ("chrA", 300), ("chrB", 5)])
    assert index.nearest("chrA", np.array([0, 100, 150, 199, 201, 1000])).tolist() == [100, 0, 50, 99, 99, 700]
    assert index.nearest("chrC", np.array([1]))[0] > 10 ** 15


def test_gff3_and_gtf_give_the_same_task(annotated):
    assert build(annotated, "acceptor").samples == build(annotated, "acceptor", "gtf_gz").samples


def test_site_kinds_and_introns():
    assert introns([(300, 400), (100, 200), (150, 250), (400, 500), (600, 700)]) == [(250, 300), (500, 600)]
    for kind in SITES.values():
        for strand in "+-":
            assert kind.cut_at(kind.dinucleotide_start(1000, strand), strand) == 1000
    assert (SITES["donor"].cut((200, 300), "+"), SITES["donor"].cut((200, 300), "-")) == (200, 300)
    assert (SITES["acceptor"].cut((200, 300), "+"), SITES["acceptor"].cut((200, 300), "-")) == (300, 200)


def test_an_annotation_without_introns_is_an_input_error(annotated, tmp_path):
    single = tmp_path / "single_exon.gff3"
    single.write_text("".join(line + "\n" for line in gff3_text().splitlines()
                              if "\texon\t" not in line or "-e0;" in line))
    with pytest.raises(InputError, match="has no intron: none of its 12 transcripts"):
        build({**annotated, "gff3": single})


@pytest.mark.parametrize("settings,message", [
    ({"negatives": {"shuffled": 1}}, "unknown negative kind"),
    ({"upstream_bp": 1}, "upstream >= 2"),
    ({"min_site_distance_bp": 0}, "min_site_distance_bp=0"),
    ({"site": "branch_point"}, "donor or acceptor"),
])
def test_bad_settings_are_input_errors(annotated, settings, message):
    with pytest.raises(InputError, match=message):
        build(annotated, **{"site": "donor", **settings})
