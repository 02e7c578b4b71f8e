#!/usr/bin/env python3
"""fabricsim against Calculon (Isaev et al., SC'23) on the training cases Calculon can represent.

Calculon models a GPT-style dense transformer (multi-head attention, a two-matrix MLP, no
embedding or output layer) under tensor, pipeline and data parallelism on an A100 or H100
system. This script reads the scenario fabricsim runs for each case (`validate
--print-scenarios`), keeps the pre-training cases Calculon can express (no MoE, MLA, GQA, gated
MLP, sliding window, context parallelism, ZeRO-2/3 or FSDP; A100 or H100), writes Calculon's
application, execution and system inputs from that same scenario, runs Calculon's `llm` command
and compares both tools' step times with the published measurement. Nothing here is fitted.

Calculon is not a dependency of fabricsim: give the path of a checkout (it needs numpy; its
sweep-only imports, psutil and pandas, are stubbed when missing).

    tools/cases/calculon_compare.py --calculon ~/calculon \
        --cases ../shared/reference/cases/dev-training.json [--json]
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile

# The metric each case is scored on: the first of these it reports (fabricsim validate's order).
PRIMARY = ["tflops_per_gpu", "hw_tflops_per_gpu", "tokens_per_s_per_gpu", "mfu", "hfu",
           "step_time_s"]

# fabricsim system presets -> Calculon's shipped system files (HBM capacity in GiB overridden).
SYSTEMS = {
    "dgx-a100-80gb": ("a100_80g.json", 80),
    "dgx-a100-40gb": ("a100_80g.json", 40),
    "dgx-h100": ("h100_80g_nvl8.json", 80),
    "unknown-h100-ib": ("h100_80g_nvl8.json", 80),
}


def printed_scenarios(fabricsim, cases):
    """The scenario fabricsim runs for each training case, by case id."""
    out = subprocess.run([fabricsim, "validate", "--cases", cases, "--print-scenarios"],
                         check=True, capture_output=True, text=True).stdout
    scenarios = {}
    for block in re.split(r"^// ", out, flags=re.M):
        if not block.strip():
            continue
        case_id, _, body = block.partition("\n")
        scenarios[case_id.strip()] = json.loads(body)
    return scenarios


def unrepresentable(s):
    """Why Calculon cannot express scenario `s`, or None."""
    m, p, t = s["model"], s["parallelism"], s["training"]
    if s["system"]["preset"] not in SYSTEMS:
        return "system " + s["system"]["preset"]
    if m.get("moe"):
        return "MoE"
    if m.get("mla"):
        return "MLA"
    if m["kv_heads"] != m["heads"]:
        return "grouped-query attention"
    if m["mlp"] not in ("gelu", "squared_relu"):
        return "gated MLP"
    if m.get("sliding_window", 0):
        return "sliding window"
    if t["task"] != "pretrain":
        return "task " + t["task"]
    if p["cp"] > 1:
        return "context parallelism"
    if p["zero"] > 1:
        return "ZeRO-%d/FSDP" % p["zero"]
    if t["precision"] not in ("bf16", "fp16", "fp8"):
        return "precision " + t["precision"]
    if t["precision"] == "fp8" and "h100" not in s["system"]["preset"]:
        return "FP8 off Hopper"
    return None


def calculon_inputs(s):
    """Calculon's application, execution and system documents for scenario `s`."""
    m, p, t = s["model"], s["parallelism"], s["training"]
    app = {"hidden": m["hidden"], "feedforward": m["ffn"], "seq_size": t["seq_len"],
           "attn_heads": m["heads"], "attn_size": m["head_dim"], "num_blocks": m["layers"]}
    tp, pp, dp = p["tp"], p["pp"], p["dp"]
    recompute = {"full": "full", "selective": "attn_only", "none": "none"}[p["recompute"]]
    exe = {
        "num_procs": tp * pp * dp,
        "tensor_par": tp, "pipeline_par": pp, "data_par": dp,
        # Network 0 is the 8-GPU NVLink domain, network 1 the scale-out fabric.
        "tensor_par_net": 0,
        "pipeline_par_net": 0 if tp * pp <= 8 else 1,
        "data_par_net": 0 if tp * pp * dp <= 8 else 1,
        "batch_size": t["global_batch"], "microbatch_size": p["micro_batch"],
        "datatype": "float8" if t["precision"] == "fp8" else "float16",
        "fused_activation": True,
        "attention_type": "multihead",
        "activation_recompute": recompute,
        "pipeline_interleaving": p["vp"],
        "optimizer_sharding": p["zero"] >= 1 and dp > 1,
        "tensor_par_comm_type": "rs_ag" if p["sequence_parallel"] and tp > 1 else "ar",
        "tensor_par_overlap": "pipe" if p["tp_comm_overlap"] and tp > 1 else "none",
        "seq_par_ag_redo": False,
        "data_par_overlap": bool(p["dp_comm_overlap"]) and dp > 1,  # Calculon: only with DP > 1
        "weight_offload": False, "activations_offload": False, "optimizer_offload": False,
        "training": True,
    }
    return app, exe


