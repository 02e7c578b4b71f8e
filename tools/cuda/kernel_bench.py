#!/usr/bin/env python3
"""Times the kernels of a training step that a GEMM benchmark does not see, on one GPU.

fabricsim-gemm-bench measures cuBLASLt GEMMs; a training step also runs attention, memory-bound
kernels (norms, activations, residuals, dropout, cross-entropy, the optimizer) and holds its
clocks under a whole step's power draw. This script measures those with PyTorch, the library
training frameworks call them through, on whatever GPU it runs on:

  sustained   back-to-back bf16 GEMMs for --sustain-seconds with nvidia-smi sampling the SM
              clock, power and temperature: TFLOP/s per window, burst (first window) vs sustained
  attention   torch scaled_dot_product_attention per backend (FlashAttention 2, cuDNN, memory-
              efficient), causal or not, head dims 64/128, sequence 2k-16k, forward and backward
  memory      memory-bound kernels at transformer shapes, with the bytes each kernel must move
              counted so that achieved GB/s can be set against the copy bandwidth
  copy        device-to-device copy bandwidth (bytes read + written), the memory ceiling

Needs PyTorch with CUDA (present on GPU training machines; not a build dependency of fabricsim).
Writes one JSON document (format "fabricsim-kernel-bench", version 1) and prints a summary table.

  python3 tools/cuda/kernel_bench.py -o kernels.json [--sustain-seconds 40] [--quick]
"""

import argparse
import datetime
import json
import math
import statistics
import subprocess
import sys
import threading
import time


def die(message):
    print(f"kernel_bench: {message}", file=sys.stderr)
    sys.exit(2)


try:
    import torch
    import torch.nn.functional as F
except ImportError as error:  # pragma: no cover - depends on the machine
    die(f"PyTorch is needed ({error})")


