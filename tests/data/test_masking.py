import torch

from bigbird_dna.data.mlm.masking import IGNORE_INDEX, mask_tokens

PAD, UNK, CLS, SEP, MASK = range(5)
SPECIAL = torch.tensor([PAD, UNK, CLS, SEP, MASK])
VOCAB = 100


def _batch(rows=64, length=512, pad_from=400):
    ids = torch.randint(5, VOCAB, (rows, length), generator=torch.Generator().manual_seed(0))
    ids[:, 0] = CLS
    ids[:, pad_from - 1] = SEP
    ids[:, pad_from:] = PAD
    return ids


def test_masks_fifteen_percent_split_80_10_10():
    ids = _batch()
    inputs, labels = mask_tokens(ids, SPECIAL, MASK, VOCAB, 0.15, torch.Generator().manual_seed(1))
    selected = labels != IGNORE_INDEX
    real = ~torch.isin(ids, SPECIAL)
    rate = selected.sum() / real.sum()
    assert abs(rate.item() - 0.15) < 0.01
    became_mask = (inputs == MASK) & selected
    unchanged = (inputs == ids) & selected
    random = selected & ~became_mask & ~unchanged
    n = selected.sum().item()
    assert abs(became_mask.sum().item() / n - 0.8) < 0.02
    # unchanged includes random draws that hit the original id (1/95 of the random 10%)
    assert abs(unchanged.sum().item() / n - 0.1) < 0.02
    assert abs(random.sum().item() / n - 0.1) < 0.02
    assert torch.equal(labels[selected], ids[selected])


def test_never_masks_special_tokens_or_padding():
    ids = _batch()
    inputs, labels = mask_tokens(ids, SPECIAL, MASK, VOCAB, 0.9, torch.Generator().manual_seed(2))
    special = torch.isin(ids, SPECIAL)
    assert (labels[special] == IGNORE_INDEX).all()
    assert torch.equal(inputs[special], ids[special])


def test_random_replacements_are_never_special_tokens():
    ids = _batch()
    inputs, labels = mask_tokens(ids, SPECIAL, MASK, VOCAB, 1.0, torch.Generator().manual_seed(3))
    replaced = (labels != IGNORE_INDEX) & (inputs != MASK)
    assert not torch.isin(inputs[replaced], SPECIAL).any()


def test_same_generator_seed_gives_same_masks():
    ids = _batch()
    a = mask_tokens(ids, SPECIAL, MASK, VOCAB, 0.15, torch.Generator().manual_seed(7))
    b = mask_tokens(ids, SPECIAL, MASK, VOCAB, 0.15, torch.Generator().manual_seed(7))
    assert all(torch.equal(x, y) for x, y in zip(a, b))


def _runs(selected_row: torch.Tensor) -> list[tuple[int, int]]:
    """Maximal runs of True in a 1-D bool tensor, as (start, end) half-open."""
    edges = torch.diff(torch.cat([torch.tensor([0]), selected_row.int(), torch.tensor([0])]))
    return list(zip((edges == 1).nonzero()[:, 0].tolist(), (edges == -1).nonzero()[:, 0].tolist()))


def test_span_masking_selects_runs_at_the_same_rate_each_masked_or_kept_as_a_whole():
    ids = _batch(rows=256)
    inputs, labels = mask_tokens(ids, SPECIAL, MASK, VOCAB, 0.15, torch.Generator().manual_seed(4), span=6)
    selected = labels != IGNORE_INDEX
    real = ~torch.isin(ids, SPECIAL)
    assert abs((selected.sum() / real.sum()).item() - 0.15) < 0.01
    assert torch.equal(labels[selected], ids[selected]) and not selected[~real].any()
    lengths, whole_runs, masked_runs = [], 0, 0
    for row in range(ids.shape[0]):
        for start, end in _runs(selected[row]):
            if end < 398:  # runs cut by the [SEP] at 399 may be shorter
                lengths.append(end - start)
            if end - start == 6:  # one run alone: one action for all of it
                masked = inputs[row, start:end] == MASK
                assert masked.all() or not masked.any()
                whole_runs += 1
                masked_runs += int(masked.all())
    assert min(lengths) == 6  # merged runs are longer, never shorter
    assert abs(masked_runs / whole_runs - 0.8) < 0.03


def test_span_one_draws_what_single_token_masking_always_drew():
    ids = _batch()
    generator = torch.Generator().manual_seed(5)
    selected = (torch.rand(ids.shape, generator=generator) < 0.15) & ~torch.isin(ids, SPECIAL)
    action = torch.rand(ids.shape, generator=generator)
    expected_masked = selected & (action < 0.8)
    inputs, labels = mask_tokens(ids, SPECIAL, MASK, VOCAB, 0.15, torch.Generator().manual_seed(5), span=1)
    assert torch.equal(labels != IGNORE_INDEX, selected)
    assert torch.equal(inputs == MASK, expected_masked)


def test_given_its_replacement_ids_masking_draws_the_same_and_stays_on_the_inputs_device():
    from bigbird_dna.data.mlm.masking import replacement_candidates

    ids = _batch(rows=8, length=64, pad_from=60)
    candidates = replacement_candidates(VOCAB, SPECIAL)
    assert candidates.tolist() == list(range(5, VOCAB))
    computed = mask_tokens(ids, SPECIAL, MASK, VOCAB, 0.15, torch.Generator().manual_seed(4))
    given = mask_tokens(ids, SPECIAL, MASK, VOCAB, 0.15, torch.Generator().manual_seed(4), replacement_ids=candidates)
    assert all(torch.equal(a, b) for a, b in zip(computed, given))
    # on the meta device nothing can be read back: masking must not need a value on the host (on a
    # GPU, a read-back waits for the device), and what it returns stays where the ids are
    inputs, labels = mask_tokens(ids.to("meta"), SPECIAL.to("meta"), MASK, VOCAB, 0.15,
                                 replacement_ids=candidates.to("meta"))
    assert inputs.device.type == labels.device.type == "meta" and inputs.shape == ids.shape
