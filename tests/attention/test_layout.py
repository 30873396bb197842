"""Block layouts: preset structure, CSR tables, determinism, caching and the short-sequence rule."""

import io

import pytest
import torch

from bigbird_dna.attention.layout import BlockLayout
from bigbird_dna.attention.patterns import PRESETS, SparsePattern, fits_sparse, layout_for, preset, splitmix64
from bigbird_dna.errors import InputError

H, NB, B = 3, 40, 16
PRESET_PARAMS = {
    "bigbird_itc": dict(window=3, num_random=3, global_per_end=1),
    "bigbird_etc": dict(num_global=2, window=3),
    "longformer": dict(window=5, num_global=2),
    "window_only": dict(window=3),
    "random_only": dict(num_random=4),
    "window_random": dict(window=3, num_random=2),
    "dense": dict(),
}


def build(name, num_blocks=NB, seed=0, layer=0, **params):
    params = {**PRESET_PARAMS[name], **params}
    return preset(name, **params).build(H, num_blocks, B, seed=seed, layer=layer)


def window_mask(nb, window):
    i = torch.arange(nb)
    return (i[:, None] - i[None, :]).abs() <= window // 2


def random_part(layout, not_random):
    """Block mask minus the deterministic part ``not_random [nq, nk]``."""
    return layout.to_block_mask() & ~not_random


def test_every_preset_is_tested():
    assert set(PRESETS) == set(PRESET_PARAMS)


@pytest.mark.parametrize("name", sorted(PRESET_PARAMS))
def test_csr_tables_are_sorted_unique_and_match_the_block_mask(name):
    layout = build(name)
    mask = layout.to_block_mask()
    for t in ("kv_ptr", "kv_idx", "q_ptr", "q_idx"):
        assert getattr(layout, t).dtype == torch.int32
    assert layout.nnz == int(mask.sum())
    lengths = layout.row_lengths()
    assert torch.equal(lengths, mask.sum(-1).flatten())
    # Strictly increasing inside every row (sorted, no duplicates).
    starts = torch.zeros(layout.nnz, dtype=torch.bool)
    starts[layout.kv_ptr[:-1][lengths > 0].long()] = True
    assert (layout.kv_idx.diff() > 0)[~starts[1:]].all()
    # The transpose lists, per (head, key block), the query blocks attending to it, ascending.
    qt = layout.q_idx.long()
    cols = torch.repeat_interleave(torch.arange(H * layout.num_k_blocks), (layout.q_ptr.diff()).long())
    transposed = torch.zeros(H * layout.num_k_blocks, layout.num_q_blocks, dtype=torch.bool)
    transposed[cols, qt] = True
    assert torch.equal(transposed.view(H, layout.num_k_blocks, -1), mask.transpose(1, 2))
    order = cols * layout.num_q_blocks + qt
    assert (order.diff() > 0).all()


@pytest.mark.parametrize("name", sorted(PRESET_PARAMS))
def test_from_block_mask_reproduces_each_preset_exactly(name):
    layout = build(name)
    rebuilt = BlockLayout.from_block_mask(layout.to_block_mask(), B)
    assert rebuilt.equals(layout)
    for t in ("kv_ptr", "kv_idx", "q_ptr", "q_idx"):
        assert torch.equal(getattr(rebuilt, t), getattr(layout, t))


def test_bigbird_itc_structure():
    r, nb = 3, NB
    layout = build("bigbird_itc")
    mask = layout.to_block_mask()
    is_global = torch.zeros(nb, dtype=torch.bool)
    is_global[[0, nb - 1]] = True
    assert mask[:, is_global, :].all(), "global query rows attend to every block"
    assert mask[:, :, is_global].all(), "every row attends to the global blocks"
    assert mask[:, window_mask(nb, 3)].all().item()
    fixed = window_mask(nb, 3) | is_global[None, :] | is_global[:, None]
    rand = random_part(layout, fixed)
    assert (rand[:, ~is_global].sum(-1) == r).all(), "exactly r random blocks outside window and globals"
    assert not rand[:, is_global].any()
    # Paper Sec. 7 numbers: 8 key blocks per middle row, 7 for rows 1 and nb-2, all for global rows.
    expected = torch.full((nb,), 8)
    expected[[1, nb - 2]], expected[[0, nb - 1]] = 7, nb
    assert torch.equal(mask.sum(-1), expected.expand(H, nb))


