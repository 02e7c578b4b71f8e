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
"$fabricsim" run --gpus 16 --link-trace "$dir/links.json" > /dev/null
for kind in run:breakdown scale:scale plan:plan compare:compare links:links; do
  input=${kind%%:*} what=${kind##*:}
  "$python" "$plot" "$what" "$dir/$input.json" -o "$dir/$what"
  for ext in png svg; do
    [ -s "$dir/$what.$ext" ] || { echo "FAIL: $what.$ext missing or empty"; exit 1; }
  done
done
# A sweep heatmap from the folder and from results.jsonl, default and chosen axes and metric.
cat > "$dir/spec.json" <<'EOF'
{"axes": {"/system/gpus": [8, 16], "/system/fabric/nic_bandwidth": ["100 Gbps", "400 Gbps"],
          "/training/global_batch": [64, 128]}, "combine": "product", "fidelity": "analytical"}
EOF
"$fabricsim" sweep "$dir/spec.json" -o "$dir/sweep" > /dev/null
"$python" "$plot" sweep "$dir/sweep" -o "$dir/heat"
"$fabricsim" plot sweep "$dir/sweep/results.jsonl" -o "$dir/heat2" --x /system/gpus \
  --y /training/global_batch --metric step_time_s --python "$python" > /dev/null
for f in heat.png heat.svg heat2.png heat2.svg; do
  [ -s "$dir/$f" ] || { echo "FAIL: $f missing or empty"; exit 1; }
done
if "$python" "$plot" sweep "$dir/sweep" -o "$dir/bad" --x /no/such 2> "$dir/err"; then
  echo "FAIL: an unknown sweep axis was drawn"; exit 1
fi
grep -q "no axis /no/such" "$dir/err" || { cat "$dir/err"; exit 1; }
# The CLI verb runs the same script.
"$fabricsim" plot compare "$dir/compare.json" -o "$dir/verb" --python "$python"
[ -s "$dir/verb.png" ] && [ -s "$dir/verb.svg" ] || { echo "FAIL: fabricsim plot"; exit 1; }
# Validation's scaling points, from the H100 MPT table kept in the tree; a report without them
# (the embedded run's) is refused.
repo=$(cd "$(dirname "$plot")/../.." && pwd)
"$fabricsim" validate --cases "$repo/calibration/data/holdout/llm-foundry-h100.json" --json \
  --set /simulation/backend=analytical > "$dir/validate.json"
"$python" "$plot" validate "$dir/validate.json" -o "$dir/validate"
[ -s "$dir/validate.png" ] && [ -s "$dir/validate.svg" ] || { echo "FAIL: validate plot"; exit 1; }
if "$python" "$plot" validate "$dir/run.json" -o "$dir/wrong" 2> "$dir/err"; then
  echo "FAIL: a run report was drawn as validation"; exit 1
fi
grep -q "not a fabricsim validate output" "$dir/err" || { cat "$dir/err"; exit 1; }
# A run report is not a plan search: a clear message and exit 2.
if "$python" "$plot" plan "$dir/run.json" -o "$dir/wrong" 2> "$dir/err"; then
  echo "FAIL: a run report was drawn as a plan search"; exit 1
fi
grep -q "not a fabricsim plan output" "$dir/err" || { cat "$dir/err"; exit 1; }
echo "plot: every kind drawn"
