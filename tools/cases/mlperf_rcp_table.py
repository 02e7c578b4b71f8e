#!/usr/bin/env python3
"""MLPerf Training reference convergence points (RCPs) as the C++ rows of models/mlperf_benchmark.cpp.

Reads rcps_<benchmark>.json files of mlcommons/logging (mlperf_logging/rcp_checker/training_X/)
and prints, per batch size, the RCP mean as rcp_checker computes it: the olympic mean (the
fastest and the slowest run dropped) of the samples to converge. Pruning, which drops points
slower than the interpolation of their neighbours, is left to the reader of the table. GPT-3's
points count training tokens (training_rules.adoc, "Epoch reporting"): --tokens-per-sample 2048
turns them into sequences.

    tools/cases/mlperf_rcp_table.py rcps_llama2_70b_lora.json rcps_llama31_8b.json ...
    tools/cases/mlperf_rcp_table.py --tokens-per-sample 2048 rcps_gpt3.json
"""
import argparse
import json


def olympic_mean(values):
    v = sorted(values)[1:-1]
    return sum(v) / len(v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--tokens-per-sample", type=float, default=1.0)
    args = ap.parse_args()
    for path in args.files:
        data = json.load(open(path))
        rows = []
        for rec in data.values():
            runs = rec.get("samples to converge") or rec["Epochs to converge"]
            mean = olympic_mean(runs) / args.tokens_per_sample
            rows.append((rec["BS"], mean, len(runs), rec["Benchmark"]))
        rows.sort()
        print(f"// {rows[0][3]}: {path}")
        for bs, mean, n, _ in rows:
            print(f"    {{{bs}, {mean:.1f}}},  // {n} runs")


if __name__ == "__main__":
    main()