def timed(fn, iters, warmup=3):
    """Median, min and max time of fn() in seconds, each run alone between two CUDA events."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e-3)
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times),
            "runs": iters}


def median(values):
    """The median of the values that are not None, or None when none is."""
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def random_bf16(*shape):
    # Random data, never zeros: matrix units and memory compression run faster on zeros.
    return torch.randn(*shape, device="cuda", dtype=torch.bfloat16)


def back_to_back(fn, flops, window_s, seconds, begin):
    """Runs fn back to back for `seconds` in windows of about window_s, each timed between two
    CUDA events; returns [(seconds since `begin`, TFLOP/s)] per window and the runs per window."""
    single = timed(fn, 3, warmup=2)["median_s"]
    per_window = max(1, int(window_s / single))
    windows = []
    start_t = time.monotonic()
    while time.monotonic() - start_t < seconds:
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(per_window):
            fn()
        stop.record()
        stop.synchronize()
        elapsed = start.elapsed_time(stop) * 1e-3
        windows.append((time.monotonic() - begin, per_window * flops / elapsed / 1e12))
    return windows, per_window


class SmiSampler:
    """nvidia-smi in the background, one line per period: clocks, power, temperature."""

    FIELDS = ["timestamp", "clocks.sm", "clocks.mem", "power.draw", "temperature.gpu",
              "clocks_event_reasons.active"]

    def __init__(self, period_ms):
        self.rows = []
        self.proc = None
        # Older drivers name the last field clocks_throttle_reasons; without it the rest still come.
        for fields in (self.FIELDS, self.FIELDS[:-1]):
            query = ["nvidia-smi", "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"]
            try:
                if subprocess.run(query, capture_output=True).returncode == 0:
                    self.fields = fields
                    break
            except OSError:
                return
        else:
            return
        try:
            self.proc = subprocess.Popen(
                query + [f"--loop-ms={period_ms}"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            return
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) != len(self.fields):
                continue
            row = {"t": time.monotonic()}
            for key, value in zip(["ts", "sm_mhz", "mem_mhz", "power_w", "temp_c", "reasons"],
                                  parts):
                try:
                    row[key] = float(value) if key not in ("ts", "reasons") else value
                except ValueError:
                    row[key] = None
            self.rows.append(row)

    def stop(self):
        if self.proc:
            self.proc.terminate()
            self.proc.wait()
        return self.rows


def device_info():
    props = torch.cuda.get_device_properties(0)
    info = {"name": props.name, "sm_count": props.multi_processor_count,
            "compute_capability": f"{props.major}.{props.minor}",
            "memory_bytes": props.total_memory, "torch": torch.__version__,
            "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version()}
    try:
        query = "driver_version,clocks.max.sm,clocks.max.mem,power.limit,power.max_limit"
        out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, check=True).stdout.splitlines()[0]
        for key, value in zip(["driver", "max_sm_mhz", "max_mem_mhz", "power_limit_w",
                               "power_max_limit_w"], [v.strip() for v in out.split(",")]):
            info[key] = value
    except (OSError, subprocess.CalledProcessError, IndexError):
        pass
    return info


def copy_bandwidth(quick):
    n = (1 << 30) if quick else (2 << 30)  # bf16 elements: 2 or 4 GiB
    src = random_bf16(n)
    dst = torch.empty_like(src)
    t = timed(lambda: dst.copy_(src), 20)
    bytes_moved = 2 * src.numel() * src.element_size()
    return {"bytes": bytes_moved, **t, "GBps": bytes_moved / t["median_s"] / 1e9}


def sustained_gemm(seconds, size):
    """bf16 size^3 GEMMs back to back; TFLOP/s per window of about a second."""
    a, b = random_bf16(size, size), random_bf16(size, size)
    out = torch.empty(size, size, device="cuda", dtype=torch.bfloat16)
    flops = 2.0 * size ** 3
    sampler = SmiSampler(200)
    time.sleep(0.5)  # idle readings before the load
    begin = time.monotonic()
    pairs, per_window = back_to_back(lambda: torch.matmul(a, b, out=out), flops, 1.0, seconds,
                                     begin)
    windows = [{"t_s": t, "tflops": r} for t, r in pairs]
    time.sleep(0.5)
    samples = sampler.stop()
    for s in samples:
        s["t_s"] = s.pop("t") - begin
    loaded = [s for s in samples if 1.0 < s["t_s"] < seconds]
    tail = windows[len(windows) // 2:]
    summary = {
        "size": size, "seconds": seconds, "gemms_per_window": per_window,
        "burst_tflops": windows[0]["tflops"] if windows else None,
        "sustained_tflops": median(w["tflops"] for w in tail),
        "sm_mhz_median_loaded": median(s.get("sm_mhz") for s in loaded),
        "power_w_median_loaded": median(s.get("power_w") for s in loaded),
        "temp_c_max_loaded": max((s["temp_c"] for s in loaded if s.get("temp_c")), default=None),
    }
    return {"summary": summary, "windows": windows, "smi": samples}


def attention(quick):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION}
    tokens = 16384
    seqs = [2048, 8192] if quick else [2048, 4096, 8192, 16384]
    rows = []
    for name, backend in backends.items():
        for head_dim, heads in [(128, 32), (64, 32)]:
            for seq in seqs:
                for causal in (True, False):
                    batch = max(1, tokens // seq)
                    row = {"backend": name, "batch": batch, "heads": heads, "seq": seq,
                           "head_dim": head_dim, "causal": causal}
                    # Useful FLOPs: QK^T and PV, 2*2*b*h*s^2*d; causal does half; backward 2.5x.
                    fwd_flops = 4.0 * batch * heads * seq * seq * head_dim * (0.5 if causal else 1)
                    try:
                        q, k, v = (random_bf16(batch, heads, seq, head_dim).requires_grad_()
                                   for _ in range(3))
                        grad = random_bf16(batch, heads, seq, head_dim)
                        with sdpa_kernel(backend):
                            fwd = timed(lambda: F.scaled_dot_product_attention(
                                q, k, v, is_causal=causal), 10)

                            def fwd_bwd():
                                o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                                o.backward(grad)

                            both = timed(fwd_bwd, 10)
                        bwd_s = both["median_s"] - fwd["median_s"]
                        row.update({"fwd_s": fwd["median_s"], "fwd_bwd_s": both["median_s"],
                                    "fwd_tflops": fwd_flops / fwd["median_s"] / 1e12,
                                    "bwd_tflops": 2.5 * fwd_flops / bwd_s / 1e12
                                    if bwd_s > 0 else None})
                        del q, k, v, grad
                    except (RuntimeError, ValueError) as error:
                        row["skipped"] = str(error).splitlines()[0][:200]
                    rows.append(row)
                    torch.cuda.empty_cache()
    return rows


def memory_bound(quick):
    """Each kernel with the fewest bytes it must move (inputs read once, outputs written once)."""
    tokens = 8192 if quick else 16384
    hidden, ffn, vocab = 8192, 28672, 128256
    rows = []

    def add(name, fn, bytes_moved, kernels=1, iters=20, **shape):
        try:
            t = timed(fn, iters)
            rows.append({"op": name, "kernels": kernels, "bytes": bytes_moved, **shape, **t,
                         "GBps": bytes_moved / t["median_s"] / 1e9})
        except (RuntimeError, ValueError) as error:
            rows.append({"op": name, "skipped": str(error).splitlines()[0][:200], **shape})

    x = random_bf16(tokens, hidden)
    y = random_bf16(tokens, hidden)
    w = random_bf16(hidden)
    e = x.element_size()
    th = tokens * hidden
    add("residual_add", lambda: torch.add(x, y), 3 * th * e, tokens=tokens, hidden=hidden)
    add("rms_norm_fwd", lambda: F.rms_norm(x, (hidden,), w, 1e-5), 2 * th * e,
        tokens=tokens, hidden=hidden)
    add("layer_norm_fwd", lambda: F.layer_norm(x, (hidden,), w, w, 1e-5), 2 * th * e,
        tokens=tokens, hidden=hidden)
    xg = x.detach().clone().requires_grad_()
    wg = w.detach().clone().requires_grad_()
    out = F.layer_norm(xg, (hidden,), wg, wg, 1e-5)
    dy = random_bf16(tokens, hidden)
    add("layer_norm_bwd", lambda: torch.autograd.grad(out, (xg, wg), dy, retain_graph=True),
        3 * th * e, tokens=tokens, hidden=hidden)
    add("dropout_fwd", lambda: F.dropout(x, 0.1, True), 2 * th * e + th,
        tokens=tokens, hidden=hidden)
    add("gelu_fwd", lambda: F.gelu(x, approximate="tanh"), 2 * th * e,
        tokens=tokens, hidden=hidden)
    del xg, wg, out, dy
    a = random_bf16(tokens, ffn)
    b = random_bf16(tokens, ffn)
    tf = tokens * ffn
    add("silu_fwd", lambda: F.silu(a), 2 * tf * e, tokens=tokens, ffn=ffn)
    add("mul_fwd", lambda: a * b, 3 * tf * e, tokens=tokens, ffn=ffn)
    add("swiglu_eager_fwd", lambda: F.silu(a) * b, 3 * tf * e, kernels=2, tokens=tokens, ffn=ffn)
    del a, b
    logit_tokens = tokens // 4
    logits = torch.randn(logit_tokens, vocab, device="cuda", dtype=torch.float32)
    labels = torch.randint(0, vocab, (logit_tokens,), device="cuda")
    tv = logit_tokens * vocab
    add("cross_entropy_fp32_fwd", lambda: F.cross_entropy(logits, labels), tv * 4,
        tokens=logit_tokens, vocab=vocab)
    add("softmax_fp32", lambda: torch.softmax(logits, -1), 2 * tv * 4,
        tokens=logit_tokens, vocab=vocab)
    del logits, labels
    params = (64 << 20) if quick else (256 << 20)
    p = torch.randn(params, device="cuda", dtype=torch.float32, requires_grad=True)
    p.grad = torch.randn_like(p)
    for fused, label in [(True, "adamw_fused_fp32"), (False, "adamw_foreach_fp32")]:
        try:
            opt = torch.optim.AdamW([p], lr=1e-4, fused=fused, foreach=not fused)
            opt.step()
            # Reads p, g, m, v; writes p, m, v: 7 fp32 accesses per parameter.
            add(label, opt.step, 7 * 4 * params, params=params)
            del opt
        except (RuntimeError, ValueError) as error:
            rows.append({"op": label, "skipped": str(error).splitlines()[0][:200]})
    return rows


def msmf(seconds_per_shape):
    """Sustained matmul rate per shape: each shape back to back for seconds_per_shape at the
    power limit (after a warm-up that brings the GPU there), in windows of about 0.25 s; the best
    window of the last two seconds is the shape's sustained rate (mamf-finder's MSMF method)."""
    bf16 = [(4096, 4096, 4096), (6144, 6144, 6144), (8192, 8192, 8192), (16384, 16384, 16384),
            (16384, 8192, 8192), (16384, 28672, 8192), (16384, 8192, 28672)]
    fp8 = [(8192, 8192, 8192), (16384, 28672, 8192), (16384, 8192, 28672)]
    sampler = SmiSampler(200)
    begin = time.monotonic()
    rows = []

    def run(m, n, k, dtype, fast_accum, seconds):
        if dtype == "bf16":
            a, b = random_bf16(m, k), random_bf16(k, n)
            fn = lambda: torch.matmul(a, b)  # noqa: E731
        else:
            a = random_bf16(m, k).to(torch.float8_e4m3fn)
            b = random_bf16(n, k).to(torch.float8_e4m3fn).t()  # column-major, as _scaled_mm needs
            one = torch.ones((), device="cuda", dtype=torch.float32)
            fn = lambda: torch._scaled_mm(a, b, one, one, out_dtype=torch.bfloat16,  # noqa: E731
                                          use_fast_accum=fast_accum)
        start_t = time.monotonic()
        windows, _ = back_to_back(fn, 2.0 * m * n * k, 0.25, seconds, start_t)
        last = [r for t, r in windows if t > seconds - 2.0] or [r for _, r in windows]
        return {"m": m, "n": n, "k": k, "dtype": dtype, "fast_accum": fast_accum,
                "t0_s": round(start_t - begin, 2), "t1_s": round(time.monotonic() - begin, 2),
                "first_window_tflops": windows[0][1], "msmf_tflops": max(last),
                "median_last_tflops": statistics.median(last), "windows": len(windows)}

    try:
        rows.append({"warmup": run(8192, 8192, 8192, "bf16", False, 5.0)})
        for m, n, k in bf16:
            rows.append(run(m, n, k, "bf16", False, seconds_per_shape))
            torch.cuda.empty_cache()
        for m, n, k in fp8:
            for fast in (False, True):
                try:
                    rows.append(run(m, n, k, "fp8", fast, seconds_per_shape))
                except (RuntimeError, ValueError, TypeError) as error:
                    rows.append({"m": m, "n": n, "k": k, "dtype": "fp8", "fast_accum": fast,
                                 "skipped": str(error).splitlines()[0][:200]})
                torch.cuda.empty_cache()
    finally:
        samples = sampler.stop()
    for s in samples:
        s["t_s"] = round(s.pop("t") - begin, 2)
    for row in rows:
        if "t0_s" in row:
            inside = [s for s in samples if row["t0_s"] + 1 < s["t_s"] < row["t1_s"]]
            row["sm_mhz_median"] = median(s.get("sm_mhz") for s in inside)
            row["power_w_median"] = median(s.get("power_w") for s in inside)
    return {"rows": rows, "smi": samples}


HOLD_SOURCE = r"""
extern "C" __global__ void __launch_bounds__(1024, 1) hold(long long cycles, int* sink) {
  extern __shared__ int scratch[];
  scratch[threadIdx.x] = threadIdx.x;
  __syncthreads();
  const long long start = clock64();
  int acc = 0;
  while (clock64() - start < cycles) acc += scratch[(threadIdx.x + acc) & 1023];
  if (acc == 0x7fffffff) sink[0] = acc;
}
"""


def contention(repeats):
    """GEMM time while k SMs are held by a kernel that, like an NCCL channel's block, keeps its SM
    (1024 threads and 200 KB of shared memory: no GEMM block fits beside it)."""
    import cupy

    kernel = cupy.RawKernel(HOLD_SOURCE, "hold")
    smem = 200 * 1024
    kernel.max_dynamic_shared_size_bytes = smem
    sink = cupy.zeros(1, dtype=cupy.int32)
    side = cupy.cuda.Stream(non_blocking=True)
    main = torch.cuda.Stream()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows = []
    for m, n, k in [(8192, 8192, 8192), (16384, 8192, 8192), (4096, 28672, 8192)]:
        a, b = random_bf16(m, k), random_bf16(k, n)
        flops = 2.0 * m * n * k
        for held in [0, 4, 8, 16, 24, 32, 48, 66]:
            times = []
            for _ in range(repeats):
                torch.cuda.synchronize()
                count = 12
                with torch.cuda.stream(main):
                    for _ in range(2):
                        torch.matmul(a, b)
                torch.cuda.synchronize()
                if held:
                    # ~0.4 s at the boost clock: longer than the timed GEMMs below.
                    with side:
                        kernel((held,), (1024,), (cupy.int64(800_000_000), sink),
                               shared_mem=smem)
                    time.sleep(0.005)
                with torch.cuda.stream(main):
                    start = torch.cuda.Event(enable_timing=True)
                    stop = torch.cuda.Event(enable_timing=True)
                    start.record()
                    for _ in range(count):
                        torch.matmul(a, b)
                    stop.record()
                stop.synchronize()
                busy = side.done is False if held else False
                times.append(start.elapsed_time(stop) * 1e-3 / count)
                side.synchronize()
            t = statistics.median(times)
            rows.append({"m": m, "n": n, "k": k, "held_sms": held, "sms": sms, "gemm_s": t,
                         "tflops": flops / t / 1e12, "hold_outlived_gemms": busy})
        base = next(r["gemm_s"] for r in rows if r["m"] == m and r["n"] == n and r["held_sms"] == 0)
        for r in rows:
            if r["m"] == m and r["n"] == n:
                r["slowdown"] = r["gemm_s"] / base
                r["proportional"] = sms / (sms - r["held_sms"])
        del a, b
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--sustain-seconds", type=float, default=40.0)
    parser.add_argument("--sustain-size", type=int, default=8192)
    parser.add_argument("--quick", action="store_true", help="fewer and smaller shapes")
    parser.add_argument("--msmf-seconds", type=float, default=3.0)
    parser.add_argument("--parts", default="copy,memory,attention,sustained,msmf,contention")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        die("no CUDA device visible to PyTorch")
    torch.manual_seed(1)
    doc = {"format": "fabricsim-kernel-bench", "version": 1,
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "device": device_info()}

    def save():
        with open(args.output, "w") as f:
            json.dump(doc, f, indent=1)

    parts = {"copy": lambda: copy_bandwidth(args.quick),
             "memory": lambda: memory_bound(args.quick),
             "attention": lambda: attention(args.quick),
             "sustained": lambda: sustained_gemm(args.sustain_seconds, args.sustain_size),
             "msmf": lambda: msmf(args.msmf_seconds),
             "contention": lambda: contention(3)}
    for name in args.parts.split(","):
        begin = time.monotonic()
        try:
            doc[name] = parts[name]()
        except Exception as error:  # one part failing must not lose the others
            doc[name] = {"error": f"{type(error).__name__}: {error}"[:500]}
        doc.setdefault("part_seconds", {})[name] = round(time.monotonic() - begin, 1)
        save()  # results are written as they come
        print(f"kernel_bench: {name} done in {doc['part_seconds'][name]} s", file=sys.stderr)

    copy = doc.get("copy", {})
    ceiling = copy.get("GBps")
    print(f"device: {doc['device'].get('name')}  copy {ceiling and round(ceiling)} GB/s")
    for row in doc.get("memory", []) if isinstance(doc.get("memory"), list) else []:
        if "GBps" in row:
            share = f"{row['GBps'] / ceiling:.2f}" if ceiling else "-"
            print(f"  {row['op']:<24} {row['median_s'] * 1e6:9.1f} us {row['GBps']:7.0f} GB/s "
                  f"({share} of copy)")
    for row in doc.get("attention", []) if isinstance(doc.get("attention"), list) else []:
        if "fwd_tflops" in row:
            bwd = row["bwd_tflops"]
            print(f"  attn {row['backend']:<9} d{row['head_dim']:<3} s{row['seq']:<5} "
                  f"{'causal' if row['causal'] else 'full  '} fwd {row['fwd_tflops']:6.1f} "
                  f"bwd {bwd and round(bwd, 1)} TFLOP/s")
    sustained = doc.get("sustained", {}).get("summary")
    if sustained and sustained["burst_tflops"] and sustained["sustained_tflops"]:
        print(f"  sustained bf16 {sustained['size']}^3: burst {sustained['burst_tflops']:.0f}, "
              f"sustained {sustained['sustained_tflops']:.0f} TFLOP/s, SM "
              f"{sustained['sm_mhz_median_loaded']} MHz, {sustained['power_w_median_loaded']} W")
    msmf_rows = doc.get("msmf", {}).get("rows", []) if isinstance(doc.get("msmf"), dict) else []
    for row in msmf_rows:
        if "msmf_tflops" in row:
            print(f"  msmf {row['dtype']} {row['m']}x{row['n']}x{row['k']} fast={row['fast_accum']}: "
                  f"first {row['first_window_tflops']:.0f}, sustained {row['msmf_tflops']:.0f} "
                  f"TFLOP/s, SM {row['sm_mhz_median']} MHz, {row['power_w_median']} W")
        elif "skipped" in row:
            print(f"  msmf {row['dtype']} {row['m']}x{row['n']}x{row['k']}: {row['skipped']}")
    rows = doc.get("contention") if isinstance(doc.get("contention"), list) else []
    for row in rows:
        print(f"  contention {row['m']}x{row['n']}x{row['k']} held {row['held_sms']:>2}: "
              f"{row['tflops']:.0f} TFLOP/s, slowdown {row['slowdown']:.3f} "
              f"(proportional {row['proportional']:.3f}) outlived={row['hold_outlived_gemms']}")


if __name__ == "__main__":
    main()
