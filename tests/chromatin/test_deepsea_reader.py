"""Reading the DeepSEA bundle: both MATLAB formats, any unambiguous axis order, one-hot decoding,
strand-pair detection, and one clear error per malformed file."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
import scipy.io
from scipy.io.matlab import matfile_version

from bigbird_dna.data.chromatin.deepsea import DeepSEAFile, detect_rc_layout, rc_pairs
from bigbird_dna.data.chromatin.onehot import decode_onehot, encode_onehot
from bigbird_dna.errors import InputError
from tests.chromatin.deepsea_files import (
    planted_samples,
    with_reverse_complements,
    write_v5,
    write_v73,
)


@pytest.fixture(scope="module")
def windows():
    return planted_samples(12, seed=3)


def test_onehot_order_is_agct_and_all_zero_columns_are_n():
    x = np.zeros((1, 4, 5), dtype=np.uint8)
    x[0, 0, 0] = x[0, 1, 1] = x[0, 2, 2] = x[0, 3, 3] = 1  # channels A, G, C, T; position 4 all zero
    assert decode_onehot(x) == ["AGCTN"]
    assert np.array_equal(encode_onehot(["AGCTN"]), x)


def test_generated_files_have_the_matlab_headers_and_deepsea_shapes(planted_bundle):
    assert matfile_version(str(planted_bundle / "train.mat")) == (2, 0)  # v7.3
    assert matfile_version(str(planted_bundle / "valid.mat")) == (1, 0)  # v5
    assert (planted_bundle / "train.mat").read_bytes()[:19] == b"MATLAB 7.3 MAT-file"
    with h5py.File(planted_bundle / "train.mat", "r") as f:
        assert f["trainxdata"].shape == (1000, 4, 1024) and f["traindata"].shape == (919, 1024)
    shapes = {name: shape for name, shape, _ in scipy.io.whosmat(str(planted_bundle / "valid.mat"))}
    assert shapes == {"validxdata": (256, 4, 1000), "validdata": (256, 919)}


@pytest.mark.parametrize("name", ["train.mat", "valid.mat", "test.mat"])
def test_both_formats_read_back_the_written_windows(planted_bundle, name):
    file = DeepSEAFile(planted_bundle / name, 919)
    assert file.seq_len == 1000
    seqs, labels = file.read_sequences(0, 20)
    with_rc = {"train.mat": (512, 0, "halves"), "valid.mat": (128, 1, "halves"), "test.mat": (32, 2, "interleaved")}
    n, seed, layout = with_rc[name]
    expected_seqs, expected_labels = with_reverse_complements(*planted_samples(n, seed=seed), layout=layout)
    assert seqs == expected_seqs[:20]
    assert np.array_equal(labels, expected_labels[:20]) and labels.dtype == np.float32
    assert seqs[0][5:11] == "NNNNNN"  # the planted N run: all-zero one-hot columns


def test_row_major_hdf5_and_transposed_mat5_are_read_the_same(tmp_path, windows):
    seqs, labels = windows
    x = encode_onehot(seqs)  # [N, 4, L]
    with h5py.File(tmp_path / "rowmajor.h5", "w") as f:  # a converted copy: (N, L, 4) and (N, C)
        f["trainxdata"], f["traindata"] = x.transpose(0, 2, 1), labels
    scipy.io.savemat(str(tmp_path / "flipped.mat"), {"validxdata": x.transpose(2, 1, 0), "validdata": labels.T})
    for path in (tmp_path / "rowmajor.h5", tmp_path / "flipped.mat"):
        got_seqs, got_labels = DeepSEAFile(path, 919).read_sequences(0, len(seqs))
        assert got_seqs == seqs and np.array_equal(got_labels, labels)


@pytest.mark.parametrize("layout", ["halves", "interleaved"])
def test_strand_pairs_are_detected_in_either_order(tmp_path, windows, layout):
    seqs, labels = with_reverse_complements(*windows, layout=layout)
    path = write_v5(tmp_path / "valid.mat", encode_onehot(seqs), labels)
    file = DeepSEAFile(path, 919)
    assert detect_rc_layout(file) == layout
    assert detect_rc_layout(file, probes=None) == layout
    pairs = rc_pairs(len(file), layout)
    assert pairs.shape == (12, 2)
    x, _ = file.read(0, len(file))
    assert all(np.array_equal(x[f], x[r, ::-1, ::-1]) for f, r in pairs)


def test_unpaired_files_and_pairs_with_other_labels_are_not_paired(tmp_path, windows):
    seqs, labels = windows
    assert detect_rc_layout(DeepSEAFile(write_v5(tmp_path / "a.mat", encode_onehot(seqs), labels), 919)) is None
    both, both_labels = with_reverse_complements(seqs, labels)
    both_labels = both_labels.copy()
    both_labels[-1, 0] ^= 1  # the last reverse complement disagrees with its forward labels
    path = write_v5(tmp_path / "b.mat", encode_onehot(both), both_labels)
    assert detect_rc_layout(DeepSEAFile(path, 919), probes=None) is None


def _errors(tmp_path, arrays: dict, num_labels: int = 919, **keys) -> str:
    path = tmp_path / "bad.mat"
    scipy.io.savemat(str(path), arrays)
    with pytest.raises(InputError) as err:
        DeepSEAFile(path, num_labels, **keys)
    return str(err.value)


def test_missing_file_names_the_data_setting(tmp_path):
    with pytest.raises(InputError, match="not found.*data.train"):
        DeepSEAFile(tmp_path / "train.mat", 919)


def test_a_file_that_is_not_a_mat_file_is_refused(tmp_path):
    path = tmp_path / "train.mat"
    path.write_text("chrom\tstart\tend\n")
    with pytest.raises(InputError, match="neither a MATLAB .mat file nor HDF5"):
        DeepSEAFile(path, 919)


def test_missing_keys_are_named_with_what_the_file_holds(tmp_path):
    x, y = np.zeros((2, 4, 10), np.uint8), np.zeros((2, 919), np.uint8)
    message = _errors(tmp_path, {"validxdata": x})
    assert "no labels array 'validdata'" in message and "validxdata" in message
    message = _errors(tmp_path, {"sequences": x, "validdata": y})
    assert "xdata" in message and "data.x_key" in message
    message = _errors(tmp_path, {"validxdata": x, "validdata": y}, x_key="testxdata")
    assert "'testxdata'" in message and "validxdata" in message


def test_missing_keys_in_a_v73_file(tmp_path):
    path = tmp_path / "train.mat"
    with h5py.File(path, "w", userblock_size=512) as f:
        f["trainxdata"] = np.zeros((10, 4, 2), np.uint8)
    with pytest.raises(InputError, match="no labels array 'traindata'"):
        DeepSEAFile(path, 919)


def test_wrong_shapes_are_explained(tmp_path):
    y = np.zeros((3, 919), np.uint8)
    assert "expected 3 axes" in _errors(tmp_path, {"validxdata": np.zeros((3, 4000), np.uint8), "validdata": y})
    assert "does not fit 3 samples" in _errors(tmp_path, {"validxdata": np.zeros((3, 5, 10), np.uint8),
                                                          "validdata": y})
    assert "does not fit 3 samples" in _errors(tmp_path, {"validxdata": np.zeros((2, 4, 10), np.uint8),
                                                          "validdata": y})
    assert "expected 2 axes" in _errors(tmp_path, {"validxdata": np.zeros((3, 4, 10), np.uint8),
                                                   "validdata": np.zeros((3, 919, 1), np.uint8)})


def test_a_label_count_that_disagrees_with_the_config_is_refused(tmp_path, windows):
    seqs, labels = windows
    path = write_v73(tmp_path / "train.mat", encode_onehot(seqs), labels)
    with pytest.raises(InputError, match="task.num_labels=918: the label count disagrees with the config"):
        DeepSEAFile(path, 918)


@pytest.mark.parametrize("damage, needle", [("label", "labels are 0 or 1"), ("onehot", "bases set")])
def test_labels_other_than_0_1_and_columns_with_two_bases_are_refused(tmp_path, damage, needle):
    seqs, labels = planted_samples(4, seed=3)
    x = encode_onehot(seqs)
    if damage == "label":
        labels[2, 7] = 2  # e.g. a count where a 0/1 label belongs
    else:
        x[1, :, 10] = 1  # every channel set at one position
    file = DeepSEAFile(write_v5(tmp_path / "valid.mat", x, labels), 919)
    with pytest.raises(InputError, match=needle):
        file.read_sequences(0, 4)


def test_a_missing_test_mat_does_not_block_training(tmp_path, planted_bundle):
    from bigbird_dna.data.chromatin.datamodule import DeepSEAData

    data = DeepSEAData(num_labels=919, seed=0, run_dir=str(tmp_path), train=str(planted_bundle / "train.mat"),
                       val=str(planted_bundle / "valid.mat"), test=str(tmp_path / "absent" / "test.mat"),
                       chunk_size=64, strand_pairs="auto", rc_probes=2, reverse_complement_prob=0.0,
                       batch_size=4, num_workers=0)
    assert not data.has_test_data() and "test" not in data.datasets

