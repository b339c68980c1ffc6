"""Which decodes of a batch fork the same cached prefix, and the reads the cost model takes from
them.

A shared-prefix kernel (and the paged kernel where the profile measured it over shared pages)
costs a decode batch by its *groups*: the decodes forking one cached prefix context, at least
two of them, each group's prefix read once. The answer depends only on which sequences decode,
in which order (a sequence's forked prefix and ``cached_len`` are set before it reaches the
engine and never change), so it is remembered for the last list of decodes: most iterations of
a Parrot engine short of KV blocks decode the same sequences again. Token counts are per
sequence; a group is ``(prefix tokens, decodes)``.
"""

from __future__ import annotations

from parrotsim.sim.model.costmodel import SharedGroup
from parrotsim.sim.model.era_kernels import one_prefix
from parrotsim.sim.model.kv_cache import Context
from parrotsim.sim.model.sequence import Batch, Sequence


class ForkedGroups:
    """The groups of an engine's decode batches (memo of the last answer)."""

    __slots__ = ("enabled", "one_prefix", "_of", "_answer")

    def __init__(self, enabled: bool, one_prefix_per_batch: bool) -> None:
        #: whether groups change the cost at all (else every batch has none)
        self.enabled = enabled
        #: the artifact's 2023 kernel: one prefix per batch (:func:`era_kernels.one_prefix`)
        self.one_prefix = one_prefix_per_batch
        self._of: list[Sequence] = []  # the decodes of the last answer (a copy)
        self._answer: tuple[list[SharedGroup], int] = ([], 0)

    def of(self, batch: Batch) -> tuple[list[SharedGroup], int]:
        """The groups among ``batch``'s decodes (in the order of each prefix's first decode)
        and the prefix tokens they cover; the last answer when the decodes are the same
        sequences in the same order (one C-speed list comparison)."""
        if not self.enabled or not batch.decodes:
            return [], 0
        if batch.decodes == self._of:  # list ==: identity first (Sequence has no __eq__)
            return self._answer
        self._of = batch.decodes.copy()  # the batch's list may change later (a ledger)
        self._answer = self._walk(batch)
        return self._answer

    def _walk(self, batch: Batch) -> tuple[list[SharedGroup], int]:
        """:meth:`of` by a walk over the decodes."""
        counts: dict[Context, int] = {}  # prefix context (by identity) -> decodes forking it
        tokens: dict[Context, int] = {}  # prefix context -> the first such decode's cached_len
        for s in batch.decodes:
            prefix = s.prefix_ctx
            if prefix is not None:
                cached = s.cached_len
                if cached > 0:
                    if prefix in counts:
                        counts[prefix] += 1
                    else:
                        counts[prefix] = 1
                        tokens[prefix] = cached
        groups = [(tokens[key], n) for key, n in counts.items() if n > 1]
        if self.one_prefix:
            groups = one_prefix(groups, len(batch.decodes))
        return groups, sum(p * n for p, n in groups)


def longest_read(batch: Batch) -> int:
    """The most KV tokens the paged kernel reads for one of ``batch``'s decodes when the
    shared-prefix kernel serves its forked groups: a group member's own tokens (its prefix is
    read once per group), any other decode's whole context (O(n), groups only)."""
    counts: dict[Context, int] = {}  # by identity
    for s in batch.decodes:
        if s.prefix_ctx is not None and s.cached_len > 0:
            counts[s.prefix_ctx] = counts.get(s.prefix_ctx, 0) + 1
    return max([s.ctx.tokens if s.prefix_ctx is not None and s.cached_len > 0
                and counts[s.prefix_ctx] > 1 else s.kv_tokens for s in batch.decodes])


def longest_context(batch: Batch) -> int:
    """The longest context (tokens, cached prefix included) among ``batch``'s decodes: O(log n)
    amortized for a ledger batch."""
    if batch.ledger is not None:
        return batch.ledger.longest_context()
    return max([s.cached_len + s.ctx.tokens for s in batch.decodes], default=0)
