#!/usr/bin/env bash
# tools/plot/fabricsim_plot.py draws every kind from real fabricsim outputs: each PNG and SVG is
# produced and non-empty, and a file of the wrong kind is rejected. Skips (77) without matplotlib.
#   plot_test.sh FABRICSIM PYTHON3 PLOT_SCRIPT
set -euo pipefail
fabricsim=$1 python=$2 plot=$3
"$python" -c "import matplotlib" 2>/dev/null || { echo "matplotlib missing: skipped"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$fabricsim" run --json --backend analytical > "$dir/run.json"
"$fabricsim" scale --systems dgx-h100,gb200-nvl72 --gpu-counts 8,16,32 --backend analytical \
  --json > "$dir/scale.json"
"$fabricsim" plan --system dgx-h100 --gpus 16 --model llama2-7b --set /model/layers=8 \
  --global-batch 32 --seq-len 4096 --max-micro-batch 2 --top 2 --json > "$dir/plan.json"
"$fabricsim" compare --backend analytical --gpus 16 \
  --vary /system/fabric/nic_bandwidth=100Gbps,200Gbps --json > "$dir/compare.json"
for kind in run:breakdown scale:scale plan:plan compare:compare; do
  input=${kind%%:*} what=${kind##*:}
  "$python" "$plot" "$what" "$dir/$input.json" -o "$dir/$what"
  for ext in png svg; do
    [ -s "$dir/$what.$ext" ] || { echo "FAIL: $what.$ext missing or empty"; exit 1; }
  done
done
# A run report is not a plan search: a clear message and exit 2.
if "$python" "$plot" plan "$dir/run.json" -o "$dir/wrong" 2> "$dir/err"; then
  echo "FAIL: a run report was drawn as a plan search"; exit 1
fi
grep -q "not a fabricsim plan output" "$dir/err" || { cat "$dir/err"; exit 1; }
echo "plot: every kind drawn"
