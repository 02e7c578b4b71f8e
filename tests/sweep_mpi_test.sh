#!/usr/bin/env bash
# `mpirun -np 2 fabricsim sweep` equals the single-process sweep: the same results.jsonl and
# results.csv once sorted by point id, the same sweep.json, the same rows on standard output; a
# partial folder resumed under mpirun equals an uninterrupted run; a refused folder fails the job.
# Skips (77) when mpirun is missing or fabricsim was built without MPI.
#   sweep_mpi_test.sh FABRICSIM HAS_MPI(0|1) SPEC
set -euo pipefail
fabricsim=$1 has_mpi=$2 spec=$3
command -v mpirun >/dev/null || { echo "mpirun not found: skipped"; exit 77; }
[ "$has_mpi" = 1 ] || { echo "fabricsim built without MPI: skipped"; exit 77; }
# Root in a container (CI) needs the two ALLOW variables; --oversubscribe lets 2 ranks share fewer
# cores; the vader/self transports need no network set-up.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
export OMPI_MCA_rmaps_base_oversubscribe=1
# Under the sanitizer build: Open MPI's own allocations that MPI_Finalize never frees are
# suppressed (full stacks, so that they reach the MPI libraries); fabricsim's are still leaks.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}fast_unwind_on_malloc=0:print_suppressions=0:suppressions=$here/lsan-openmpi.supp"
mpi() { mpirun -np "$1" --oversubscribe "${@:2}"; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
same() {  # same A B: the two folders hold the same sweep and rows
  for f in results.jsonl results.csv; do
    cmp <(sort "$1/$f") <(sort "$2/$f") || { echo "FAIL: $f of $1 and $2 differ"; exit 1; }
  done
  cmp "$1/sweep.json" "$2/sweep.json" || { echo "FAIL: sweep.json differs"; exit 1; }
}

"$fabricsim" sweep "$spec" -q -o "$dir/one"
[ "$(wc -l < "$dir/one/results.jsonl")" -gt 4 ] || { echo "FAIL: too few points"; exit 1; }
mpi 2 "$fabricsim" sweep "$spec" -o "$dir/two" > "$dir/two.txt"
grep -q "on 2 MPI processes" "$dir/two.txt" || { echo "FAIL: summary"; cat "$dir/two.txt"; exit 1; }
same "$dir/one" "$dir/two"
mpi 2 "$fabricsim" sweep "$spec" --threads 2 -q -o "$dir/threads"
same "$dir/one" "$dir/threads"

# Without -o rank 0 prints every rank's rows in point order.
mpi 3 "$fabricsim" sweep "$spec" > "$dir/stdout.jsonl"
cmp <(sort "$dir/one/results.jsonl") "$dir/stdout.jsonl" || { echo "FAIL: stdout rows"; exit 1; }

# An interrupted MPI sweep (three rows kept, a fourth cut short) resumed under mpirun.
mkdir "$dir/part"
cp "$dir/two/sweep.json" "$dir/part/"
head -n 3 "$dir/two/results.jsonl" > "$dir/part/results.jsonl"
sed -n 4p "$dir/two/results.jsonl" | head -c 20 >> "$dir/part/results.jsonl"
mpi 2 "$fabricsim" sweep "$spec" --resume -o "$dir/part" > "$dir/resume.txt"
grep -q "3 done before" "$dir/resume.txt" || { echo "FAIL: resume"; cat "$dir/resume.txt"; exit 1; }
same "$dir/one" "$dir/part"

# A folder rank 0 refuses ends every rank with exit 2 and rank 0's message, once.
if mpi 2 "$fabricsim" sweep "$spec" -o "$dir/one" > /dev/null 2> "$dir/err"; then
  echo "FAIL: a full folder was accepted"; exit 1
fi
[ "$(grep -c "pass --resume" "$dir/err")" = 1 ] || { echo "FAIL: message"; cat "$dir/err"; exit 1; }
echo "mpirun sweeps equal the single-process sweep"
