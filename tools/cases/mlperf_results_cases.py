#!/usr/bin/env python3
"""MLPerf Training LLM results as reference cases (out-of-sample holdout).

Reads a git mirror of an mlcommons/training_results_vX.Y repository and writes, for every
closed-division result of gpt3, llama2_70b_lora, llama31_8b and llama31_405b on a GPU fabricsim has a
system preset for, one training case in the format of ../shared/reference/cases (README there):

- measured.time_to_train_min: the MLPerf score, the mean of the runs' run_start..run_stop times
  with the fastest and slowest dropped (training_rules.adoc, "Scoring"), times the result's
  scaling.json factor where it has one;
- measured.tokens_per_s_per_gpu: global batch x the sequence (8,192 tokens, GPT-3 2,048) / GPUs over the median of the
  runs' logged step times, where the logs time steps (parse_result: v5.x train_step_time, NeMo
  23.x train_step_timing, the v4.x callbacks' throughput, GPT-3's training blocks);
- the plan (TP, PP, CP, virtual stages, micro-batch) and precision from the launch configuration
  the submission's README names (config_*.sh: exported variables, following its `source` lines;
  what they leave unset, the Hydra configuration's default), else the one named for the system
  or kept in a folder named for it, else the one whose name gives the system's nodes x GPUs and
  GPU type, else the submitter's only one, else NVIDIA's (find_config); a DeepSpeed submission's
  from its own Accelerate + DeepSpeed launch (deepspeed_plan); the global batch from the logs;
- the framework: NVIDIA's NeMo-based implementation (DeepSpeed where the system description names
  it) at the NGC container release the implementation's Dockerfile builds on (container_release),
  else the release the system description names, which can be older than the code that ran.

A model's dimensions come from the dev set's record of the same model. Results on GPUs without a
preset (AMD Instinct) or whose logs do not parse are listed on stderr and skipped. The cases are
compared with, never fitted.

    tools/cases/mlperf_results_cases.py /work/.mirror/mlcommons+training_results_v5.1/repo \
        ../shared/reference/cases/dev-training.json --round 5.1 \
        > calibration/data/holdout/mlperf-training-v5.1.json
"""
import argparse
import json
import re
import statistics
import subprocess
import sys

BENCHMARKS = {
    # benchmark: (task, dev-set template id prefix, sequence length, whether its logs count
    # samples in tokens: GPT-3's epoch_count, step and throughput)
    "gpt3": ("pretrain", "nemo2407-pretrain-GPT3-175B-", 2048, True),
    "llama2_70b_lora": ("lora", "nemo2407-lora-LLAMA2-70B-", 8192, False),
    "llama31_8b": ("pretrain", "mbridge-25.11-pretraining-LLAMA3_8B-", 8192, False),
    "llama31_405b": ("pretrain", "mbridge-25.11-pretraining-LLAMA3.1_405B-", 8192, False),
}
# The accelerator name of a system description -> (preset, GPU token of config names). Order
# matters: GB300 before B300, GB200 before B200.
GPUS = [("GB300", "gb300-nvl72"), ("GB200", "gb200-nvl72"), ("B300", "dgx-b300"),
        ("B200", "dgx-b200"), ("H200", "dgx-h200"), ("H100", "dgx-h100")]


class Repo:
    def __init__(self, git_dir):
        self.git_dir = git_dir
        out = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only", "HEAD"],
                             check=True, capture_output=True, text=True).stdout
        self.files = out.splitlines()
        self.file_set = set(self.files)
        self.commit = subprocess.run(["git", "--git-dir", git_dir, "rev-parse", "HEAD"], check=True,
                                     capture_output=True, text=True).stdout.strip()

    def read(self, path):
        """The file's text; "" where the mirror lists it but lacks its content."""
        done = subprocess.run(["git", "--git-dir", self.git_dir, "show", f"HEAD:{path}"],
                              capture_output=True, text=True, errors="replace")
        return done.stdout if done.returncode == 0 else ""


def mllog(text):
    for line in text.splitlines():
        if ":::MLLOG" in line:
            try:
                yield json.loads(line.split(":::MLLOG", 1)[1])
            except json.JSONDecodeError:
                continue


