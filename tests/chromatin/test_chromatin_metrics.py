"""Strand averaging, per-label AUROC/AUPRC, group medians with excluded labels, and the report files."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bigbird_dna.errors import InputError
from bigbird_dna.evaluation.metrics import per_label_metrics
from bigbird_dna.model.outputs import read_names
from bigbird_dna.tasks.chromatin_report import (
    average_strands,
    parse_groups,
    plot_report,
    summarise,
    write_label_tsv,
)


def test_average_strands_restores_file_order_drops_padding_and_averages_pairs():
    probs = torch.tensor([[0.4], [0.1], [0.8], [0.3], [0.1]])  # rows evaluated as indices 2, 0, 3, 1, 0 (pad)
    targets = torch.tensor([[1], [0], [1], [0], [0]])
    indices = torch.tensor([2, 0, 3, 1, 0])
    pairs = np.array([[0, 2], [1, 3]])  # halves: row i + 2 is the reverse complement of row i
    averaged, kept = average_strands(probs, targets, indices, pairs)
    assert torch.allclose(averaged, torch.tensor([[0.25], [0.55]]))
    assert torch.equal(kept, torch.tensor([[0], [0]]))


def test_average_strands_without_pairs_only_sorts():
    probs, targets = torch.tensor([[0.2], [0.9]]), torch.tensor([[0], [1]])
    averaged, kept = average_strands(probs, targets, torch.tensor([1, 0]), None)
    assert torch.equal(averaged, torch.tensor([[0.9], [0.2]])) and torch.equal(kept, torch.tensor([[1], [0]]))


def test_average_strands_keeps_rows_whose_partner_was_not_evaluated():
    averaged, _ = average_strands(torch.tensor([[0.2], [0.6], [1.0]]), torch.zeros(3, 1), torch.tensor([0, 1, 2]),
                                  np.array([[0, 2], [1, 3]]))
    assert torch.allclose(averaged, torch.tensor([[0.6], [0.6]]))


def test_per_label_metrics_match_hand_computed_values_and_exclude_one_class_labels():
    probs = torch.tensor([[0.9, 0.1, 0.5, 0.3], [0.8, 0.2, 0.5, 0.1], [0.3, 0.7, 0.5, 0.2], [0.1, 0.4, 0.5, 0.9]])
    targets = torch.tensor([[1, 0, 0, 1], [1, 1, 0, 1], [0, 0, 0, 1], [0, 1, 0, 1]])
    metrics = per_label_metrics(probs, targets)
    assert metrics.auroc[0] == pytest.approx(1.0)
    assert metrics.auroc[1] == pytest.approx(0.5)  # positives score 0.2, 0.4 vs negatives 0.1, 0.7
    assert metrics.auprc[0] == pytest.approx(1.0)
    assert np.isnan(metrics.auroc[2]) and np.isnan(metrics.auroc[3])  # no positives / no negatives
    assert metrics.scored.tolist() == [True, True, False, False]
    summary = summarise(metrics, parse_groups({"A": [0, 1], "B": [1, 4]}, 4))
    assert summary["auroc_a"] == pytest.approx(1.0) and summary["auroc_b"] == pytest.approx(0.5)
    assert summary["auroc_median"] == pytest.approx(0.75)
    assert (summary["labels_scored"], summary["labels_no_positives"], summary["labels_no_negatives"]) == (2, 1, 1)


def test_a_group_without_scored_labels_has_a_nan_median():
    metrics = per_label_metrics(torch.rand(6, 3), torch.tensor([[1, 0, 1]] * 3 + [[1, 0, 0]] * 3))
    summary = summarise(metrics, parse_groups({"X": [0, 2], "Y": [2, 3]}, 3))
    assert np.isnan(summary["auroc_x"]) and not np.isnan(summary["auroc_y"])  # Y: one label, scored


def test_groups_come_as_name_start_end_triples_or_a_dict():
    expected = {"DHS": (0, 125), "TF": (125, 815), "HM": (815, 919)}
    assert parse_groups([["DHS", 0, 125], ["TF", 125, 815], ["HM", 815, 919]], 919) == expected
    assert parse_groups({"DHS": [0, 125], "TF": [125, 815], "HM": [815, 919]}, 919) == expected
    assert parse_groups(None, 5) == {"all": (0, 5)}


@pytest.mark.parametrize("groups", [{"HM": [815, 920]}, {"TF": [125, 125]}, [["DHS", 0]]])
def test_group_ranges_outside_the_label_set_are_refused(groups):
    with pytest.raises(InputError, match="task.groups"):
        parse_groups(groups, 919)


def test_label_names_must_match_the_label_count(tmp_path):
    path = tmp_path / "names.txt"
    path.write_text("a\nb\n")
    assert read_names(path, 2) == ["a", "b"]
    with pytest.raises(InputError, match="names 2 labels, but task.num_labels=3"):
        read_names(path, 3)


def test_report_files_hold_every_label_and_a_png(tmp_path):
    generator = torch.Generator().manual_seed(0)
    targets = (torch.rand(40, 6, generator=generator) < 0.5).long()
    targets[:, 5] = 0
    probs = (targets * 0.6 + torch.rand(40, 6, generator=generator) * 0.5).clamp(0, 1)
    metrics = per_label_metrics(probs, targets)
    groups = parse_groups({"DHS": [0, 2], "TF": [2, 4], "HM": [4, 6]}, 6)
    tsv = write_label_tsv(tmp_path / "labels.tsv", metrics, groups, [f"f{j}" for j in range(6)])
    rows = tsv.read_text().splitlines()
    assert rows[0].split("\t") == ["label", "name", "group", "positives", "negatives", "auroc", "auprc"]
    assert len(rows) == 7 and rows[6].split("\t")[5:] == ["NA", "NA"] and rows[1].split("\t")[1:3] == ["f0", "DHS"]
    png = plot_report(tmp_path / "auroc.png", metrics, probs, targets, groups, title="test")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(tmp_path.glob(".*"))  # no temporary files left
