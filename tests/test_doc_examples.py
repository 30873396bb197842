"""The documentation's examples work as written: every ``python -m bigbird_dna.*`` command and every
Python block of the README and docs/.

- **train** commands are composed with Hydra and resolved, as ``python -m bigbird_dna.train`` would
  before it reads any file (``-m`` dropped, the first value of a sweep): a renamed key, a missing
  config group or a broken interpolation fails here as it would for a user.
- **inference** commands (predict, embed, variants, score, tokenizer, data.annotation) run, in a
  folder holding the files they name: a small genome as ``genome.fa``, ``genome.fa.gz`` and
  ``hg19.fa.gz`` (lambda phage cut into ``chr1`` and ``chr2``), ``other.fa``, ``regions.bed``,
  ``calls.vcf.gz``, ``genes.gff3.gz`` (two-exon genes, GT...AG introns), ``peaks.bed``, untrained
  tiny exports at the paths the docs use (``EXPORT``, ``run/export``,
  ``outputs/{mlm,promoter,chromatin}/runs/<date>/export``), and ``peaks_attr.h5``, the chromatin
  export's attributions of ``peaks.bed`` written by ``explain``.
- **Python blocks** run in that folder with ``seqs`` (DNA strings) and the kernel example's
  ``q, k, v, T, mask`` defined.
- Scripts a command names under the repository (``bash benchmarks/X.sh``, ``python X.py``) exist.
"""

from __future__ import annotations

import gzip
import re
import shlex
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from tests.conftest import LAMBDA, REPO, compose

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```(bash|python)\n(.*?)^```", re.MULTILINE | re.DOTALL)
COMMAND = re.compile(r"python -m (bigbird_dna[\w.]*)(.*)")
SCRIPT = re.compile(r"(?:^|\s)(?:bash|python) ((?:benchmarks|workflows)/[\w/.-]+)")
DATE = "2026-01-01"  # stands for the docs' <date>
RUNS_IN_PROCESS = {  # module -> the module whose main(argv) it runs
    "bigbird_dna.predict": "bigbird_dna.predict",
    "bigbird_dna.embed": "bigbird_dna.embed",
    "bigbird_dna.variants": "bigbird_dna.variants.__main__",
    "bigbird_dna.score": "bigbird_dna.score.__main__",
    "bigbird_dna.tokenizer": "bigbird_dna.tokenizer.__main__",
    "bigbird_dna.data.annotation": "bigbird_dna.data.annotation.__main__",
    "bigbird_dna.explain": "bigbird_dna.explain.__main__",
    "bigbird_dna.motifs": "bigbird_dna.motifs.__main__",
}
PRELUDE = """
import torch
seqs = ["ACGTTGCATGCAAATTTCCGG" * 10, "TTGACAATTAATCATCGGCTCGTATAATGTGTGGAATTGTGAGC" * 4]
T = 512
q, k, v = (torch.randn(1, 12, T, 64) for _ in range(3))
mask = torch.ones(1, T, dtype=torch.bool)
"""


@dataclass(frozen=True)
class Example:
    """One example: ``where`` is ``page:line`` of its code block."""

    where: str
    kind: str  # "command", "python" or "script"
    text: str  # the command's module and arguments, the Python source, or the script's path