def parse_result(text, tokens_per_sample=None):
    """A run's score interval, global batch and step times (seconds). The step times are what
    the log times, in the first of its dialects it has: `train_step_time` (the v5.x logger's
    per-block mean step), `train_step_timing` (NeMo 23.x's callback: every step; v4.1's GPT-3
    names it `train_step_timing in s`), `throughput` (the v4.x callbacks: samples per second over
    a block's training batches, tokens per second where the benchmark counts its samples in
    tokens, `tokens_per_sample`: GPT-3), else, for GPT-3, the training blocks between
    evaluations (block_start..block_stop over the block's epoch_count tokens)."""
    start = stop = None
    gbs = None
    timed = {"train_step_time": [], "train_step_timing": [], "train_step_timing in s": [],
             "throughput": []}
    blocks = []
    block = None
    status = None
    for e in mllog(text):
        k = e.get("key")
        if k == "run_start":
            start = e["time_ms"]
        elif k == "run_stop":
            stop = e["time_ms"]
            status = (e.get("metadata") or {}).get("status")
        elif k == "global_batch_size":
            gbs = int(e["value"])
        elif k == "tracked_stats" and isinstance(e.get("value"), dict):
            for key, values in timed.items():
                t = e["value"].get(key)
                if t:
                    values.append(float(t))
        elif k == "block_start":
            block = (e["time_ms"], (e.get("metadata") or {}).get("epoch_count"))
        elif k == "block_stop" and block is not None:
            if block[1]:
                blocks.append((e["time_ms"] - block[0], block[1]))
            block = None
    if start is None or stop is None or gbs is None:
        return None
    timed_by = next((key for key in timed if timed[key]), None)
    if timed_by == "throughput":
        # Samples per second; tokens per second where the benchmark counts its samples in tokens.
        steps = [gbs * (tokens_per_sample or 1) / t for t in timed["throughput"]]
    elif timed_by:
        steps = timed[timed_by]
    elif tokens_per_sample and blocks:
        timed_by = "training blocks"
        steps = [ms / 1000.0 / (count / (gbs * tokens_per_sample)) for ms, count in blocks]
    else:
        steps = []
    return {"minutes": (stop - start) / 60000.0, "gbs": gbs, "steps": steps, "status": status,
            "timed_by": timed_by}


def folders_up(folder):
    """`folder` and the folders above it, up to the benchmark's (<org>/benchmarks/<benchmark>):
    where a configuration's sourced files and Hydra configuration may sit (a submission's
    configs/ folder beside the implementation's shared files)."""
    while folder.count("/") >= 2:
        yield folder
        folder = folder.rsplit("/", 1)[0]


def sourced(repo, folder, name):
    """The file a `source` line names: beside the configuration, else in a folder above it."""
    return next((f"{d}/{name}" for d in folders_up(folder) if f"{d}/{name}" in repo.file_set),
                None)


def exports(repo, path, seen=None):
    """The variables a launch configuration exports, following its `source` lines in order."""
    seen = seen if seen is not None else set()
    if path in seen or path not in repo.file_set:
        return {}
    seen.add(path)
    folder = path.rsplit("/", 1)[0]
    env = {}
    for line in repo.read(path).splitlines():
        line = line.split("#", 1)[0].strip()
        m = re.match(r"(?:source|\.)\s+.*?([\w.\-]+\.sh)\s*$", line)
        if m:
            env.update(exports(repo, sourced(repo, folder, m.group(1)), seen))
            continue
        m = re.match(r"(?:export\s+)?([A-Z_][A-Z0-9_]*)=(\S*)", line)
        if m:
            value = m.group(2).strip("\"'")
            # "${TP:=4}": the variable's value if set, else the default.
            d = re.fullmatch(r"\$\{(\w+):[=-]([^}]*)\}", value)
            env[m.group(1)] = env.get(d.group(1), d.group(2)) if d else value
    return env


