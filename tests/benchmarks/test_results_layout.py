"""Where result files go (``benchmarks/results/<date>_<machine>/``) and how their commands name paths."""
import sys

from benchmarks.common import REPO
from benchmarks.common.results import RESULTS, default_out, machine_slug, repo_command, script_command


def test_the_machine_is_named_by_its_gpu_model_or_its_cpu_cores():
    assert machine_slug({"device_type": "cuda", "device": "NVIDIA H100 80GB HBM3"}) == "h100"
    assert machine_slug({"device_type": "cuda", "device": "NVIDIA H200"}) == "h200"
    assert machine_slug({"device_type": "cuda", "device": "NVIDIA A100-SXM4-80GB"}) == "a100"
    assert machine_slug({"device_type": "cuda", "device": "NVIDIA GeForce RTX 4090"}) == "rtx-4090"
    assert machine_slug({"device_type": "cpu", "device": "cpu (x86_64)", "cpus": 2}) == "cpu-2core"


def test_a_result_goes_under_todays_date_and_this_machine():
    path = default_out("cpu_score")  # the harness's record of this machine's CPU
    day, machine = path.parent.name.split("_")
    assert path.parent.parent == RESULTS and path.name == "cpu_score.json"
    assert len(day) == 10 and day[4] == day[7] == "-" and machine.startswith("cpu-") and machine.endswith("core")


def test_commands_name_paths_relative_to_the_repository_or_by_file_name():
    command = [sys.executable, "-m", "bigbird_dna.predict", "--model", "/tmp/run/classify/export",
               str(REPO / "sample_data" / "h_pylori_F32.fa"), "--out-prefix", "outputs/scan"]
    assert repo_command(command).split()[1:] == ["-m", "bigbird_dna.predict", "--model", "export",
                                                 "sample_data/h_pylori_F32.fa", "--out-prefix", "outputs/scan"]
    assert repo_command("train data.train={a: /work/x/a.fa, b: /w/b.fa} hydra.run.dir=/scratch/run <dir>/export") == \
        "train data.train={a: a.fa, b: b.fa} hydra.run.dir=run <dir>/export"
    assert repo_command(["python", "/usr/bin/python3"]) == "python python3"
    assert script_command(str(REPO / "benchmarks" / "cpu_score.py"), ["--out", "/tmp/x.json"]) == \
        "python benchmarks/cpu_score.py --out x.json"
