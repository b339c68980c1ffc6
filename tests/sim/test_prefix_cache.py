"""Prefix contexts' lifetime on hand-built caches: until the last user, a TTL, or app end."""

from parrotsim.sim.model.kv_cache import KVCache
from parrotsim.sim.model.prefix_cache import PrefixCache


def filled(cache: PrefixCache, key: str, tokens: int, now: float, app: str):
    """Acquire ``key`` for a call of ``app``; fill the prefix if the cache had to create it."""
    parent, fill = cache.acquire(key, tokens, now, app)
    if fill is not None:
        fill.allocate(cache.kv, tokens)
        cache.filled(fill)
    return parent


def test_users_lifetime_frees_with_the_last_user():
    kv = KVCache(100)
    cache = PrefixCache(kv, set())
    filled(cache, "p", 64, 0.0, "a")
    assert kv.used_blocks == 4
    cache.release("p", 1.0)
    assert kv.used_blocks == 0 and not cache.held


def test_app_lifetime_keeps_the_prefix_until_every_app_using_it_ended():
    kv = KVCache(100)
    held: set[str] = set()
    cache = PrefixCache(kv, held, lifetime="app")
    first = filled(cache, "p", 64, 0.0, "a")
    cache.release("p", 1.0)  # the app's call finished, the app goes on
    assert kv.used_blocks == 4 and held == {"p"}
    again = filled(cache, "p", 64, 2.0, "b")  # a later round (or app) hits the cache
    assert again is first and kv.used_blocks == 4
    cache.release("p", 3.0)
    cache.app_ended("a")
    assert held == {"p"}  # app b may still use it
    cache.app_ended("b")
    assert kv.used_blocks == 0 and not held


def test_app_lifetime_does_not_drop_a_prefix_in_use():
    kv = KVCache(100)
    cache = PrefixCache(kv, set(), lifetime="app")
    filled(cache, "p", 32, 0.0, "a")
    cache.app_ended("a")  # ended, but a call still forks the prefix
    assert kv.used_blocks == 2
    cache.release("p", 1.0)
    assert kv.used_blocks == 0
