#!/usr/bin/env python3
"""DeepSeek-V3's layers on H800, against DeepSeek's own profile of a DualPipe chunk pair.

deepseek-ai/profile-data `train.json` (commit ae7fc07, 2025-02) is a PyTorch profiler trace of
one forward chunk and one backward chunk that DualPipe runs overlapped, each of 4 MoE layers of
DeepSeek-V3 at its pre-training setting (EP64, TP1, 4K tokens per sequence, balanced routing, no
pipeline traffic), on one H800. Its GPU time per kernel class comes from `fabricsim calibrate
trace` (DeepEP's kernels are the communication class). The model side is DeepSeek-V3 on 64 H800
(`dgx-h800`) with the `hai-llm` stack, micro-batch 1: the same step with 8 and with 4 MoE layers,
whose difference over 4 layers leaves one layer's forward and backward without the embedding,
the head and the optimizer. A check, not a fit: nothing here feeds a profile. The trace is not
in this repository (its repository states no licence); fetch it and pass its path:

    tools/cases/dualpipe_layer_check.py TRAIN_JSON [--fabricsim build/tools/fabricsim/fabricsim]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

LAYERS_TRACED = 4  # MoE layers per chunk in the profile


def scenario(layers, overlap):
    return {
        "system": {"preset": "dgx-h800", "gpus": 64},
        "model": {"preset": "deepseek-v3", "layers": layers, "moe": {"dense_layers": 0},
                  "mtp_layers": 0},
        "parallelism": {"tp": 1, "pp": 1, "dp": 64, "ep": 64, "micro_batch": 1,
                        "dp_comm_overlap": False, "param_gather_overlap": False},
        "training": {"global_batch": 64, "seq_len": 4096, "precision": "fp8"},
        "software": {"framework": "hai-llm", "moe_a2a_overlap": overlap},
        "simulation": {"backend": "analytical"},
    }


def run(fabricsim, doc):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "scenario.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        out = subprocess.run([fabricsim, "run", path, "--json"], check=True,
                             capture_output=True, text=True).stdout
    return json.loads(out)


def per_layer(fabricsim, overlap):
    """One layer's forward and backward of one micro-batch: op classes and breakdown (ms)."""
    small, large = (run(fabricsim, scenario(n, overlap)) for n in (4, 8))
    def diff(key, part):
        return (large[key][part] - small[key][part]) / 4 * 1e3
    classes = {k: diff("op_classes", k) for k in small["op_classes"] if k != "optimizer_s"}
    parts = {k: diff("breakdown", k) for k in ("compute_s", "exposed_ep_s")}
    return classes, parts


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", help="deepseek-ai/profile-data train.json")
    parser.add_argument("--fabricsim", default="build/tools/fabricsim/fabricsim")
    args = parser.parse_args()
    traced = json.loads(subprocess.run([args.fabricsim, "calibrate", "trace", args.trace,
                                        "--json"], check=True, capture_output=True,
                                       text=True).stdout)
    measured = {k: v / LAYERS_TRACED * 1e3 for k, v in traced["per_step_s"].items()}
    window = traced["window_s"] / LAYERS_TRACED * 1e3
    classes, overlapped = per_layer(args.fabricsim, True)
    _, blocking = per_layer(args.fabricsim, False)
    memory = sum(classes[k] for k in ("memory_bound_s", "fp8_overhead_s", "moe_routing_s",
                                      "launch_gaps_s", "loss_s"))
    compute = measured["gemm"] + measured["attention"] + measured["memory"]
    rows = [
        ("GEMMs", measured["gemm"], classes["gemm_s"]),
        ("attention", measured["attention"], classes["attention_s"]),
        ("memory-bound, casts, routing", measured["memory"], memory),
        ("all compute", compute, overlapped["compute_s"]),
        ("dispatch and combine (trace: DeepEP kernels busy)", measured["communication"],
         blocking["exposed_ep_s"]),
        ("the layer, F and B overlapped (trace: GPU window)", window,
         overlapped["compute_s"] + overlapped["exposed_ep_s"]),
    ]
    print(f"{'per layer, forward + backward (ms)':<52} {'trace':>8} {'model':>8} {'model/trace':>12}")
    for name, m, p in rows:
        print(f"{name:<52} {m:8.2f} {p:8.2f} {p / m:12.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
