#!/usr/bin/env python3
"""One MoE layer, forward and backward, against Megatron-LM's own MoE-layer benchmark.

Megatron-LM's `tests/functional_tests/test_cases/common/moe_perf` (baseline.json, commit
cf39a4d, "Add moe layer perf UT", 2025-12-17) times one MoELayer on 8 H100 (EP 8, 4096 tokens,
micro-batch 1, forced load balancing, permute and router fusion) for the alltoall, DeepEP and
Hybrid-EP dispatchers, in BF16 and in FP8 with Transformer Engine's blockwise recipe: 5 warm-up
and 20 timed iterations of CUDA events around the layer's forward and its backward. This script
builds the same layer as a one-layer fabricsim scenario, runs it with `fabricsim run --trace`
and reads the MoE block's span in each pass (router to the last expert op forward, the first
MoE op to the router's gradients backward), at the boost clock (the built-in dgx-h100 profile
with `fitted_in_step`, so no sustained-clock share: the benchmark's runs are short). A check,
not a fit: nothing here feeds a profile.

    tools/cases/moe_layer_check.py [--fabricsim build/tools/fabricsim/fabricsim]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

# baseline.json of Megatron-LM moe_perf at cf39a4d: (forward ms, backward ms).
MEASURED = {
    ("mixtral", "alltoall", "bf16"): (4.32688798904419, 7.684332823753357),
    ("mixtral", "alltoall", "fp8"): (3.7876319885253906, 6.618246412277221),
    ("mixtral", "deepep", "bf16"): (4.635550403594971, 7.854356813430786),
    ("mixtral", "deepep", "fp8"): (4.101150441169739, 6.82720000743866),
    ("mixtral", "hybridep", "bf16"): (4.342604804039001, 7.740782427787781),
    ("mixtral", "hybridep", "fp8"): (3.7007392168045046, 6.57167682647705),
    ("deepseek", "alltoall", "bf16"): (7.119169592857361, 10.482670497894286),
    ("deepseek", "alltoall", "fp8"): (7.609272027015686, 10.126460886001587),
    ("deepseek", "deepep", "bf16"): (5.681718397140503, 9.055137538909912),
    ("deepseek", "deepep", "fp8"): (6.034772801399231, 8.60211353302002),
    ("deepseek", "hybridep", "bf16"): (5.390828824043274, 8.795001602172851),
    ("deepseek", "hybridep", "fp8"): (5.142886424064637, 7.6874864339828495),
}

# test_cases.py's proxies: hidden, expert FFN, experts, top-k, shared-expert FFN (0: none).
PROXIES = {"mixtral": (4096, 14336, 8, 2, 0), "deepseek": (7168, 2048, 32, 8, 2048)}


def scenario(proxy, dispatcher, precision):
    hidden, ffn, experts, top_k, shared = PROXIES[proxy]
    return {
        "system": {"preset": "dgx-h100", "gpus": 8},
        "model": {
            "name": proxy + " proxy", "layers": 1, "hidden": hidden, "ffn": ffn, "heads": 8,
            "kv_heads": 8, "head_dim": hidden // 8, "vocab": 32000, "seq_len": 4096,
            "mlp": "swiglu", "position": "rope",
            "moe": {"experts": experts, "top_k": top_k, "expert_ffn": ffn,
                    "shared_experts": 1 if shared else 0, "shared_expert_ffn": shared}},
        "parallelism": {"tp": 1, "pp": 1, "ep": 8, "micro_batch": 1, "recompute": "none"},
        "training": {"global_batch": 8, "precision": precision,
                     "fp8_blockwise": precision == "fp8"},
        "software": {"framework": "megatron-bridge", "version": "26.02.01",
                     "moe_dispatcher": dispatcher, "cuda_graphs": "none",
                     "cuda_graph_moe_router": False, "moe_a2a_overlap": False,
                     "fp8_params": False},
        "simulation": {"backend": "analytical"},
    }


def block_spans(trace_path):
    """The MoE block's forward and backward spans (ms) on stage 0's compute stream."""
    with open(trace_path) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    ops = sorted((e for e in events if e.get("ph") == "X" and e.get("pid") == 0 and
                  e.get("tid") == 0), key=lambda e: e["ts"])
    names = [o["name"] for o in ops]
    first = names.index("router")
    last = first
    while last + 1 < len(ops) and not any(
            tag in names[last + 1] for tag in ("final_norm", "lm_head", "loss", "_bwd", "grad")):
        last += 1
    forward = ops[last]["ts"] + ops[last]["dur"] - ops[first]["ts"]
    bwd_first = min(i for i, n in enumerate(names) if n in ("unpermute_bwd", "shared_fc2_dgrad"))
    bwd_last = max(i for i, n in enumerate(names) if n in ("router_dgrad", "router_wgrad"))
    backward = ops[bwd_last]["ts"] + ops[bwd_last]["dur"] - ops[bwd_first]["ts"]
    return forward / 1e3, backward / 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fabricsim", default="build/tools/fabricsim/fabricsim")
    parser.add_argument("--profile", default="calibration/profiles/dgx-h100.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        with open(args.profile) as f:
            profile = json.load(f)
        profile["compute"]["fitted_in_step"] = True  # the boost clock, as in short benchmarks
        boost = os.path.join(tmp, "profile.json")
        with open(boost, "w") as f:
            json.dump(profile, f)
        print(f"{'layer':9} {'dispatcher':9} {'prec':4}  measured fwd/bwd ms  model fwd/bwd ms"
              "  model/measured")
        for (proxy, dispatcher, precision), (fwd, bwd) in MEASURED.items():
            path = os.path.join(tmp, "scenario.json")
            with open(path, "w") as f:
                json.dump(scenario(proxy, dispatcher, precision), f)
            trace = os.path.join(tmp, "trace.json")
            subprocess.run([args.fabricsim, "run", path, "--calibration", boost, "--trace", trace],
                           check=True, stdout=subprocess.DEVNULL)
            model_fwd, model_bwd = block_spans(trace)
            print(f"{proxy:9} {dispatcher:9} {precision:4}  {fwd:6.2f} / {bwd:6.2f}       "
                  f"{model_fwd:6.2f} / {model_bwd:6.2f}    {model_fwd / fwd:4.2f} / "
                  f"{model_bwd / bwd:4.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
