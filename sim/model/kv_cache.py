"""Paged KV cache: a capacity in fixed-size blocks and a tree of contexts sharing blocks.

A :class:`Context` owns the blocks holding its own tokens and points at a parent whose tokens
precede it (a forked prefix). As in Parrot's engine, a parent is padded to a block boundary when
forked, so a child's tokens always start in a fresh block and shared blocks are never written.
Contexts are reference counted: the creator holds one reference, each child one on its parent;
a context's blocks return to the pool when its count drops to zero. Only block *counts* are
modelled: no physical block ids are needed to account memory exactly.
"""

from __future__ import annotations


class Context:
    """A node of the context tree: ``tokens`` own tokens in ``blocks`` blocks, on ``parent``.

    ``ready`` is False while a shared prefix is still being filled (forks must wait).
    """

    __slots__ = ("parent", "tokens", "blocks", "refs", "key", "ready")

    def __init__(self, parent: Context | None, key: object = None) -> None:
        self.parent = parent
        self.tokens = 0
        self.blocks = 0
        self.refs = 1
        self.key = key
        self.ready = True

    @property
    def prefix_tokens(self) -> int:
        """Tokens held by the ancestors of this context (the shared prefix)."""
        n, p = 0, self.parent
        while p is not None:
            n += p.tokens
            p = p.parent
        return n

    @property
    def total_tokens(self) -> int:
        """Length of the whole context: ancestors' tokens plus own tokens."""
        return self.prefix_tokens + self.tokens


class KVCache:
    """Block pool of ``num_blocks`` blocks of ``block_size`` tokens (16 in vLLM and Parrot)."""

    __slots__ = ("num_blocks", "block_size", "used_blocks", "peak_blocks", "live_contexts")

    def __init__(self, num_blocks: int, block_size: int = 16) -> None:
        if num_blocks <= 0 or block_size <= 0:
            raise ValueError(f"KV cache needs positive blocks and block size, got "
                             f"{num_blocks} x {block_size}")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.used_blocks = 0
        self.peak_blocks = 0
        self.live_contexts = 0

    @property
    def free_blocks(self) -> int:
        """Blocks not held by any context."""
        return self.num_blocks - self.used_blocks

    def blocks_for(self, tokens: int) -> int:
        """Blocks needed to hold ``tokens`` tokens starting at a block boundary."""
        return -(-tokens // self.block_size)

    def extra_blocks(self, ctx: Context, tokens: int) -> int:
        """Blocks ``ctx`` must take to grow by ``tokens`` tokens."""
        return self.blocks_for(ctx.tokens + tokens) - ctx.blocks

    def create(self, parent: Context | None = None, key: object = None) -> Context:
        """A new empty context, forked from ``parent`` when given (takes a reference on it)."""
        if parent is not None:
            if parent.refs <= 0:
                raise RuntimeError("fork of a freed context")
            parent.refs += 1
        self.live_contexts += 1
        return Context(parent, key)

    def can_grow(self, ctx: Context, tokens: int) -> bool:
        """Whether ``ctx`` can grow by ``tokens`` tokens without running out of blocks."""
        return self.extra_blocks(ctx, tokens) <= self.free_blocks

    def grow(self, ctx: Context, tokens: int) -> None:
        """Append ``tokens`` tokens to ``ctx``; raises ``MemoryError`` if blocks run out."""
        need = self.extra_blocks(ctx, tokens)
        if need > self.free_blocks:
            raise MemoryError(f"KV cache full: need {need} blocks, {self.free_blocks} free")
        ctx.tokens += tokens
        ctx.blocks += need
        self.used_blocks += need
        if self.used_blocks > self.peak_blocks:
            self.peak_blocks = self.used_blocks

    def grow_each(self, ctxs: list[Context], tokens: int) -> None:
        """Grow every context by ``tokens`` (a decode step, or several); the caller has checked
        that the blocks suffice (raises ``MemoryError``, changing nothing, otherwise: a bug in
        the caller)."""
        if not self.grow_each_keeping(ctxs, tokens, keep_free=0):
            raise MemoryError(f"KV cache full: {len(ctxs)} contexts cannot grow by {tokens} "
                              f"tokens in {self.free_blocks} free blocks")

    def grow_each_keeping(self, ctxs: list[Context], tokens: int, keep_free: int) -> bool:
        """Grow every context by ``tokens`` if that leaves at least ``keep_free`` blocks free;
        otherwise change nothing and return False."""
        bs = self.block_size
        used = self.used_blocks
        for ctx in ctxs:  # optimistic: grow, and undo in the rare case the pool runs short
            n = ctx.tokens + tokens
            ctx.tokens = n
            need = -(-n // bs)
            used += need - ctx.blocks
            ctx.blocks = need
        if used <= self.num_blocks - keep_free:
            self.used_blocks = used
            if used > self.peak_blocks:
                self.peak_blocks = used
            return True
        for ctx in ctxs:
            ctx.tokens -= tokens
            ctx.blocks = -(-ctx.tokens // bs)
        return False

    def adopt(self, dst: Context, src: Context) -> None:
        """Move the tokens and blocks ``src`` filled into the empty ``dst`` and drop ``src``
        (a prefix filled by a helper sequence becomes the shared parent context)."""
        if dst.tokens or dst.blocks or src.parent is not dst.parent:
            raise RuntimeError("adopt needs an empty destination with the same parent")
        dst.tokens, dst.blocks = src.tokens, src.blocks
        src.tokens = src.blocks = 0
        self.release(src)

    def hold(self, ctx: Context) -> None:
        """Take one more reference on ``ctx`` (e.g. a prefix cache keeping it alive)."""
        if ctx.refs <= 0:
            raise RuntimeError("reference to a freed context")
        ctx.refs += 1

    def release(self, ctx: Context) -> None:
        """Drop one reference; free the context's blocks (and release its parent) at zero."""
        while ctx is not None:
            if ctx.refs <= 0:
                raise RuntimeError("context released more often than referenced")
            ctx.refs -= 1
            if ctx.refs > 0:
                return
            self.used_blocks -= ctx.blocks
            self.live_contexts -= 1
            ctx.blocks = 0
            ctx = ctx.parent
