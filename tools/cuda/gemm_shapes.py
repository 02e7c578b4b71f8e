#!/usr/bin/env python3
"""Prints the GEMM shape list of a calibration sweep as fabricsim-gemm-bench's --shapes JSON.

Square sizes, then per hidden size h and token count T the GEMMs of a transformer layer: QKV
(T x 3h x h), attention output (T x h x h), MLP up (T x 4h x h), MLP down (T x h x 4h) and the
MLP weight gradient (4h x h x T); in bf16 and fp8. bf16 also gets batched attention GEMMs
(QK^T and PV, head dim 128) and tf32 a few squares: 389 shapes, about 85 s on an H200.

  python3 tools/cuda/gemm_shapes.py > shapes.json
"""

import json

SQUARES = [256, 512, 1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384]
HIDDEN = [2048, 4096, 5120, 6144, 8192, 12288, 16384]
TOKENS = [1024, 2048, 4096, 8192, 16384]


def shapes():
    rows = []

    def add(m, n, k, batch, dtype):
        rows.append({"m": m, "n": n, "k": k, "batch": batch, "dtype": dtype})

    for dtype in ("bf16", "fp8"):
        for s in SQUARES:
            add(s, s, s, 1, dtype)
        for h in HIDDEN:
            for t in TOKENS:
                add(t, 3 * h, h, 1, dtype)
                add(t, h, h, 1, dtype)
                add(t, 4 * h, h, 1, dtype)
                add(t, h, 4 * h, 1, dtype)
                add(4 * h, h, t, 1, dtype)
    for s in (1024, 2048, 4096, 8192):
        for b in (32, 64):
            add(s, s, 128, b, "bf16")
            add(s, 128, s, b, "bf16")
    for s in (1024, 4096, 8192):
        add(s, s, s, 1, "tf32")
    return rows


if __name__ == "__main__":
    print(json.dumps({"shapes": shapes()}, indent=1))