def hydra_defaults(repo, config):
    """The defaults the implementation's Hydra configuration gives environment variables
    (`${oc.env:INTERLEAVED_PIPELINE,12}`)."""
    # The implementation's conf/ folder: beside the configuration, else in a folder above it.
    for folder in folders_up(config.rsplit("/", 1)[0]):
        yamls = [f for f in repo.files if f.startswith(folder + "/conf/") and f.endswith(".yaml")]
        if yamls:
            break
    else:
        return {}
    out = {}
    for f in yamls:
        for var, default in re.findall(r"oc\.env:(\w+),\s*([^}]+)\}", repo.read(f)):
            out.setdefault(var, default.strip().strip("'\""))
    return out


def launch_configs(repo, org, bench):
    """An organisation's launch configurations of a benchmark (config_*.sh, not the shared
    config_common*/config_mounts files), wherever under the benchmark's folder they are (most
    submitters keep them in implementations/<name>/, some in configs/<system>/ or at the top)."""
    prefix = f"{org}/benchmarks/{bench}/"
    return [f for f in repo.files if f.startswith(prefix) and
            re.fullmatch(r"config_[\w.\-]+\.sh", f.rsplit("/", 1)[1]) and
            not re.search(r"config_(common|mounts)", f)]


def named_for(configs, shape, token=None):
    """The configurations named for nodes x GPUs (`shape`) and, given `token`, the GPU (B200 not
    GB200); FP4 variants left out."""
    out = []
    for f in configs:
        name = f.rsplit("/", 1)[1]
        if shape in name and "fp4" not in name and \
                (token is None or re.search(rf"(?<!G){token}", name.upper())):
            out.append(f)
    return out


def find_config(repo, org, bench, sysdir, nodes, per_node, token):
    """The launch configuration of a result and how it was found; (None, None) if none is sure."""
    prefix = f"{org}/benchmarks/{bench}/"
    configs = launch_configs(repo, org, bench)
    for f in repo.files:
        if f.startswith(prefix) and f.endswith(f"README-{sysdir}.md"):
            m = re.search(r"config_[\w.\-]+\.sh", repo.read(f))
            hits = [g for g in configs if m and g.endswith("/" + m.group(0))]
            if hits:
                return hits[0], "named by " + f.rsplit("/", 1)[1]
    shape = f"_{nodes}x{per_node}x"
    # The system's own: a configuration named for it, or in a folder named for it.
    named = [f for f in configs if re.fullmatch(rf"config_{re.escape(sysdir)}(_[\w.\-]*)?\.sh",
                                                 f.rsplit("/", 1)[1])]
    own = [f for f in configs if sysdir in f[len(prefix):].split("/")[:-1]]
    # Partners run NVIDIA's reference implementation: its one configuration for the system's GPU
    # and nodes x GPUs, when the submission has none of its own.
    nvidia = named_for(launch_configs(repo, "NVIDIA", bench), shape, token) if org != "NVIDIA" else []
    for hits, how in ((named, "the configuration named for the system"),
                      (own, "the configuration of the system's own folder"),
                      (named_for(own, shape),
                       "the system's own implementation's configuration for its nodes x GPUs"),
                      (named_for(configs, shape, token),
                       "the one configuration named for the system's GPU and nodes x GPUs"),
                      (configs, "the submitter's one configuration of the benchmark"),
                      (nvidia, "NVIDIA's one configuration for the system's GPU and nodes x GPUs "
                               "(the submission names none of its own)")):
        if len(hits) == 1:
            return hits[0], how
    return None, None


def framework_of(description):
    """The case's framework from a system description's `framework`: NVIDIA's NeMo-based
    implementation, which the NVIDIA-GPU submissions of these benchmarks run whatever their
    descriptions list (PyTorch, MXNet, DGL containers), unless it names DeepSpeed; the version
    is the container release named beside NeMo, else the first release named."""
    low = description.lower()
    m = (re.search(r"nemo[^0-9]{0,25}(\d\d)\.(\d\d)", low) or
         re.search(r"(\d\d)\.(\d\d)[^0-9]{0,3}nemo", low) or re.search(r"(\d\d)\.(\d\d)", low))
    return {"name": "deepspeed" if "deepspeed" in low else "nemo",
            **release_fields(*(m.groups() if m else (None, None)))}


