"""Every config group composes, and every option of the groups with a ``_target_`` instantiates
into the object the code expects (on tiny inputs written here)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from bigbird_dna.errors import InputError
from bigbird_dna.tasks.base import RUN_SETTINGS, EncoderTask
from bigbird_dna.training.resolvers import instantiate, target_class
from tests.chromatin.conftest import _lambda_seq
from tests.chromatin.deepsea_files import planted_samples, write_v5, write_v73
from tests.conftest import LAMBDA, compose

CONF = Path(str(resources.files("bigbird_dna.conf")))
TINY_MODEL = {"vocab_size": 16, "hidden_size": 16, "num_layers": 1, "num_heads": 2, "intermediate_size": 32,
              "max_positions": 128, "attention": {"block_size": 16}}


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BIGBIRD_DNA_CACHE", str(tmp_path / "cache"))


@pytest.fixture
def inputs(tmp_path) -> dict[str, str]:
    """Small real inputs for every data config: genome, EPDnew BED, labelled TSV, bins, DeepSEA."""
    seq = _lambda_seq()
    genome = tmp_path / "genome.fa"
    genome.write_text(">chr1\n" + seq[:25000] + "\n>chr10\n" + seq[25000:37000] + "\n>chr11\n" + seq[37000:] + "\n")
    bed = tmp_path / "epd.bed"
    bed.write_text("".join(f"{c}\t{s}\t{s + 60}\t{c}_{s}\t900\t{'+-'[s % 2]}\n" for c in ("chr1", "chr10", "chr11")
                           for s in range(1501, 10000, 2500)))
    table = tmp_path / "train.tsv"
    table.write_text("sequence\tlabel\n"
                     + "".join(f"{seq[i:i + 200]}\t{(i // 200) % 2}\n" for i in range(0, 8000, 200)))
    bins = tmp_path / "bins.tsv"
    bins.write_text("".join(f"{c}\t{s}\t{s + 200}\t{s % 3 == 0:d}\t1\n" for c in ("chr1", "chr10", "chr11")
                            for s in range(1000, 12000, 1000)))
    gff = tmp_path / "genes.gff3"  # two genes per record, one on each strand, two exons each (1-based, closed)
    gff.write_text("##gff-version 3\n" + "".join(
        f"{c}\t.\tgene\t{s}\t{s + 1999}\t.\t{strand}\t.\tID={c}_{s}\n"
        f"{c}\t.\texon\t{s}\t{s + 799}\t.\t{strand}\t.\tParent={c}_{s}\n"
        f"{c}\t.\texon\t{s + 1200}\t{s + 1999}\t.\t{strand}\t.\tParent={c}_{s}\n"
        for c, length in (("chr1", 25000), ("chr10", 12000), ("chr11", len(seq) - 37000))
        for s, strand in ((3001, "+"), (length - 4000, "-"))))
    deepsea = tmp_path / "deepsea"
    deepsea.mkdir()
    from bigbird_dna.data.chromatin.onehot import encode_onehot
    for name, writer, prefix in (("train.mat", write_v73, "train"), ("valid.mat", write_v5, "valid")):
        seqs, labels = planted_samples(8, seed=1)
        writer(deepsea / name, encode_onehot(seqs), labels, prefix=prefix)
    return {"genome": str(genome), "bed": str(bed), "table": str(table), "bins": str(bins), "deepsea": str(deepsea),
            "gff": str(gff)}


DATA_CASES = {
    "genome": ("mlm", ["data.fasta={genome}", "data.window_bp=1000"]),
    "promoter_epdnew": ("promoter", ["data.fasta={genome}", "data.bed={bed}", "data.upstream_bp=500",
                                     "data.downstream_bp=500", "data.val_records=[chr10]",
                                     "data.test_records=[chr11]"]),
    "promoter_labelled": ("promoter", ["data.train={table}"]),
    "promoter_annotation": ("promoter", ["data.fasta={genome}", "data.gff={gff}", "data.val_records=[chr10]",
                                         "data.test_records=[chr11]", "data.min_tss_distance_bp=500"]),
    "splice_annotation": ("promoter", ["data.fasta={genome}", "data.gff={gff}", "data.val_records=[chr10]",
                                       "data.test_records=[chr11]", "data.task=splice_acceptors"]),
    "chromatin_intervals": ("chromatin", ["data.intervals={bins}", "data.fasta={genome}", "data.context_bp=1000",
                                          "data.val_records=[chr10]", "data.test_records=[chr11]", "task.num_labels=2",
                                          "task.groups=[[all,0,2]]"]),
    "deepsea": ("chromatin", ["data.dir={deepsea}", "data.test=null"]),
    "classify": ("classify", ["data.train={table}"]),
}
# Constructor arguments a task gets from its data (datamodule.task_inputs()) in a real run.
TASK_INPUTS = {"classify": {"class_names": ["a", "b", "c"]}}


def test_every_data_option_has_a_case():
    assert sorted(DATA_CASES) == options("data")


@pytest.mark.parametrize("data", sorted(DATA_CASES))
def test_data_configs_instantiate_their_target(tmp_path, inputs, data):
    task, overrides = DATA_CASES[data]
    cfg = compose([f"task={task}", f"data={data}", *(o.format(**inputs) for o in overrides)], tmp_path / "run")
    datamodule = instantiate(cfg.data, seed=0, run_dir=str(tmp_path / "run"), is_main_process=True)
    assert isinstance(datamodule, target_class(cfg.task).data_class)
    assert sum(len(s) for s in datamodule.training_text(2000)) == 2000
    assert (tmp_path / "run" / "split_manifest.json").exists() or data == "genome"


@pytest.mark.parametrize("task", options("task"))
def test_task_configs_instantiate_their_target(tmp_path, task):
    cfg = compose([f"task={task}"], tmp_path)
    settings = {k: v for k, v in OmegaConf.to_container(cfg.task, resolve=True).items()
                if k not in RUN_SETTINGS and k != "_target_"}
    module = target_class(cfg.task)(**settings, model=TINY_MODEL, optim=OmegaConf.to_container(cfg.optim),
                                    **TASK_INPUTS.get(task, {}))
    assert isinstance(module, EncoderTask) and module.task_name == cfg.task.name
    assert set(RUN_SETTINGS) - {"predict_window_bp", "schedule"} <= set(cfg.task)


@pytest.mark.parametrize("optim", options("optim"))
def test_optim_configs_build_an_optimizer(tmp_path, optim):
    cfg = compose([f"optim={optim}"], tmp_path)
    settings = {k: v for k, v in OmegaConf.to_container(cfg.optim).items() if k != "_target_"}
    result = target_class(cfg.optim)(torch.nn.Linear(4, 4), 100, **settings)
    assert isinstance(result["optimizer"], torch.optim.Optimizer)


@pytest.mark.parametrize("group", ["callbacks", "logger"])
def test_callback_and_logger_configs_instantiate(tmp_path, group):
    from importlib.util import find_spec

    import hydra

    for option in options(group):
        # task=promoter: early stopping exists for tasks with a schedule.patience (MLM has none)
        cfg = compose([f"{group}={option}", "task=promoter"], tmp_path)
        for name, node in cfg[group].items():
            if name == "tensorboard" and not (find_spec("tensorboard") or find_spec("tensorboardX")):
                assert target_class(node).__name__ == "TensorBoardLogger"  # the [tensorboard] extra is absent
                continue
            if name == "compile":  # off unless asked for: no callback, then a CompileLayers
                assert hydra.utils.instantiate(node) is None
                assert type(hydra.utils.instantiate(node, enabled=True)).__name__ == "CompileLayers"
                continue
            if name == "weight_average":  # off unless task.schedule.ema_decay is set: no callback, then the EMA
                assert hydra.utils.instantiate(node) is None
                assert type(hydra.utils.instantiate(node, decay=0.99)).__name__ == "ExponentialWeightAverage"
                continue
            assert hydra.utils.instantiate(node) is not None, name


@pytest.mark.parametrize("group", ["model", "attention", "tokenizer", "trainer", "paths", "experiment", "debug"])
def test_every_option_composes(tmp_path, group):
    from bigbird_dna.model.config import EncoderConfig

    for option in options(group):
        cfg = compose([f"{group}={option}"], tmp_path)
        EncoderConfig.from_dict({**OmegaConf.to_container(cfg.model, resolve=True), "vocab_size": 8})
        assert issubclass(target_class(cfg.data), target_class(cfg.task).data_class), option


def test_a_task_refuses_data_of_another_task_before_building_anything(tmp_path):
    from bigbird_dna.training.assembly import build

    cfg = compose(["task=promoter", f"data.fasta={LAMBDA}"], tmp_path / "run")
    with pytest.raises(InputError, match="task=promoter cannot train on GenomeMLMDataModule"):
        build(cfg, tmp_path / "run", True)
    assert not (tmp_path / "run").exists()