def test_bigbird_etc_prepends_global_blocks():
    g, nb = 2, NB
    layout = build("bigbird_etc")
    total = g + nb
    assert layout.num_q_blocks == layout.num_k_blocks == total
    mask = layout.to_block_mask()
    expected = window_mask(total, 3)
    expected[:g, :], expected[:, :g] = True, True
    assert torch.equal(mask, expected.expand(H, total, total))


def test_longformer_and_window_only_are_deterministic_bands():
    mask = build("longformer").to_block_mask()
    expected = window_mask(NB, 5)
    expected[:2, :], expected[:, :2] = True, True
    assert torch.equal(mask, expected.expand(H, NB, NB))
    assert torch.equal(build("window_only").to_block_mask(), window_mask(NB, 3).expand(H, NB, NB))


def test_random_only_and_window_random_draw_exact_counts():
    rand_only = build("random_only").to_block_mask()
    assert (rand_only.sum(-1) == 4).all()
    wr = build("window_random")
    assert wr.to_block_mask()[:, window_mask(NB, 3)].all()
    assert (random_part(wr, window_mask(NB, 3)).sum(-1) == 2).all()


def test_dense_preset_is_the_complete_graph():
    assert build("dense").to_block_mask().all()


def test_rows_with_fewer_candidates_than_r_take_all_of_them():
    layout = SparsePattern.window_random(window=3, num_random=5).build(2, 6, B)
    assert layout.to_block_mask().all()


def test_itc_nnz_is_linear_in_length():
    def nnz(nb):
        return build("bigbird_itc", num_blocks=nb).nnz

    for nb in (16, 64, 256):
        assert nnz(nb) == H * (2 * nb + 8 * (nb - 2) - 2)
    assert abs(nnz(512) / nnz(256) - 2) < 0.01


def test_same_seed_gives_identical_tables():
    assert build("bigbird_itc", seed=5, layer=2).equals(build("bigbird_itc", seed=5, layer=2))


@pytest.mark.parametrize("change", [dict(seed=1), dict(layer=1), dict(num_blocks=NB + 1)])
def test_seed_layer_and_length_change_the_random_blocks(change):
    base = build("bigbird_itc").to_block_mask()
    other = build("bigbird_itc", **change).to_block_mask()[:, :NB, :NB]
    assert not torch.equal(base[:, 1:-2, 1:-2], other[:, 1:-2, 1:-2])


def test_heads_get_different_random_blocks():
    mask = build("bigbird_itc").to_block_mask()
    assert not torch.equal(mask[0], mask[1]) and not torch.equal(mask[1], mask[2])


