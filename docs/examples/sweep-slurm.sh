#!/usr/bin/env bash
# A fabricsim sweep as a Slurm job array: task i of N runs the points with index % N == i into its
# own folder; a dependent job merges the folders once every task has finished.
#
#   jobid=$(sbatch --parsable docs/examples/sweep-slurm.sh docs/examples/sweep-fabric.json)
#   sbatch --dependency=afterok:$jobid --wrap \
#     "fabricsim sweep merge sweep-out/shard-* -o sweep-out/merged"
#
# A task that was preempted or timed out is rerun with the same command: --resume keeps the
# points it finished and evaluates the rest.
#SBATCH --job-name=fabricsim-sweep
#SBATCH --array=0-15
#SBATCH --cpus-per-task=8
#SBATCH --time=01:00:00
#SBATCH --output=sweep-out/log-%a.txt
set -euo pipefail
spec=${1:?usage: sbatch sweep-slurm.sh SPEC.json}
shards=${SLURM_ARRAY_TASK_COUNT:?run as a job array}
mkdir -p sweep-out
exec fabricsim sweep "$spec" --shard "${SLURM_ARRAY_TASK_ID}/${shards}" \
  --threads "${SLURM_CPUS_PER_TASK:-0}" --quiet --resume -o "sweep-out/shard-${SLURM_ARRAY_TASK_ID}"
