#!/usr/bin/env python3
"""Runs training steps of a small Llama-style decoder on one GPU and writes their PyTorch
profiler (Kineto) trace, for `fabricsim calibrate trace` and for checking the model's time per
kernel class against a real step.

The model is plain PyTorch, as an eager FSDP-style stack runs it on one GPU: bf16 weights and
AdamW (fused) state, RMSNorm (torch.nn.functional.rms_norm), one fused QKV projection, rotary
embedding as eager elementwise ops, causal grouped-query attention through
scaled_dot_product_attention on its cuDNN backend (KV heads repeated first, as Hugging Face's
repeat_kv does), SwiGLU with one fused gate/up projection,
an untied LM head and an fp32 cross-entropy. No activation recomputation, no CUDA graphs.

  python3 tools/cuda/step_trace.py -o trace.json [--layers 4] [--seq 8192] [--steps 1]

Shapes default to Llama 3 8B's layer (hidden 4096, 32 query heads and 8 KV heads of 128, FFN
14336, vocabulary 128256). Needs PyTorch with CUDA; not a build dependency of fabricsim.
"""

import argparse
import json
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError as error:  # pragma: no cover - depends on the machine
    print(f"step_trace: PyTorch is needed ({error})", file=sys.stderr)
    sys.exit(2)


class Layer(torch.nn.Module):
    def __init__(self, hidden, heads, kv_heads, ffn):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        self.norm1 = torch.nn.Parameter(torch.ones(hidden))
        self.qkv = torch.nn.Linear(hidden, (heads + 2 * kv_heads) * self.head_dim, bias=False)
        self.proj = torch.nn.Linear(heads * self.head_dim, hidden, bias=False)
        self.norm2 = torch.nn.Parameter(torch.ones(hidden))
        self.gate_up = torch.nn.Linear(hidden, 2 * ffn, bias=False)
        self.down = torch.nn.Linear(ffn, hidden, bias=False)

    def forward(self, x, cos, sin):
        b, s, h = x.shape
        y = F.rms_norm(x, (h,), self.norm1, 1e-5)
        qkv = self.qkv(y).view(b, s, self.heads + 2 * self.kv_heads, self.head_dim)
        q, k, v = qkv.split([self.heads, self.kv_heads, self.kv_heads], dim=2)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        # Grouped-query attention as Hugging Face's eager models feed it to SDPA: the KV heads
        # repeated to the query heads (repeat_kv), then one causal cuDNN attention.
        groups = self.heads // self.kv_heads
        k, v = (t.repeat_interleave(groups, dim=2) for t in (k, v))
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(o.transpose(1, 2).reshape(b, s, h))
        y = F.rms_norm(x, (h,), self.norm2, 1e-5)
        gate, up = self.gate_up(y).chunk(2, dim=-1)
        return x + self.down(F.silu(gate) * up)


def rotate(t, cos, sin):
    half = t.shape[-1] // 2
    t1, t2 = t[..., :half], t[..., half:]
    return torch.cat((t1 * cos - t2 * sin, t2 * cos + t1 * sin), dim=-1)


class Model(torch.nn.Module):
    def __init__(self, layers, hidden, heads, kv_heads, ffn, vocab):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, hidden)
        self.layers = torch.nn.ModuleList(Layer(hidden, heads, kv_heads, ffn)
                                          for _ in range(layers))
        self.norm = torch.nn.Parameter(torch.ones(hidden))
        self.head = torch.nn.Linear(hidden, vocab, bias=False)

    def forward(self, tokens, cos, sin):
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x, cos, sin)
        x = F.rms_norm(x, (x.shape[-1],), self.norm, 1e-5)
        return self.head(x)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", required=True, help="the Kineto trace (JSON)")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--seq", type=int, default=8192)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--kv-heads", type=int, default=8)
    parser.add_argument("--ffn", type=int, default=14336)
    parser.add_argument("--vocab", type=int, default=128256)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--steps", type=int, default=1, help="profiled steps")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("step_trace: no CUDA device visible to PyTorch", file=sys.stderr)
        sys.exit(2)
    torch.manual_seed(1)
    torch.backends.cuda.enable_flash_sdp(False)
    torch.backends.cuda.enable_mem_efficient_sdp(False)
    torch.backends.cuda.enable_math_sdp(False)
    torch.backends.cuda.enable_cudnn_sdp(True)
    model = Model(args.layers, args.hidden, args.heads, args.kv_heads, args.ffn,
                  args.vocab).to(device="cuda", dtype=torch.bfloat16)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
    params = sum(p.numel() for p in model.parameters())
    head_dim = args.hidden // args.heads
    position = torch.arange(args.seq, device="cuda", dtype=torch.float32)[:, None]
    inv_freq = 500000.0 ** (-torch.arange(0, head_dim, 2, device="cuda") / head_dim)
    angle = (position * inv_freq)[None, :, None, :]
    cos, sin = angle.cos().to(torch.bfloat16), angle.sin().to(torch.bfloat16)
    tokens = torch.randint(0, args.vocab, (1, args.seq + 1), device="cuda")

    def step():
        logits = model(tokens[:, :-1], cos, sin)
        loss = F.cross_entropy(logits.float().view(-1, args.vocab), tokens[:, 1:].reshape(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    step_s = (time.perf_counter() - start) / 3
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities,
                                schedule=torch.profiler.schedule(wait=0, warmup=1,
                                                                 active=args.steps),
                                on_trace_ready=lambda p: p.export_chrome_trace(args.output)) as prof:
        for _ in range(1 + args.steps):
            step()
            prof.step()
    summary = {"params": params, "layers": args.layers, "seq": args.seq, "hidden": args.hidden,
               "heads": args.heads, "kv_heads": args.kv_heads, "ffn": args.ffn,
               "vocab": args.vocab, "step_s_unprofiled": step_s,
               "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
               "cudnn": torch.backends.cudnn.version(),
               "peak_memory_bytes": torch.cuda.max_memory_allocated()}
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