def release_fields(yy, mm):
    """A container release YY.MM as the case format's framework version and release month."""
    if yy is None:
        return {"version": None, "released": None}
    return {"version": f"{yy}.{mm}", "released": f"20{yy}-{mm}"}


def container_release(repo, org, bench, config):
    """The NGC container release ((YY, MM)) the result's implementation builds on, from its
    Dockerfile (`ARG FROM_IMAGE_NAME=nvcr.io/nvidia/pytorch:25.09-py3` or a `FROM` line), and the
    Dockerfile: the one beside the launch configuration or in a folder above it, else the one
    release every Dockerfile of the submitter's implementations of the benchmark names. A system
    description's framework field can name an older container than the code that ran; the
    implementation's build file is the code. (None, None) where neither is sure."""
    def release(path):
        m = re.search(r"nvcr\.io/[\w\-]+/[\w\-]+:(\d\d)\.(\d\d)", repo.read(path))
        return m.groups() if m else None

    if config and config.startswith(f"{org}/"):
        for d in folders_up(config.rsplit("/", 1)[0]):
            if f"{d}/Dockerfile" in repo.file_set:
                found = release(f"{d}/Dockerfile")
                if found:
                    return found, f"{d}/Dockerfile"
    # The implementations' own build files: at the benchmark's top or one implementation folder
    # down (not the third-party trees some submissions vendor below them).
    top = re.compile(rf"{re.escape(org)}/benchmarks?/{re.escape(bench)}/"
                     r"(implementations/[^/]+/)?([^/]+/)?Dockerfile")
    files = [f for f in repo.files if top.fullmatch(f)]
    found = {release(f) for f in files} - {None}
    if len(found) == 1:
        return found.pop(), ", ".join(files)
    return None, None


def deepspeed_plan(repo, org, bench):
    """The plan of a DeepSpeed submission from its own launch (the MLPerf reference
    implementation's Hugging Face Accelerate + DeepSpeed scripts: `train.py` flags and the ZeRO
    stage of the DeepSpeed JSON its Accelerate configuration names): data parallel over every GPU,
    the per-device micro-batch, full recomputation where gradient checkpointing is on, BF16
    unless FP8 is asked for; and the launch files. (None, None) where the launch or its ZeRO stage
    is not found or the launches disagree."""
    prefix = f"{org}/benchmarks/{bench}/"
    launches = [f for f in repo.files if f.startswith(prefix) and
                re.search(r"\.(sh|sub)$", f) and "accelerate launch" in repo.read(f)]
    stages = set()
    for f in repo.files:
        if f.startswith(prefix) and f.endswith(".json"):
            try:
                stage = json.loads(repo.read(f)).get("zero_optimization", {}).get("stage")
            except (json.JSONDecodeError, AttributeError):
                continue
            if isinstance(stage, int):
                stages.add(stage)
    if not launches or len(stages) != 1:
        return None, None
    plans = set()
    for f in launches:
        text = repo.read(f)
        mb = re.search(r"--per_device_train_batch_size[ =]+(\d+)", text)
        ckpt = re.search(r"--use_gradient_checkpointing[ =]+(\w+)", text)
        if mb:
            plans.add((int(mb.group(1)), bool(ckpt and ckpt.group(1).lower() == "true"),
                       bool(re.search(r"--fp8\b", text))))
    if len(plans) != 1:
        return None, None
    mb, recompute, fp8 = plans.pop()
    return {"micro_batch": mb, "zero": stages.pop(),
            "recompute": "full" if recompute else None,
            "precision": "fp8" if fp8 else "bf16"}, sorted(launches)


