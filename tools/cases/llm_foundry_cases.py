#!/usr/bin/env python3
"""One table of MosaicML's MPT training benchmarks, as reference cases.

Reads llm-foundry's scripts/train/benchmarking/README.md (a markdown file given on the command
line), takes the rows of the table under the given heading and writes them in the case format of
../shared/reference/cases (README there). A model's dimensions come from the dev set's A100
40GB record of the same model (the same repo yaml; d_head 128). The rows keep what the table
states: the measured MFU, HFU, model TFLOP/s per GPU and tokens/s per GPU, the micro-batch,
global batch, sharding and activation checkpointing.

These cases are an out-of-sample check: predictions are compared with them, never fitted.

    tools/cases/llm_foundry_cases.py README.md ../shared/reference/cases/dev-training.json \
        --table "A100 80GB with 1600 Gbps node-node interconnect (RoCE)" --system dgx-a100-80gb \
        --prefix mpt-a100-80gb --commit 5e85bd62d > calibration/data/holdout/llm-foundry-a100-80gb.json
"""
import argparse
import copy
import json
import sys

SHARDING = {"FULL_SHARD": 3, "SHARD_GRAD_OP": 2}


def table_rows(markdown, heading):
    """The data rows (lists of cells) of the first table after `## heading`."""
    lines = markdown.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == f"## {heading}")
    except StopIteration:
        sys.exit(f"no table headed '## {heading}'")
    header, rows = None, []
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        if not line.strip().startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
        elif not set("".join(cells)) <= set("- "):
            rows.append(dict(zip(header, cells)))
    return rows


def templates(dev_cases):
    """Model name -> the model block of the dev set's A100 40GB record of it."""
    out = {}
    for c in dev_cases:
        if c["id"].startswith("mpt-a100-40gb-"):
            out.setdefault(c["model"]["name"], c["model"])
    return out


def case(row, args, models, counts):
    name = f"MPT-{row['Model']}"
    if name not in models:
        sys.exit(f"no dev record of {name}")
    seq, gpus = int(row["SeqLen (T)"]), int(row["# GPUs"])
    micro, accum, batch = (int(row["MicroBatchSize"]), int(row["GradAccum"]),
                           int(row["GlobalBatchSize"]))
    checkpointing = row["Activation Checkpointing"] == "True"
    key = (row["Model"], seq, gpus)
    cid = f"{args.prefix}-{row['Model']}-s{seq}-g{gpus}"
    if counts[key] > 1:
        cid += f"-b{batch}"  # the table repeats a shape with another global batch
    model = copy.deepcopy(models[name])
    model["seq_len"] = seq
    model["params"] = int(row["NumParams"])
    tflops = float(row.get("Model TFLOP", row.get("Model TFLOP/s", "nan")))
    return {
        "id": cid,
        "source": f"MosaicML llm-foundry 'MPT Training Benchmarks', table '{args.table}'",
        "source_ref": f"mosaicml/llm-foundry/scripts/train/benchmarking/README.md@{args.commit}",
        "kind": "training",
        "task": "pretrain",
        "system": args.system,
        "gpus": gpus,
        "precision": "bf16",
        "framework": {"name": "llm-foundry", "version": None, "released": None},
        "model": model,
        "parallelism": {
            "tp": 1, "pp": 1, "dp": gpus, "cp": None, "ep": None, "vp": None,
            "zero": SHARDING[row["Sharding Strategy"]], "micro_batch": micro,
            "global_batch": batch, "recompute": "full" if checkpointing else "none",
            "sequence_parallel": None, "fsdp": True,
        },
        "collective": None,
        "gemm": None,
        "measured": {
            "mfu": float(row["MFU"]) / 100,
            "hfu": float(row["HFU"]) / 100,
            "tokens_per_s_per_gpu": float(row["Throughput (T/s/GPU)"]),
            "tflops_per_gpu": tflops,
        },
        "derived": ["parallelism.dp"],
        "notes": (
            f"System: {args.table} -> {args.system} (nearest preset). PyTorch FSDP (Composer) "
            f"{row['Sharding Strategy']}, precision {row['Precision']}, MP mode {row['MP Mode']}; "
            f"activation checkpointing {row['Activation Checkpointing']}; gradient accumulation "
            f"{accum} (the table's micro-batches need not divide the global batch). Attention: "
            "attn_impl triton (submit_benchmarks.py default). MFU per the README formula; "
            "tflops_per_gpu = the 'Model TFLOP' column. Model dimensions from the dev set's A100 "
            "40GB records of the same name (d_head 128). Transcribed by "
            "tools/cases/llm_foundry_cases.py for out-of-sample checks; never fitted."),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("readme")
    p.add_argument("dev_cases")
    p.add_argument("--table", required=True, help="the table's heading, without '## '")
    p.add_argument("--system", required=True, help="the system preset the rows run on")
    p.add_argument("--prefix", required=True, help="case id prefix, e.g. mpt-a100-80gb")
    p.add_argument("--commit", required=True, help="the README's commit, for source_ref")
    args = p.parse_args()
    with open(args.readme, encoding="utf-8") as f:
        rows = table_rows(f.read(), args.table)
    with open(args.dev_cases, encoding="utf-8") as f:
        dev = json.load(f)
    models = templates(dev["cases"] if isinstance(dev, dict) else dev)
    counts = {}
    for row in rows:
        key = (row["Model"], int(row["SeqLen (T)"]), int(row["# GPUs"]))
        counts[key] = counts.get(key, 0) + 1
    cases = [case(row, args, models, counts) for row in rows]
    json.dump(cases, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
