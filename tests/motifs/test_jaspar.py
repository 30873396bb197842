"""JASPAR motifs load offline from pyjaspar's database: by matrix ID, by base ID (the latest
version), and by collection and taxon; unknown names are input errors that say how to list the
valid ones."""

from __future__ import annotations

import numpy as np
import pytest

from bigbird_dna.errors import InputError
from bigbird_dna.motifs.jaspar import _database, fetch_collection, fetch_motif, latest_release

pytest.importorskip("pyjaspar")


def test_a_motif_loads_by_matrix_id_as_probabilities_in_acgt_order():
    arnt = fetch_motif("MA0004.1")
    assert (arnt.id, arnt.name, arnt.collection, arnt.taxon) == ("MA0004.1", "Arnt", "CORE", "vertebrates")
    assert arnt.pfm.shape == (6, 4) and arnt.pfm.dtype == np.float64
    np.testing.assert_allclose(arnt.pfm.sum(axis=1), 1.0)
    assert arnt.consensus == "CACGTG"
    np.testing.assert_allclose(arnt.pfm[0], [4 / 20, 16 / 20, 0, 0])  # JASPAR's counts: A 4, C 16 of 20 sites


def test_a_base_id_loads_the_latest_version_and_case_does_not_matter():
    latest = _database(latest_release()).conn.execute(
        "select max(VERSION) from MATRIX where BASE_ID = 'MA0139'").fetchone()[0]
    assert latest > 1  # CTCF has several versions, so the test can tell them apart
    assert fetch_motif("MA0139").id == f"MA0139.{latest}"
    assert fetch_motif("ma0139.1").id == "MA0139.1"
    assert fetch_motif("MA0139.1").length != fetch_motif("MA0139").length or \
        not np.allclose(fetch_motif("MA0139.1").pfm, fetch_motif("MA0139").pfm)


@pytest.mark.parametrize("motif_id", ["MA9999.1", "MA0004.99", "CTCF", ""])
def test_an_unknown_id_is_an_input_error_that_says_how_to_list_ids(motif_id):
    with pytest.raises(InputError, match="python -m bigbird_dna.motifs jaspar") as err:
        fetch_motif(motif_id)
    assert repr(motif_id) in str(err.value)


def test_a_collection_is_filtered_by_taxon():
    plants = fetch_collection("CORE", "plants")
    vertebrates = fetch_collection("core", "Vertebrates")
    assert len(plants) > 300 and len(vertebrates) > 500
    assert {m.taxon for m in plants} == {"plants"} and {m.collection for m in plants} == {"CORE"}
    assert "MA0139" in {m.id.split(".")[0] for m in vertebrates} - {m.id.split(".")[0] for m in plants}
    assert len({m.id.split(".")[0] for m in vertebrates}) == len(vertebrates)  # one (the latest) version each


@pytest.mark.parametrize("collection, taxon, listed", [
    ("CORE", "mammals", "vertebrates"),
    ("HOCOMOCO", None, "UNVALIDATED"),
])
def test_an_unknown_collection_or_taxon_lists_the_valid_ones(collection, taxon, listed):
    with pytest.raises(InputError, match=listed):
        fetch_collection(collection, taxon)


def test_an_unknown_release_lists_the_installed_ones():
    with pytest.raises(InputError, match="JASPAR2024"):
        fetch_motif("MA0004.1", release="JASPAR1999")
