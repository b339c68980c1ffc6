"""The paged KV cache: block accounting, forks, reference counts, capacity, no leaks."""

import pytest

from parrotsim.sim.model.kv_cache import KVCache


def test_grow_takes_blocks_per_16_tokens():
    kv = KVCache(10, 16)
    ctx = kv.create()
    kv.grow(ctx, 1)
    assert kv.used_blocks == 1
    kv.grow(ctx, 15)
    assert kv.used_blocks == 1
    kv.grow(ctx, 1)
    assert kv.used_blocks == 2 and ctx.tokens == 17


def test_capacity_is_enforced():
    kv = KVCache(2, 16)
    ctx = kv.create()
    assert kv.can_grow(ctx, 32)
    assert not kv.can_grow(ctx, 33)
    with pytest.raises(MemoryError):
        kv.grow(ctx, 33)
    assert kv.used_blocks == 0


def test_growing_many_contexts_keeps_blocks_free_or_changes_nothing():
    kv = KVCache(5, 16)
    full, part = kv.create(), kv.create()
    kv.grow(full, 16)
    kv.grow(part, 10)  # 2 blocks used, 3 free
    assert not kv.grow_each_keeping([full, part], 7, keep_free=3)  # takes 2 (full and part)
    assert (full.tokens, full.blocks, part.tokens, part.blocks) == (16, 1, 10, 1)
    assert kv.used_blocks == 2
    assert kv.grow_each_keeping([full, part], 7, keep_free=1)
    assert (full.blocks, part.blocks, kv.used_blocks, kv.peak_blocks) == (2, 2, 4, 4)
    with pytest.raises(MemoryError):
        kv.grow_each([full, part], 32)  # needs 4 more blocks, 1 free
    assert (full.tokens, part.tokens, kv.used_blocks) == (23, 17, 4)


def test_fork_shares_parent_blocks_and_child_starts_in_fresh_block():
    kv = KVCache(100, 16)
    parent = kv.create(key="prefix")
    kv.grow(parent, 20)  # 2 blocks, the second padded
    a, b = kv.create(parent), kv.create(parent)
    kv.grow(a, 1)
    kv.grow(b, 17)
    assert kv.used_blocks == 2 + 1 + 2
    assert a.total_tokens == 21 and b.prefix_tokens == 20


def test_refcounted_free_releases_parent_last():
    kv = KVCache(100, 16)
    parent = kv.create()
    kv.grow(parent, 32)
    child = kv.create(parent)
    kv.grow(child, 5)
    kv.release(parent)  # the creator lets go; the child still holds it
    assert kv.used_blocks == 3
    kv.release(child)
    assert kv.used_blocks == 0 and kv.live_contexts == 0


def test_double_release_is_an_error():
    kv = KVCache(4, 16)
    ctx = kv.create()
    kv.release(ctx)
    with pytest.raises(RuntimeError):
        kv.release(ctx)
    with pytest.raises(RuntimeError):
        kv.create(ctx)


def test_many_forks_and_frees_leave_no_leak():
    kv = KVCache(1000, 16)
    root = kv.create()
    kv.grow(root, 100)
    children = []
    for i in range(50):
        c = kv.create(root)
        kv.grow(c, i + 1)
        grand = kv.create(c)
        kv.grow(grand, 3)
        children.append((c, grand))
    peak = kv.used_blocks
    for c, g in children:
        kv.release(c)
        kv.release(g)
    kv.release(root)
    assert kv.used_blocks == 0 and kv.live_contexts == 0 and kv.peak_blocks == peak