def _lines(body: str) -> list[str]:
    """The shell lines of a block: ``\\`` continuations joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", body)
    return [line.split(" #")[0].strip() for line in joined.splitlines() if not line.lstrip().startswith("#")]


def doc_examples() -> list[Example]:
    examples: list[Example] = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for block in BLOCK.finditer(text):
            where = f"{page.relative_to(REPO)}:{text[:block.start()].count(chr(10)) + 1}"
            lang, body = block.groups()
            if lang == "python":
                if "bigbird_dna" in body:
                    examples.append(Example(where, "python", body.replace("<date>", DATE)))
                continue
            for line in _lines(body):
                examples += [Example(where, "script", path) for path in SCRIPT.findall(line)]
                command = COMMAND.search(line)
                if command:
                    text = (command.group(1) + command.group(2)).replace("<date>", DATE)
                    examples.append(Example(where, "command", text))
    return list(dict.fromkeys(examples))


EXAMPLES = doc_examples()
TRAIN = [e for e in EXAMPLES if e.kind == "command" and e.text.startswith("bigbird_dna.train")]
RUN = [e for e in EXAMPLES if e.kind == "command" and e not in TRAIN]
PYTHON = [e for e in EXAMPLES if e.kind == "python"]
SCRIPTS = [e for e in EXAMPLES if e.kind == "script"]


def _id(example: Example) -> str:
    return f"{example.where} {example.text.splitlines()[0][:60]}"


def test_the_docs_have_examples_of_every_kind():
    """The extraction can fail: the pages hold train, inference and Python examples."""
    modules = {shlex.split(e.text)[0] for e in RUN}
    assert len(TRAIN) >= 15 and len(PYTHON) >= 5 and SCRIPTS
    assert modules == set(RUNS_IN_PROCESS), f"a doc runs a module this test cannot: {modules - set(RUNS_IN_PROCESS)}"


def first_of_sweep(argument: str) -> str:
    """``key=a,b`` -> ``key=a`` (a Hydra sweep, outside brackets and braces); else unchanged."""
    key, sep, value = argument.partition("=")
    if not sep or value[:1] in "[{\"'":
        return argument
    return f"{key}={value.split(',')[0]}"


@pytest.mark.parametrize("example", TRAIN, ids=_id)
def test_train_commands_compose(example, tmp_path):
    arguments = [first_of_sweep(a) for a in shlex.split(example.text)[1:] if a != "-m"]
    cfg = compose(arguments, tmp_path / "run")
    OmegaConf.to_container(cfg, resolve=True)  # every interpolation resolves


@pytest.mark.parametrize("example", SCRIPTS, ids=_id)
def test_scripts_named_by_the_docs_exist(example):
    assert (REPO / example.text).is_file(), f"{example.where} names {example.text}, which is not in the repository"


# ---------------------------------------------------------------------------------------------
# The folder the inference commands and Python blocks run in
# ---------------------------------------------------------------------------------------------

GENES = [("chr1", 3001, 5000, "+"), ("chr1", 9001, 12000, "-"), ("chr1", 16001, 18000, "+"),
         ("chr1", 24501, 25500, "+"), ("chr1", 27501, 28600, "-"), ("chr2", 2001, 4000, "+"),
         ("chr2", 10001, 10500, "+"), ("chr2", 11001, 11800, "-")]  # 1-based, closed, as in GFF3


def _fasta(records: dict[str, str]) -> str:
    return "".join(f">{name}\n" + "".join(seq[i:i + 60] + "\n" for i in range(0, len(seq), 60))
                   for name, seq in records.items())


def _intron(seq: str, start: int, end: int, strand: str) -> tuple[int, int]:
    """A GT...AG intron ``[a, b)`` (0-based, half-open) in the middle half of the gene ``[start, end)``
    of ``seq``, as the splice examples need: the first GT (CT on -) and the last AG (AC on -) there."""
    first, last = ("GT", "AG") if strand == "+" else ("CT", "AC")
    a = seq.index(first, start + (end - start) // 4)
    return a, seq.rindex(last, a + 2, end - (end - start) // 4) + 2


def _gff3(genome: dict[str, str]) -> str:
    """Two-exon genes (1-based, closed), each intron GT...AG on its strand."""
    lines = ["##gff-version 3"]
    for i, (record, start, end, strand) in enumerate(GENES):
        a, b = _intron(genome[record], start - 1, end, strand)
        lines += [f"{record}\tdocs\tgene\t{start}\t{end}\t.\t{strand}\t.\tID=g{i}",
                  f"{record}\tdocs\tmRNA\t{start}\t{end}\t.\t{strand}\t.\tID=t{i};Parent=g{i}",
                  f"{record}\tdocs\texon\t{start}\t{a}\t.\t{strand}\t.\tID=e{i}a;Parent=t{i}",
                  f"{record}\tdocs\texon\t{b + 1}\t{end}\t.\t{strand}\t.\tID=e{i}b;Parent=t{i}"]
    return "\n".join(lines) + "\n"


def _vcf(chr1: str) -> str:
    other = {"A": "G", "C": "T", "G": "A", "T": "C"}
    rows = [("chr1", 1501, chr1[1500], other[chr1[1500]]), ("chr1", 2001, chr1[2000:2003], chr1[2000]),
            ("chr1", 7001, chr1[7000], other[chr1[7000]])]
    header = "##fileformat=VCFv4.2\n##contig=<ID=chr1,length=30000>\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"
    return header + "".join(f"{c}\t{p}\tv{i}\t{r}\t{a}\t.\tPASS\t.\n" for i, (c, p, r, a) in enumerate(rows))


def _export(out_dir: Path, task: str, max_positions: int, predict_window_bp: int, names: tuple[str, ...] = ()) -> Path:
    """An untrained one-layer export (one token per base) written as training writes one."""
    import torch

    from bigbird_dna.hf import write_hf_export
    from bigbird_dna.model.outputs import SIGMOID, ModelOutput
    from bigbird_dna.tasks.classification import SequenceClassificationTask
    from bigbird_dna.tasks.mlm import MLMTask
    from bigbird_dna.tokenizer.fixed import char_tokenizer
    from tests.promoter.conftest import TINY_MODEL

    torch.manual_seed(0)
    tokenizer = char_tokenizer()
    model = {**TINY_MODEL, "num_layers": 1, "max_positions": max_positions, "vocab_size": tokenizer.vocab_size,
             "pad_id": 0}
    task_config = {"name": task, "predict_window_bp": predict_window_bp}
    if task == "mlm":
        module = MLMTask(model, {}, tokenizer_sha256=tokenizer.sha256)
    else:
        output = ModelOutput(SIGMOID, names or (task,))
        module = SequenceClassificationTask(model, {}, num_labels=len(output.names), head={"dropout": 0.0},
                                            tokenizer_sha256=tokenizer.sha256, output=output)
        task_config["head"] = {"dropout": 0.0}
    return write_hf_export(out_dir, task, module.state_dict(), module.config.to_dict(), tokenizer, module.output,
                           task_config)


@pytest.fixture(scope="module")
def doc_folder(tmp_path_factory) -> Path:
    """The inputs and exports the docs name, in one folder (read only by the examples)."""
    folder = tmp_path_factory.mktemp("doc_inputs")
    phage = "".join(line.strip() for line in LAMBDA.read_text().splitlines()[1:])
    genome = {"chr1": phage[:30000], "chr2": phage[30000:42000]}
    (folder / "genome.fa").write_text(_fasta(genome))
    (folder / "other.fa").write_text(_fasta({"contig_x": phage[42000:]}))
    for name, text in [("genome.fa.gz", _fasta(genome)), ("hg19.fa.gz", _fasta(genome)),
                       ("genes.gff3.gz", _gff3(genome)), ("calls.vcf.gz", _vcf(genome["chr1"]))]:
        with gzip.open(folder / name, "wt") as handle:
            handle.write(text)
    (folder / "regions.bed").write_text("chr1\t1000\t1200\tr1\nchr1\t5000\t5300\tr2\nchr2\t3000\t3100\tr3\n")
    mlm = _export(folder / "EXPORT", "mlm", max_positions=512, predict_window_bp=126)
    runs = folder / "outputs"
    for link in (runs / "mlm" / "runs" / DATE / "export", folder / "run" / "export"):
        link.parent.mkdir(parents=True)
        link.symlink_to(mlm, target_is_directory=True)
    _export(runs / "promoter" / "runs" / DATE / "export", "promoter", max_positions=8192, predict_window_bp=1000)
    chromatin = _export(runs / "chromatin" / "runs" / DATE / "export", "chromatin", max_positions=1024,
                        predict_window_bp=1000, names=("CTCF", "DNase", "H3K4me3", "POLR2A"))
    (folder / "peaks.bed").write_text("chr1\t2000\t2200\tp1\t0\t+\nchr1\t8000\t8200\tp2\t0\t-\n"
                                      "chr2\t500\t700\tp3\t0\t+\n")
    from bigbird_dna.explain.__main__ import main as explain

    explain(["--model", str(chromatin), str(folder / "genome.fa"), "--bed", str(folder / "peaks.bed"), "--target",
             "CTCF", "--method", "gradient_x_input", "--h5", str(folder / "peaks_attr.h5"), "--no-progress"])
    (folder / "sample_data").symlink_to(REPO / "sample_data", target_is_directory=True)
    return folder


@pytest.fixture
def in_doc_folder(doc_folder, tmp_path, monkeypatch) -> Path:
    """A fresh working folder that links to every input: each example writes its own outputs."""
    for entry in doc_folder.iterdir():
        (tmp_path / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BIGBIRD_DNA_CACHE", str(doc_folder.parent / "doc_cache"))
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    return tmp_path


@pytest.mark.parametrize("example", RUN, ids=_id)
def test_inference_commands_run(example, in_doc_folder):
    module, *argv = shlex.split(example.text)
    before = set(in_doc_folder.rglob("*"))
    try:
        import_module(RUNS_IN_PROCESS[module]).main(argv)
    except SystemExit as stop:
        assert stop.code in (0, None), f"{example.where}: python -m {example.text} exited {stop.code}"
    written = [p for p in set(in_doc_folder.rglob("*")) - before if p.is_file() and p.stat().st_size > 0]
    assert written, f"{example.where}: python -m {example.text} wrote nothing"


@pytest.mark.parametrize("example", PYTHON, ids=_id)
def test_python_blocks_run(example, in_doc_folder):
    namespace: dict = {"__name__": "__doc_example__"}
    exec(compile(PRELUDE, "<prelude>", "exec"), namespace)
    exec(compile(example.text, example.where, "exec"), namespace)