def test_random_blocks_cover_the_whole_long_sequence():
    nb = 256  # 16k tokens at b = 64, far beyond HF's first 1024 tokens
    is_global = torch.zeros(nb, dtype=torch.bool)
    is_global[[0, nb - 1]] = True
    fixed = window_mask(nb, 3) | is_global[None, :] | is_global[:, None]
    rand = random_part(build("bigbird_itc", num_blocks=nb), fixed)
    cols = rand.nonzero()[:, 2]
    assert cols.max() >= nb - 3 and cols.min() <= 2
    far_half = (cols >= nb // 2).float().mean().item()
    assert 0.4 < far_half < 0.6, "random keys should be spread uniformly over the sequence"
    per_column = torch.bincount(cols, minlength=nb)[1:-1].float()
    assert per_column.std() / per_column.mean() < 0.4


def test_every_candidate_block_is_reachable_for_every_row():
    """Over many heads, each row's random picks cover all blocks outside its window and globals."""
    nb, heads = 16, 64
    layout = SparsePattern.bigbird_itc().build(heads, nb, B)
    is_global = torch.zeros(nb, dtype=torch.bool)
    is_global[[0, nb - 1]] = True
    candidates = ~(window_mask(nb, 3) | is_global[None, :] | is_global[:, None])
    counts = random_part(layout, ~candidates).sum(0)  # [nb, nb] picks per (row, block)
    assert torch.equal(counts > 0, candidates)
    assert counts[candidates].min() >= 5


def test_splitmix64_matches_the_64_bit_reference():
    def reference(x):
        m = (1 << 64) - 1
        z = (x + 0x9E3779B97F4A7C15) & m
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
        return z ^ (z >> 31)

    inputs = [0, 1, 12345, (1 << 62) + 7, -1, -(1 << 63)]
    out = splitmix64(torch.tensor(inputs, dtype=torch.int64))
    assert [v % (1 << 64) for v in out.tolist()] == [reference(x % (1 << 64)) for x in inputs]


def test_state_dict_round_trip_through_torch_save():
    layout = build("bigbird_itc", seed=3, layer=4)
    buffer = io.BytesIO()
    torch.save(layout.state_dict(), buffer)
    buffer.seek(0)
    restored = BlockLayout.from_state_dict(torch.load(buffer))
    assert restored.equals(layout)
    assert not restored.equals(build("bigbird_itc", seed=4, layer=4))
    with pytest.raises(InputError, match="lacks"):
        BlockLayout.from_state_dict({"block_size": 16})


def test_layout_is_immutable():
    with pytest.raises(AttributeError):
        build("window_only").block_size = 32


def test_short_sequence_falls_back_to_dense_for_that_call_only():
    assert not fits_sparse("bigbird_itc", 11) and fits_sparse("bigbird_itc", 12)
    short = layout_for("bigbird_itc", H, 11, B, layer=0)
    assert short.to_block_mask().all()
    long = layout_for("bigbird_itc", H, 64, B, layer=0)
    assert long.equals(build("bigbird_itc", num_blocks=64))
    assert long.nnz < H * 64 * 64
    assert layout_for("bigbird_itc", H, 11, B, layer=0).to_block_mask().all()


def test_short_etc_fallback_keeps_the_prepended_blocks():
    layout = layout_for("bigbird_etc", H, 3, B, num_global=2)
    assert layout.num_q_blocks == 5 and layout.to_block_mask().all()


def test_layout_for_gives_the_same_tables_for_the_same_arguments():
    a = layout_for("bigbird_itc", H, NB, B, layer=1, seed=0)
    assert layout_for("bigbird_itc", H, NB, B, layer=1, seed=0).equals(a)
    assert layout_for(SparsePattern.bigbird_itc(), H, NB, B, layer=1, seed=0).equals(a)
    assert not layout_for("bigbird_itc", H, NB, B, layer=2, seed=0).equals(a)


@pytest.mark.parametrize("call, message", [
    (lambda: preset("bigbird"), "unknown attention preset"),
    (lambda: preset("bigbird_itc", windows=3), "bad parameters"),
    (lambda: SparsePattern.window_only(window=4), "must be odd"),
    (lambda: SparsePattern.random_only(num_random=-1), "non-negative"),
    (lambda: SparsePattern.window_only().build(2, 0, 16), ">= 1"),
])
def test_bad_configuration_raises_input_error(call, message):
    with pytest.raises(InputError, match=message):
        call()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_tables_equal_cpu_tables():
    for name in PRESET_PARAMS:
        params = PRESET_PARAMS[name]
        cpu = preset(name, **params).build(4, 300, 64, seed=7, layer=3)
        cuda = preset(name, **params).build(4, 300, 64, seed=7, layer=3, device="cuda")
        assert cuda.device.type == "cuda" and cuda.equals(cpu)


def test_plot_cli_writes_a_png_with_every_component(tmp_path):
    from bigbird_dna.attention.plot import PARTS, component_map, main

    out = tmp_path / "itc.png"
    main(["--preset", "bigbird_itc", "--seq-len", "1000", "--block-size", "64", "--heads", "2", "--out", str(out)])
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pattern = SparsePattern.bigbird_itc()
    labels = component_map(pattern, pattern.build(2, 16, 64).to_block_mask())
    assert set(labels.unique().tolist()) == {0} | {1 + PARTS.index(p) for p in ("global", "window", "random")}
    with pytest.raises(SystemExit) as exit_info:
        main(["--preset", "bigbird_itc", "--param", "windows=3", "--out", str(out)])
    assert exit_info.value.code == 2