def as_int(env, *names):
    for n in names:
        v = env.get(n)
        if v and re.fullmatch(r"\d+", v):
            return int(v)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("repo", help="git dir of mlcommons/training_results_vX.Y")
    ap.add_argument("dev", help="dev-training.json (model dimensions)")
    ap.add_argument("--round", required=True, help="the MLPerf Training round, e.g. 5.1")
    args = ap.parse_args()
    repo = Repo(args.repo)
    dev = json.load(open(args.dev))
    templates = {b: next(c for c in dev if c["id"].startswith(p))["model"]
                 for b, (_, p, _, _) in BENCHMARKS.items()}

    results = {}
    for f in repo.files:
        m = re.fullmatch(r"([^/]+)/results/([^/]+)/([^/]+)/result_\d+\.txt", f)
        if m and m.group(3) in BENCHMARKS:
            results.setdefault(m.groups(), []).append(f)

    cases = []
    for (org, sysdir, bench), files in sorted(results.items()):
        name = f"{org}/{sysdir}/{bench}"
        try:
            system = json.loads(repo.read(f"{org}/systems/{sysdir}.json"))
        except json.JSONDecodeError:
            print(f"skipped {name}: no system description", file=sys.stderr)
            continue
        if system.get("division") != "closed":
            print(f"skipped {name}: {system.get('division')} division", file=sys.stderr)
            continue
        accel = system.get("accelerator_model_name", "")
        match = next(((tok, preset) for tok, preset in GPUS if tok in accel.upper()), None)
        if not match:
            print(f"skipped {name}: no system preset for {accel!r}", file=sys.stderr)
            continue
        token, preset = match
        nodes = int(system["number_of_nodes"])
        per_node = int(system["accelerators_per_node"])
        gpus = nodes * per_node
        task, _, seq_len, counts_tokens = BENCHMARKS[bench]
        token_counted = seq_len if counts_tokens else None
        runs = [r for r in (parse_result(repo.read(f), token_counted) for f in sorted(files)) if r]
        if len(runs) < 3:
            print(f"skipped {name}: {len(runs)} of {len(files)} logs parse (the mirror lacks "
                  "the others' content)", file=sys.stderr)
            continue
        minutes = sorted(r["minutes"] for r in runs)
        score = statistics.mean(minutes[1:-1])
        scaling = f"{org}/results/{sysdir}/{bench}/scaling.json"
        factor = json.loads(repo.read(scaling))["scaling_factor"] if scaling in repo.file_set else 1.0
        score *= factor
        gbs = runs[0]["gbs"]
        steps = [t for r in runs for t in r["steps"]]
        framework_name = system.get("framework", "") or system.get("framework_name", "")
        framework = framework_of(framework_name)
        # A DeepSpeed submission runs its own launch, not NVIDIA's NeMo configurations.
        ds_plan, ds_launch = (deepspeed_plan(repo, org, bench) if framework["name"] == "deepspeed"
                              else (None, None))
        config, how = ((None, None) if ds_plan else
                       find_config(repo, org, bench, sysdir, nodes, per_node, token))
        env = exports(repo, config) if config else {}
        defaults = hydra_defaults(repo, config) if config else {}
        tp = as_int(env, "TENSOR_MODEL_PARALLEL", "TP")
        pp = as_int(env, "PIPELINE_MODEL_PARALLEL", "PP")
        cp = as_int(env, "CONTEXT_PARALLEL", "CP")
        vp = as_int(env, "INTERLEAVED_PIPELINE")
        mb = as_int(env, "MICRO_BATCH_SIZE", "MBS")
        if mb is None and "MINIBS" in env:
            mb = 1  # MINIBS is sequences per data-parallel rank; the micro-batch defaults to 1
        # NVIDIA's configuration names read <nodes>x<GPUs>x<sequences per data-parallel rank>x
        # tp<T>pp<P>cp<C>: what the variables leave unset (a sourced file the submission lacks).
        named = re.search(r"_(\d+)x(\d+)x(\d+)xtp(\d+)pp(\d+)cp(\d+)",
                          config.rsplit("/", 1)[1]) if config else None
        if named:
            tp = tp or int(named.group(4))
            pp = pp or int(named.group(5))
            cp = cp or int(named.group(6))
            if mb is None and gbs == gpus // (tp * pp * cp) * int(named.group(3)):
                mb = int(named.group(3))  # one micro-batch per step
        # What the configuration and its name leave unset, its Hydra configuration's default gives.
        tp = tp or as_int(defaults, "TENSOR_MODEL_PARALLEL", "TP")
        pp = pp or as_int(defaults, "PIPELINE_MODEL_PARALLEL", "PP")
        cp = cp or as_int(defaults, "CONTEXT_PARALLEL", "CP")
        mb = mb or as_int(defaults, "MICRO_BATCH_SIZE", "MBS")
        if tp and pp and cp is None:
            cp = 1  # a configuration that names no context parallelism runs none
        if vp is None and pp and pp > 1:
            vp = as_int(defaults, "INTERLEAVED_PIPELINE")  # the Hydra configuration's default
        if env.get("FP4", "").lower() == "true" or (config and "_fp4" in config):
            precision = "nvfp4"
        elif env.get("FP8", "").lower() == "true":
            precision = "fp8"
        elif env.get("FP8", "").lower() == "false":
            precision = "bf16"
        else:
            precision = "fp8"  # unstated: the LLM submissions of these rounds train in FP8 or FP4
        zero = recompute = None
        if ds_plan:
            tp, pp, cp, vp = 1, 1, 1, None
            mb, zero, recompute = ds_plan["micro_batch"], ds_plan["zero"], ds_plan["recompute"]
            precision = ds_plan["precision"]
        plan_known = None not in (tp, pp, cp, mb)
        model = dict(templates[bench])
        model["seq_len"] = seq_len
        container, dockerfile = container_release(repo, org, bench,
                                                  config or (ds_launch[0] if ds_launch else None))
        if container:
            framework.update(release_fields(*container))
        measured = {"time_to_train_min": round(score, 3)}
        derived = ["measured.time_to_train_min", "precision"]
        step = statistics.median(steps) if steps else None
        if step:
            measured["tokens_per_s_per_gpu"] = round(gbs * seq_len / step / gpus, 1)
            derived.append("measured.tokens_per_s_per_gpu")
        if plan_known:
            derived.append("parallelism.dp")
        notes = [f"{system.get('system_name', sysdir)}; {accel}; {framework_name} (framework "
                 f"{framework['name']} {framework['version']}: NVIDIA's NeMo-based implementation "
                 f"unless DeepSpeed is named)",
                 f"{len(runs)} runs, {minutes[0]:.2f}-{minutes[-1]:.2f} min, scaling factor "
                 f"{factor:.4f}",
                 f"precision from {config.rsplit('/', 1)[1] if config else 'its launch' if ds_plan else 'no configuration'}"]
        if step:
            notes.append(f"tokens/s from the runs' {runs[0]['timed_by']} "
                         f"(median step {step:.3f} s)")
        if container:
            notes.append(f"framework version from the container release {dockerfile} builds on")
        if ds_plan:
            notes.append(f"plan from {', '.join(ds_launch)} (the submission's Accelerate + DeepSpeed launch: "
                         f"data parallel, ZeRO {zero}, the per-device micro-batch, "
                         f"{'gradient checkpointing' if recompute else 'no checkpointing'})")
        elif config:
            notes.append(f"plan from {config} ({how})")
        else:
            notes.append("no launch configuration found: plan not stated")
        if preset in ("dgx-b200", "dgx-b300", "dgx-h200", "dgx-h100") and \
                not sysdir.lower().startswith(("dgx", "tyche", "theia", "hsg")):
            notes.append(f"{preset} is the nearest preset")
        cases.append({
            "id": f"mlperf-training-v{args.round}-{org}-{sysdir}-{bench}",
            # Each submitter measured its own system: the source names it, so that a scaling
            # series and an anchor group stay within one submitter's results.
            "source": f"MLPerf Training v{args.round} closed, {org}, {bench}",
            "source_ref": f"mlcommons/training_results_v{args.round}/{org}/results/{sysdir}/{bench}"
                          f"@{repo.commit}",
            "kind": "training",
            "task": task,
            "system": preset,
            "gpus": gpus,
            "precision": precision,
            "framework": framework,
            "model": model,
            "parallelism": {
                "tp": tp, "pp": pp, "cp": cp, "vp": vp,
                "dp": gpus // (tp * pp * cp) if plan_known else None,
                "ep": None, "zero": zero, "micro_batch": mb, "global_batch": gbs,
                "recompute": recompute, "sequence_parallel": None, "fsdp": None},
            "collective": None,
            "gemm": None,
            "measured": measured,
            "derived": derived,
            "notes": "; ".join(notes) + ".",
        })
    json.dump(cases, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
