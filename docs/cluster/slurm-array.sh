#!/usr/bin/env bash
# Run one dse study on a Slurm cluster: one array task per worker, all against one PostgreSQL
# database. The study is created once (first line below, run from the login node); the workers
# then share its budget and stop together when the budget of completed trials is reached.
#
#   export DSE_STORAGE="postgresql+psycopg://dse:PASSWORD@db-host:5432/dse"
#   dse run mlperf-dcnv2 --storage "$DSE_STORAGE" --trials 1 --no-report   # creates the study
#   sbatch --array=0-31 docs/cluster/slurm-array.sh mlperf-dcnv2
#
#SBATCH --job-name=dse-worker
#SBATCH --cpus-per-task=1
#SBATCH --mem=2G
#SBATCH --time=04:00:00
#SBATCH --output=dse-worker-%A_%a.log
set -euo pipefail
study="${1:?usage: sbatch --array=0-N slurm-array.sh STUDY}"
: "${DSE_STORAGE:?set DSE_STORAGE to the study's PostgreSQL URL (or grpc://proxy-host:13000)}"
# A worker killed by Slurm (time limit, preemption) leaves its trial RUNNING; PostgreSQL's
# heartbeat fails it and another worker retries it, so nothing finished is lost.
exec dse worker "$study" --storage "$DSE_STORAGE"
