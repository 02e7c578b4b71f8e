#!/usr/bin/env python3
"""Times Calculon (SC'23) per plan evaluation, for docs/performance.md's comparison.

One evaluation is what a planner built on Calculon pays per plan: Llm(app), compile(system,
execution), run(system), in-process on Calculon's shipped H100 system. CPU time, best of
--repeats rounds of --evaluations each. The plans are the ones bench_training_step times in
fabricsim (BM_Llama70B_H100_512_AnalyticalPlan, BM_Llama405B_H100_AnalyticalPlan); Calculon's
model is GPT-shaped (multi-head attention, a two-matrix MLP), so it gets Llama's widths and
depths without GQA or the gate. Run both on the same machine and compare the ratio:

  /usr/bin/python3 tools/cases/calculon_speed.py --calculon /path/to/calculon
  build/bench/bench_training_step --benchmark_filter=AnalyticalPlan
"""
import argparse
import json
import os
import sys
import time
import types

PLANS = {
    # Llama 3 70B on 512 H100: TP4 PP4 CP2 VP5 DP16 in fabricsim. Calculon has no context
    # parallelism: TP8 PP4 VP5 DP16 keeps the per-GPU sequence work of CP2.
    "llama3-70b/512": (
        {"hidden": 8192, "feedforward": 28672, "seq_size": 8192, "attn_heads": 64,
         "attn_size": 128, "num_blocks": 80},
        {"num_procs": 512, "tensor_par": 8, "pipeline_par": 4, "data_par": 16,
         "batch_size": 512, "pipeline_interleaving": 5}),
    # Llama 3.1 405B on 16,384 H100: TP8 PP16 DP128 (VP2 in fabricsim; 126 blocks do not split
    # into 32 chunks in Calculon, which asks the blocks to divide).
    "llama3.1-405b/16384": (
        {"hidden": 16384, "feedforward": 53248, "seq_size": 8192, "attn_heads": 128,
         "attn_size": 128, "num_blocks": 128},
        {"num_procs": 16384, "tensor_par": 8, "pipeline_par": 16, "data_par": 128,
         "batch_size": 2048, "pipeline_interleaving": 1}),
}


def execution(plan):
    exe = {"tensor_par_net": 0, "pipeline_par_net": 1, "data_par_net": 1,
           "microbatch_size": 1, "fused_activation": True,
           # The shipped H100 system lists float16 and float8; bf16 runs at float16's rate.
           "datatype": "float16",
           "attention_type": "multihead",
           # Calculon's memory check rejects selective recomputation for these plans.
           "activation_recompute": "full", "optimizer_sharding": True,
           "tensor_par_comm_type": "rs_ag", "tensor_par_overlap": "none",
           "seq_par_ag_redo": False, "data_par_overlap": True, "weight_offload": False,
           "activations_offload": False, "optimizer_offload": False, "training": True}
    exe.update(plan)
    return exe


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calculon", required=True, help="a checkout of calculon-ai/calculon")
    parser.add_argument("--evaluations", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    # Calculon's package imports psutil and pandas for its sweeps only.
    for module in ("psutil", "pandas"):
        if module not in sys.modules:
            stub = types.ModuleType(module)
            stub.cpu_count = lambda logical=False: 1
            sys.modules[module] = stub
    sys.path.insert(0, args.calculon)
    from calculon import System
    from calculon.llm import Llm
    with open(os.path.join(args.calculon, "systems", "h100_80g_nvl8.json")) as f:
        system = System(json.load(f))

    class Log:
        def info(self, *_):
            pass
        debug = warning = error = info

    for name, (app_doc, plan) in PLANS.items():
        app = Llm.Application(app_doc)
        exe = Llm.Execution.from_json(execution(plan))
        best = float("inf")
        for _ in range(args.repeats):
            start = time.process_time()
            for _ in range(args.evaluations):
                model = Llm(app, Log())
                model.compile(system, exe)
                model.run(system)
            best = min(best, (time.process_time() - start) / args.evaluations)
        stats = model.get_stats_json(False)
        print(f"{name}: {best * 1e6:,.0f} us per plan (best of {args.repeats} x "
              f"{args.evaluations}), batch time {stats['total_time']:.3f} s")


if __name__ == "__main__":
    main()
