"""Shared constants and small Triton helpers for the attention kernels.

Conventions used by every kernel in this package:

* KV cache layout NHD: ``k_cache, v_cache [num_pages, PAGE_SIZE, Hkv, D]``, page size 16.
* Inside kernels scores are kept in the log2 domain (``sm_scale * log2(e)`` is applied to q.k),
  partial states are ``(o fp32 [.., D], lse2 fp32)`` with ``lse2 = log2(sum(2 ** s2))``.
* Public functions return the natural-log LSE ``ln(sum_j exp(sm_scale * q.k_j))`` in fp32.
"""

from __future__ import annotations

import functools
import math
import os

import torch
import triton
import triton.language as tl

PAGE_SIZE = 16
LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453

# Triton's CPU interpreter multiplies the raw uint16 bit patterns of bf16 operands in tl.dot,
# so under TRITON_INTERPRET=1 the kernels upcast dot operands to fp32 (exact for bf16 inputs;
# the P matrix is still rounded to the KV dtype first, so the numerics match the GPU path).
INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"


def num_sms(device: torch.device) -> int:
    """Number of streaming multiprocessors of ``device`` (132 on H200; 8 on the CPU)."""
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 8


def default_scale(head_dim: int, sm_scale: float | None) -> float:
    """Softmax scale: ``sm_scale`` if given, else ``1/sqrt(head_dim)``."""
    return 1.0 / math.sqrt(head_dim) if sm_scale is None else float(sm_scale)


@triton.jit
def mma(a, b, F32: tl.constexpr):
    """tl.dot with fp32 accumulation; with F32 the operands are upcast (interpreter mode)."""
    if F32:
        a = a.to(tl.float32)
        b = b.to(tl.float32)
    return tl.dot(a, b)


@functools.cache
def device_name(device: torch.device) -> str:
    """The GPU's name (``"NVIDIA H200"``), or the device type (``"cpu"``) elsewhere."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return device.type
