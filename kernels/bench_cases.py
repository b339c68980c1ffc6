"""Decode-attention batches for the shape sweeps (``tune``, ``bench_shapes``, ``bench_era``).

Every case draws its K/V pages from one :class:`parrotsim.kernels.bench_util.RandomKV` pool
(random bf16 values, never zeros). Pages are laid out in order: a private batch gives sequence
b the pages ``b*npp .. b*npp+npp-1`` (npp = pages of the longest sequence), so the same memory
viewed as [B, npp*16, Hkv, D] is the contiguous gather that torch SDPA reads; a shared batch has
the prefix in pages ``0..`` and each sequence's suffix pages after it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from parrotsim.kernels.bench_util import RandomKV

PAGE = 16


def _pages(tokens: int) -> int:
    return -(-tokens // PAGE)


def tok_bytes(hkv: int, d: int) -> int:
    """K and V bytes of one token (bf16)."""
    return hkv * d * 2 * 2


@dataclass
class PrivateBatch:
    """B sequences, each with its own pages: paged-kernel arguments and the contiguous view."""
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    tables: torch.Tensor
    lens: torch.Tensor

    def contiguous(self) -> tuple[torch.Tensor, torch.Tensor]:
        """K, V as [B, Hkv, L, D] views (L = the padded length) of the same pages."""
        b, npp = self.tables.shape
        shape = (b, npp * PAGE, *self.k.shape[2:])
        return (self.k.view(shape).transpose(1, 2), self.v.view(shape).transpose(1, 2))


@dataclass
class SharedBatch:
    """B sequences sharing ``prefix_len`` tokens (pages ``prefix``) plus private suffixes."""
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    prefix: torch.Tensor
    prefix_len: int
    suffix_tables: torch.Tensor
    suffix_lens: torch.Tensor

    def args(self) -> tuple:
        """Positional arguments of the shared-prefix kernels."""
        return (self.q, self.k, self.v, self.prefix, self.prefix_len, self.suffix_tables,
                self.suffix_lens)

    def paged_tables(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Block tables and lengths of the same batch for the paged kernel over shared pages:
        the prefix's whole pages are shared, a partial last prefix page is private to each
        sequence (as a block-granular prefix cache keeps it), then the suffix. Same bytes and
        work as the shared batch (the private pages hold other random values)."""
        n = self.prefix_len // PAGE
        b = self.q.shape[0]
        tables = torch.cat([self.prefix[:n].expand(b, n), self.suffix_tables], dim=1)
        return tables.contiguous(), self.suffix_lens + self.prefix_len


def private_batch(kv: RandomKV, lens: list[int], hq: int, group: int, d: int) -> PrivateBatch:
    """Paged batch of sequences of ``lens`` tokens on private pages."""
    dev = kv.device
    b, npp = len(lens), max(1, _pages(max(lens)))
    k, v = kv.cache(b * npp, hq // group, d)
    tables = torch.arange(b * npp, dtype=torch.int32, device=dev).view(b, npp)
    q = torch.randn(b, hq, d, dtype=torch.bfloat16, device=dev)
    return PrivateBatch(q, k, v, tables, torch.tensor(lens, dtype=torch.int32, device=dev))


def shared_batch(kv: RandomKV, prefix_len: int, suffix: list[int], hq: int, group: int,
                 d: int) -> SharedBatch:
    """Shared-prefix batch: ``prefix_len`` shared tokens, sequence b owns ``suffix[b]`` more."""
    dev = kv.device
    b, npre = len(suffix), _pages(prefix_len)
    nsuf = max(1, _pages(prefix_len % PAGE + max(suffix)))  # room for :meth:`paged_tables`
    k, v = kv.cache(npre + b * nsuf, hq // group, d)
    prefix = torch.arange(npre, dtype=torch.int32, device=dev)
    tables = (npre + torch.arange(b * nsuf, dtype=torch.int32, device=dev)).view(b, nsuf)
    q = torch.randn(b, hq, d, dtype=torch.bfloat16, device=dev)
    return SharedBatch(q, k, v, prefix, prefix_len, tables,
                       torch.tensor(suffix, dtype=torch.int32, device=dev))
