"""Physical KV pages behind the simulator's block counts.

:class:`~parrotsim.sim.model.kv_cache.KVCache` counts the blocks each
:class:`~parrotsim.sim.model.kv_cache.Context` holds but gives them no ids. A real forward pass
needs page ids, so :class:`PageAllocator` keeps one list of physical pages per context and, on
each :meth:`PageAllocator.sync`, makes every context hold exactly ``ctx.blocks`` pages: contexts
whose reference count dropped to zero (a finished, freed or preempted sequence; ``seq.ctx``
became None) give all their pages back first, then live contexts grow (or shrink) to their
block count. A forked context's block table is its ancestors' pages, root first, then its own:
the parent's pages are shared by its children and freed only when the parent dies.

Pages are numbered ``0 .. num_pages-1``; the pool has exactly the cache's blocks, so a sync
never runs short when the ``KVCache`` accounting is right (it raises ``MemoryError`` if not).
"""

from __future__ import annotations

from collections.abc import Iterable

from parrotsim.sim.model.kv_cache import Context


class PageAllocator:
    """Page lists of the contexts of one ``KVCache`` of ``num_pages`` blocks."""

    def __init__(self, num_pages: int) -> None:
        self.num_pages = num_pages
        self.free: list[int] = list(range(num_pages - 1, -1, -1))  # pop() gives the lowest
        #: id(ctx) -> (ctx, its own pages); holding ctx keeps its id from being reused
        self._owned: dict[int, tuple[Context, list[int]]] = {}

    @property
    def used(self) -> int:
        """Pages held by tracked contexts."""
        return self.num_pages - len(self.free)

    def pages(self, ctx: Context) -> list[int]:
        """The pages of ``ctx``'s own tokens (tracked contexts only)."""
        return self._owned[id(ctx)][1]

    def table(self, ctx: Context) -> list[int]:
        """The block table of a sequence whose context is ``ctx``: ancestors' pages, root
        first, then ``ctx``'s own."""
        chain = []
        node: Context | None = ctx
        while node is not None:
            chain.append(node)
            node = node.parent
        table: list[int] = []
        for node in reversed(chain):
            table += self._owned[id(node)][1]
        return table

    def release_dead(self) -> int:
        """Give back the pages of every tracked context with no references left; returns how
        many pages came back."""
        dead = [key for key, (ctx, _) in self._owned.items() if ctx.refs <= 0]
        n = 0
        for key in dead:
            pages = self._owned.pop(key)[1]
            n += len(pages)
            self.free.extend(reversed(pages))
        return n

    def sync(self, contexts: Iterable[Context | None]) -> None:
        """Free dead contexts' pages, then give each live context in ``contexts`` (and its
        ancestors) exactly ``ctx.blocks`` pages."""
        self.release_dead()
        owned, free = self._owned, self.free
        for ctx in contexts:
            node = ctx
            while node is not None:
                entry = owned.get(id(node))
                if entry is None:
                    if node.refs <= 0:
                        raise RuntimeError("a freed context is still in use")
                    entry = owned[id(node)] = (node, [])
                pages = entry[1]
                need = node.blocks - len(pages)
                if need > 0:
                    if need > len(free):
                        raise MemoryError(f"page pool short: need {need}, {len(free)} free")
                    pages += [free.pop() for _ in range(need)]
                elif need < 0:
                    free.extend(reversed(pages[need:]))
                    del pages[need:]
                node = node.parent

    def check(self, contexts: Iterable[Context]) -> None:
        """Assert the invariants for the live ``contexts`` (tests): each holds ``blocks``
        pages, no page belongs to two contexts, free and held pages partition the pool."""
        seen: set[int] = set()
        for ctx, pages in self._owned.values():
            assert ctx.refs > 0, "a dead context still holds pages"
            assert len(pages) == ctx.blocks, (len(pages), ctx.blocks)
            assert seen.isdisjoint(pages), "a page is held by two contexts"
            seen.update(pages)
        for ctx in contexts:
            assert id(ctx) in self._owned or ctx.blocks == 0
        assert seen.isdisjoint(self.free) and len(seen) + len(self.free) == self.num_pages
