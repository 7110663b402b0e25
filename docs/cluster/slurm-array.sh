#!/usr/bin/env bash
# Run one dse study on a Slurm cluster: one array task per worker, all against one PostgreSQL
# database (docs/cluster.md). Create the study once, from the login node:
#
#   export DSE_DB="postgresql://dse@db-host:5432/dse"     # password in ~/.pgpass (mode 0600)
#   dse run mlperf-dcnv2 --storage "$DSE_DB" --trials 0   # records it and queues its baselines
#   sbatch --array=0-31 docs/cluster/slurm-array.sh mlperf-dcnv2
#
# The workers share the study's budget and all exit 0 once it is complete; submit more tasks at
# any time to speed it up. With more than ~30 workers, see the note at the end.
#
#SBATCH --job-name=dse-worker
#SBATCH --cpus-per-task=1
#SBATCH --mem=2G
#SBATCH --time=04:00:00
#SBATCH --output=dse-worker-%A_%a.log
set -euo pipefail
study="${1:?usage: sbatch --array=0-N slurm-array.sh STUDY}"
: "${DSE_DB:?export DSE_DB=postgresql://USER@HOST:PORT/DB (or grpc://127.0.0.1:PORT) before sbatch}"
# Slurm's time limit and scancel send SIGTERM: the worker finishes its running trial (dse trials
# take milliseconds) and exits 143, leaving nothing RUNNING. A task killed outright (SIGKILL after
# KillWait, a lost node) leaves its trial RUNNING; the other workers find it by its stale
# heartbeat after ~10 s and retry it.
exec dse worker "$study" --storage "$DSE_DB"

# Many tasks per node: run one `dse storage-proxy --storage "$DSE_DB" --port 13000` per node
# (it listens on loopback; the database then sees 8 connections per node, not 2-3 per worker) and
# give this script DSE_DB=grpc://127.0.0.1:13000 instead. A worker waits up to 10 s for its proxy.
