"""``data=promoter_annotation``: the task built on the fly for ``python -m bigbird_dna.train``."""

from __future__ import annotations

import json

from hydra.utils import instantiate

from bigbird_dna.data.annotation.build import build_task_from_files
from bigbird_dna.data.annotation.datamodule import AnnotatedTaskData, settings_from_config
from bigbird_dna.data.promoter.files import read_table
from bigbird_dna.genome import open_genome
from bigbird_dna.tasks.promoter import PromoterTask
from tests.conftest import compose

DISTANCES = ["data.min_tss_distance_bp=600", "data.gene_body_tss_distance_bp=300"]


def _overrides(annotated, key="gff3"):
    return ["task=promoter", "data=promoter_annotation", f"data.fasta={annotated['fasta']}",
            f"data.gff={annotated[key]}", *DISTANCES]


def test_config_builds_the_datamodule_and_writes_the_task(annotated, tmp_path):
    run_dir = tmp_path / "run"
    cfg = compose(_overrides(annotated, "gtf_gz"), run_dir)
    datamodule = instantiate(cfg.data, seed=5, run_dir=str(run_dir), is_main_process=True)
    assert isinstance(datamodule, AnnotatedTaskData) and isinstance(datamodule, PromoterTask.data_class)
    manifest = json.loads((run_dir / "split_manifest.json").read_text())
    assert manifest["samples"] == datamodule.counts and manifest["seed"] == 5
    assert manifest["splits"]["val"]["regions"][0] == {"record": "chrA", "start": 16000, "end": 18000}
    task_manifest = json.loads((run_dir / "annotation" / "manifest.json").read_text())
    assert task_manifest["counts"] == datamodule.counts
    train = read_table(run_dir / "annotation" / "train.tsv")
    assert train.seqs == datamodule.datasets["train"].seqs
    assert (train.labels == datamodule.datasets["train"].labels).all()
    # the same windows as the CLI's builder, from the same files, settings and seed
    settings = settings_from_config(dict(cfg.data))
    task, _ = build_task_from_files(open_genome(annotated["fasta"]), annotated["gtf_gz"], "promoters", settings, 5)
    assert [s.sequence for s in task.samples["val"]] == datamodule.datasets["val"].seqs
    assert sum(len(s) for s in datamodule.training_text(2000)) == 2000


def test_other_ranks_build_the_same_data_without_writing(annotated, tmp_path):
    cfg = compose(_overrides(annotated), tmp_path / "run")
    main = instantiate(cfg.data, seed=0, run_dir=str(tmp_path / "main"), is_main_process=True)
    other = instantiate(cfg.data, seed=0, run_dir=str(tmp_path / "other"), is_main_process=False)
    assert not (tmp_path / "other").exists()
    for split in ("train", "val", "test"):
        assert main.datasets[split].seqs == other.datasets[split].seqs


def test_tiny_fit_on_the_annotated_task(annotated, train_in_process):
    summary, run_dir = train_in_process(*_overrides(annotated), "tokenizer=char", "data.num_workers=0",
                                        "data.batch_size=8", "trainer.max_steps=2", "trainer.val_check_interval=2",
                                        "test=false", "data.baselines.enabled=false")
    assert summary["global_step"] == 2
    assert (run_dir / "annotation" / "train.tsv").exists()
    assert (run_dir / "export").is_dir()


def test_reverse_complement_prob_flips_that_share_of_train_windows_only(annotated, tmp_path):
    from bigbird_dna.genome.sequence import reverse_complement
    from bigbird_dna.tokenizer.fixed import char_tokenizer

    cfg = compose([*_overrides(annotated), "data.reverse_complement_prob=0.5", "data.num_workers=0"], tmp_path / "run")
    datamodule = instantiate(cfg.data, seed=3, run_dir=str(tmp_path / "run"), is_main_process=True)
    datamodule.attach_tokenizer(char_tokenizer(), 512)
    train = datamodule.datasets["train"]
    served = datamodule.train_dataloader().dataset
    flipped = [served[i][0] != train[i][0] for i in range(len(train))]
    assert all(served[i][0] == (reverse_complement(train[i][0]) if f else train[i][0]) for i, f in enumerate(flipped))
    assert all((served[i][1] == train[i][1]).all() for i in range(len(train))), "labels never change"
    assert 0.3 < sum(flipped) / len(train) < 0.7, sum(flipped) / len(train)
    again = [served[i][0] != train[i][0] for i in range(len(train))]
    assert flipped == again and [datamodule.train_dataloader().dataset[i][0] for i in range(5)] == \
        [served[i][0] for i in range(5)], "the draw is fixed by the seed and epoch"
    assert datamodule.val_dataloader().dataset is datamodule.datasets["val"], "validation is never flipped"
    off = instantiate(compose(_overrides(annotated), tmp_path / "off").data, seed=3, run_dir=str(tmp_path / "off"))
    off.attach_tokenizer(char_tokenizer(), 512)
    assert off.train_dataloader().dataset is off.datasets["train"]
