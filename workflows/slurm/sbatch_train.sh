#!/usr/bin/env bash
# Plain sbatch template: bigbird_dna training with Lightning DDP, one srun task per GPU.
#
#   sbatch workflows/slurm/sbatch_train.sh data.fasta=/data/hg38.fa model=base trainer.max_steps=100000
#   sbatch --nodes=2 workflows/slurm/sbatch_train.sh ...          # 2 nodes x 4 GPUs = 8 DDP ranks
#
# Everything after the script name is a Hydra override. Do not pass trainer.devices or
# trainer.num_nodes: they are taken from the allocation (--ntasks-per-node, --nodes), which is what
# Lightning's SLURMEnvironment requires (ntasks-per-node == devices; otherwise it silently uses
# fewer GPUs). Keep --gpus-per-node equal to --ntasks-per-node.
#
# Preemption and the time limit: SLURM sends SIGUSR1 to every task 180 s before the time limit
# (--signal below; at preemption too where the cluster sets PreemptParameters=send_user_signal).
# The run then saves $RUN_DIR/hpc_ckpt_<n>.ckpt at the next step, calls `scontrol requeue`, and
# stops; the requeued job runs this script again with the same job id, hence the same $RUN_DIR, and
# resumes from that checkpoint by itself. Test it with: scancel --signal=USR1 <job id>.
#
# Environment knobs: PYTHON (interpreter, default python), RUN_DIR (run directory, default
# outputs/slurm/<job name>-<job id>; must be the same for every task and every requeue).
#
#SBATCH --job-name=bigbird-dna
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=4          # = GPUs per node = trainer.devices (one DDP rank per task)
#SBATCH --gpus-per-node=4            # = --ntasks-per-node
#SBATCH --cpus-per-task=8            # per rank: data.num_workers + 1
#SBATCH --mem=64G
#SBATCH --time=24:00:00
#SBATCH --signal=USR1@180            # to the srun tasks (not "B:", which reaches only this shell)
#SBATCH --requeue
#SBATCH --open-mode=append           # a requeued job appends to its log
#SBATCH --output=slurm-%x-%j.out
set -euo pipefail

PYTHON=${PYTHON:-python}
RUN_DIR=${RUN_DIR:-outputs/slurm/${SLURM_JOB_NAME}-${SLURM_JOB_ID}}
TASKS_PER_NODE=${SLURM_NTASKS_PER_NODE:-1}

echo "job ${SLURM_JOB_ID} (restart ${SLURM_RESTART_COUNT:-0}) on ${SLURM_JOB_NODELIST}:" \
     "${SLURM_JOB_NUM_NODES} node(s) x ${TASKS_PER_NODE} task(s), run dir ${RUN_DIR}"

# srun starts the ranks; every one gets the same run dir, so rank 0's files are shared.
srun --kill-on-bad-exit=1 "$PYTHON" -m bigbird_dna.train \
    "hydra.run.dir=${RUN_DIR}" \
    "trainer.devices=${TASKS_PER_NODE}" "trainer.num_nodes=${SLURM_JOB_NUM_NODES}" \
    "$@"
