"""``benchmarks/pretrain_gpu_baselines.py``: the GPU recipe's baselines on its own val/test bases."""
import json

from benchmarks.pretrain_gpu_baselines import main


def test_the_recipes_baselines_are_scored_on_its_held_out_bases(tmp_path):
    out = tmp_path / "baselines.json"
    main(["--out", str(out)])
    metrics = json.loads(out.read_text())["metrics"]
    for split in ("val", "test"):
        bits = {name: metrics[f"{split}/baseline/{name}_bits_per_base"]
                for name in ("unigram", "markov_causal", "markov_bidirectional")}
        assert metrics[f"{split}/baseline/scored_bases"] > 10_000  # 20 windows of 4094 bp at 15%
        # context helps on a real genome: the chains beat the unigram, both sides beat one side
        assert bits["markov_bidirectional"] < bits["markov_causal"] < bits["unigram"] < 2.0
