#!/usr/bin/env python3
"""Megatron-Bridge performance-summary releases after the dev set, as reference cases.

Reads Megatron-Bridge's docs/performance-summary-archive.md and docs/performance-summary.md (the
current release's page; markdown files given on the command line under their repository names)
and writes the rows of the releases the dev set does not have (26.02 onward) in the case format
of ../shared/reference/cases (README there). A model's dimensions come from the
dev set's 25.11 record of the same model (the same NeMo model config); rows of models the dev set
has no record of (Nemotron 3 hybrids, Kimi K2 trained with Muon) are listed and skipped.

These cases are an out-of-sample check: predictions are compared with them, never fitted.

    git --git-dir M show SHA:docs/performance-summary-archive.md > /tmp/performance-summary-archive.md
    git --git-dir M show SHA:docs/performance-summary.md > /tmp/performance-summary.md
    tools/cases/bridge_archive_cases.py ../shared/reference/cases/dev-training.json \
        /tmp/performance-summary-archive.md /tmp/performance-summary.md \
        --commit SHA > calibration/data/holdout/megatron-bridge-26.json
"""
import argparse
import copy
import json
import os
import pathlib
import re
import sys

# The archive's model names -> the dev set's 25.11 template record (id prefix).
TEMPLATES = {
    "LLAMA3_8B": "mbridge-25.11-pretraining-LLAMA3_8B-",
    "LLAMA3_70B": "mbridge-25.11-pretraining-LLAMA3_70B-",
    "LLAMA3.1_405B": "mbridge-25.11-pretraining-LLAMA3.1_405B-",
    "DeepSeekV3": "mbridge-25.11-pretraining-DeepSeekV3_(w/o_MTP)-",
    "GPT OSS 120B": "mbridge-25.11-pretraining-GPT_OSS_120B-",
    "Qwen3_30B_a3B": "mbridge-25.11-pretraining-Qwen3_30B_a3B-",
    "Qwen3_235B_a22B": "mbridge-25.11-pretraining-Qwen3_235B_a22B-",
}
SYSTEMS = {"DGX-GB300": "gb300-nvl72", "DGX-GB200": "gb200-nvl72", "DGX-B300": "dgx-b300",
           "DGX-B200": "dgx-b200", "DGX-H100": "dgx-h100"}
PRECISIONS = {"BF16": "bf16", "FP8": "fp8", "FP8-CS": "fp8", "MXFP8": "mxfp8", "FP8-MX": "mxfp8",
              "NVFP4": "nvfp4"}
TASKS = {"Pre-Training Performance": ("pretrain", "Pre-Training"),
         "SFT Performance": ("sft", "SFT"), "LoRA Performance": ("lora", "LoRA")}


def number(cell):
    """'1234 (1200)' -> (1234, 1200); footnote markers dropped."""
    cell = re.sub(r"\[\^[^\]]*\]", "", cell).strip()
    m = re.fullmatch(r"([\d.]+)\s*(?:\(([\d.]+)\))?", cell)
    if not m:
        raise ValueError(f"not a number: {cell!r}")
    main = float(m.group(1))
    alt = float(m.group(2)) if m.group(2) else None
    return main, alt


def plan_int(cell, default):
    cell = cell.strip()
    return default if cell in ("n/a", "") else int(cell)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dev")
    ap.add_argument("pages", nargs="+", help="the summary pages, named as in the repository's docs/")
    ap.add_argument("--commit", required=True, help="the pages' Megatron-Bridge commit")
    args = ap.parse_args()
    dev = json.load(open(args.dev))
    templates = {}
    for name, prefix in TEMPLATES.items():
        rec = next(c for c in dev if c["id"].startswith(prefix))
        templates[name] = rec["model"]

    release = task = model = None
    header = None
    cases, skipped = [], {}
    lines = [(os.path.basename(page), line) for page in args.pages
             for line in pathlib.Path(page).read_text().splitlines(keepends=True)]
    for page, line in lines:
        if line.startswith("## "):
            release = line[3:].split()[0]
            if not re.fullmatch(r"\d\d\.\d\d(\.\d\d)?", release) or release < "26.02":
                release = None
            continue
        if line.startswith("### "):
            task = TASKS.get(line[4:].strip())
            continue
        if line.startswith("#### Model:"):
            model = line.split(":", 1)[1].strip()
            continue
        if not release or not task or not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] in ("System", "Model"):
            header = cells
            continue
        if set(line.strip()) <= set("|-"):
            continue
        row = dict(zip(header, cells))
        if model not in templates:
            skipped[model] = skipped.get(model, 0) + 1
            continue
        system = SYSTEMS[row["System"]]
        gpus = int(row["#-GPUs"])
        prec_cell = row["Precision"]
        prec_main = prec_cell.split("(")[0].strip()
        prec_alt = re.search(r"\(([^)]*)\)", prec_cell)
        tp, pp, cp = (plan_int(row[k], 1) for k in ("TP", "PP", "CP"))
        vp = plan_int(row["VP"], None)
        ep = plan_int(row["EP"], 1)
        fsdp = plan_int(row.get("FSDP", "0"), 0) > 0
        tokens, tokens_alt = number(row["Tokens / sec / GPU"])
        tflops, tflops_alt = number(row["Model TFLOP / sec / GPU"])
        m = copy.deepcopy(templates[model])
        m["seq_len"] = int(row["Sequence Length"])
        measured = {"tflops_per_gpu": tflops, "tokens_per_s_per_gpu": tokens}
        notes = [f"Precision {prec_cell!r} on the page"]
        if tflops_alt is not None:
            measured["alt_tflops_per_gpu"] = tflops_alt
            measured["alt_tokens_per_s_per_gpu"] = tokens_alt
            notes.append(f"alt_* values are {prec_alt.group(1)}")
        if "[^" in row["Model TFLOP / sec / GPU"]:
            notes.append("the page footnotes a known performance regression for this row")
        task_name, task_title = task
        version = release
        cid = (f"mbridge-{release}-{task_title.lower()}-{model.replace(' ', '_')}-"
               f"{row['System']}-{gpus}-{prec_cell.replace(' ', '_')}")
        while any(c["id"] == cid for c in cases):
            cid += "+"
        cases.append({
            "id": cid,
            "source": f"NVIDIA Megatron-Bridge performance summary, NeMo {release} container, "
                      f"{task_title}",
            "source_ref": f"NVIDIA-NeMo/Megatron-Bridge/docs/{page}@{args.commit}",
            "kind": "training",
            "task": task_name,
            "system": system,
            "gpus": gpus,
            "precision": PRECISIONS[prec_main],
            "framework": {"name": "megatron-bridge", "version": version,
                          "released": "20" + release[:5].replace(".", "-")},
            "model": m,
            "parallelism": {"tp": tp, "pp": pp, "dp": gpus // (tp * pp * cp), "cp": cp, "ep": ep,
                            "vp": vp, "zero": None, "micro_batch": int(row["MBS"]),
                            "global_batch": int(row["GBS"]), "recompute": None,
                            "sequence_parallel": None, "fsdp": fsdp},
            "collective": None,
            "gemm": None,
            "measured": measured,
            "derived": ["parallelism.dp"],
            "notes": "; ".join(notes) + ". Model dimensions from the dev set's 25.11 record.",
        })
    json.dump(cases, sys.stdout, indent=1)
    sys.stdout.write("\n")
    for name, n in sorted(skipped.items()):
        print(f"skipped {n} rows of {name}: no model record", file=sys.stderr)


if __name__ == "__main__":
    main()