def run_calculon(calculon, python, app, exe, system_file, hbm_gib):
    """Calculon's batch time in seconds, or (None, its error)."""
    with open(os.path.join(calculon, "systems", system_file)) as f:
        system = json.load(f)
    system["mem1"]["GiB"] = hbm_gib
    with tempfile.TemporaryDirectory() as d:
        paths = []
        for name, doc in (("app", app), ("exe", exe), ("sys", system)):
            paths.append(os.path.join(d, name + ".json"))
            with open(paths[-1], "w") as f:
                json.dump(doc, f)
        stats = os.path.join(d, "stats.json")
        stub = os.path.join(d, "stub")
        os.makedirs(stub)
        for module in ("psutil", "pandas"):  # imported by Calculon's sweeps only
            with open(os.path.join(stub, module + ".py"), "w") as f:
                f.write("def cpu_count(logical=False):\n    return 1\n")
        env = dict(os.environ, PYTHONPATH=calculon + os.pathsep + stub)
        r = subprocess.run([python, os.path.join(calculon, "bin", "calculon"), "llm", *paths,
                            stats], env=env, capture_output=True, text=True)
        if r.returncode != 0 or not os.path.exists(stats):
            lines = (r.stderr or r.stdout).strip().splitlines()
            return None, lines[-1] if lines else "no output"
        with open(stats) as f:
            return json.load(f)["total_time"], None


def case_errors(validate_json):
    """fabricsim's relative throughput error per case on its primary metric."""
    by = {}
    for r in validate_json["rows"]:
        by.setdefault(r["id"], {})[r["metric"]] = r
    out = {}
    for case_id, rows in by.items():
        for metric in PRIMARY:
            if metric in rows:
                r = rows[metric]
                # Throughput-like metrics grow with speed; a step time shrinks.
                out[case_id] = (r["measured"] / r["predicted"] - 1 if metric == "step_time_s"
                                else r["predicted"] / r["measured"] - 1)
                break
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calculon", required=True, help="path of a Calculon checkout")
    ap.add_argument("--cases", required=True, help="case file (../shared/reference/cases format)")
    ap.add_argument("--fabricsim", default="build/tools/fabricsim/fabricsim")
    ap.add_argument("--python", default="/usr/bin/python3", help="an interpreter with numpy")
    ap.add_argument("--json", action="store_true", help="print every case as JSON")
    args = ap.parse_args()

    scenarios = printed_scenarios(args.fabricsim, args.cases)
    validate = json.loads(subprocess.run(
        [args.fabricsim, "validate", "--cases", args.cases, "--json", "--set",
         "/simulation/backend=analytical"], check=True, capture_output=True, text=True).stdout)
    ours = case_errors(validate)
    sources = {r["id"]: r["source"] for r in validate["rows"]}

    rows, skipped = [], {}
    for case_id, s in scenarios.items():
        if case_id not in ours:
            continue
        why = unrepresentable(s)
        if why:
            skipped[why] = skipped.get(why, 0) + 1
            continue
        app, exe = calculon_inputs(s)
        system_file, hbm = SYSTEMS[s["system"]["preset"]]
        calc_time, error = run_calculon(args.calculon, args.python, app, exe, system_file, hbm)
        if calc_time is None:
            skipped["Calculon: " + error] = skipped.get("Calculon: " + error, 0) + 1
            continue
        # fabricsim's own step time for the same scenario.
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            json.dump(s, f)
            f.flush()
            run = json.loads(subprocess.run(
                [args.fabricsim, "run", f.name, "--set", "/simulation/backend=analytical",
                 "--json"], check=True, capture_output=True, text=True).stdout)
        ours_err = ours[case_id]
        calc_err = (1 + ours_err) * run["step_time_s"] / calc_time - 1
        rows.append({"id": case_id, "source": sources[case_id], "fabricsim": ours_err,
                     "calculon": calc_err, "fabricsim_step_s": run["step_time_s"],
                     "calculon_step_s": calc_time})

    if args.json:
        print(json.dumps({"rows": rows, "skipped": skipped}, indent=1))
        return
    if not rows:
        print("no case Calculon can represent; not representable:",
              ", ".join(f"{k} ({v})" for k, v in sorted(skipped.items())))
        return
    med = lambda xs: statistics.median(abs(x) for x in xs)
    bias = lambda xs: statistics.median(xs)
    groups = {}
    for r in rows:
        groups.setdefault(r["source"], []).append(r)
    print("| source | cases | fabricsim median | Calculon median | fabricsim signed | "
          "Calculon signed |")
    print("|---|---:|---:|---:|---:|---:|")
    for source, rs in sorted(groups.items()) + [("all", rows)]:
        f = [r["fabricsim"] for r in rs]
        c = [r["calculon"] for r in rs]
        print(f"| {source[:70]} | {len(rs)} | {100 * med(f):.1f}% | {100 * med(c):.1f}% | "
              f"{100 * bias(f):+.1f}% | {100 * bias(c):+.1f}% |")
    print()
    print("not representable in Calculon:", ", ".join(f"{k} ({v})" for k, v in
                                                     sorted(skipped.items())))


if __name__ == "__main__":
    main()
