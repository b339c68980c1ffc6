"""Parrot's cluster scheduler: Algorithm 1 branches, app FIFO, FindEngine filters/preferences."""

from parrotsim.policies.cluster.parrot import ParrotScheduler, ParrotSchedulerConfig
from parrotsim.sim.model.cluster_policy import CallInfo, EngineLoad, HeldPrefixes

_uid = iter(range(10**9))


def ci(app: str = "a", seq: int = 0, tokens: int = 100, **kw) -> CallInfo:
    return CallInfo(uid=next(_uid), app_id=app, app_seq=seq, call="c", prompt_len=tokens - 10,
                    output_len=10, **kw)


def sched(**kw) -> ParrotScheduler:
    return ParrotSchedulerConfig(**kw).make(0)


def engines(n: int, **kw) -> list[EngineLoad]:
    return [EngineLoad(i, **kw) for i in range(n)]


def placed(out: list[tuple[CallInfo, int]]) -> dict[int, int]:
    return {c.uid: e for c, e in out}


def test_task_group_goes_to_one_engine():
    group = [ci(task_group="a/reduce", objective="throughput") for _ in range(3)]
    other = ci(objective="latency")
    es = engines(3)
    es[0].num_requests = 1  # best fit would prefer engine 0 for every call
    out = sched(dag_aware=True).dispatch([other, *group], es, 0.0)
    where = placed(out)
    assert len({where[c.uid] for c in group}) == 1
    assert len(out) == 4


def test_group_is_split_only_when_no_engine_takes_it_whole():
    group = [ci(task_group="g") for _ in range(5)]
    out = sched(dag_aware=True, max_requests_per_engine=3).dispatch(group, engines(2), 0.0)
    assert sorted(placed(out).values()) == [0, 0, 0, 1, 1]
    out = sched(dag_aware=True, max_requests_per_engine=3, task_groups=False).dispatch(
        group, engines(2), 0.0)
    assert len(out) == 5


def test_queued_sharers_are_placed_together():
    sharers = [ci(app=f"u{i}", seq=i, shared_prefix="sys") for i in range(3)]
    loner = ci(app="z", seq=9)
    out = sched(ctx_aware=True).dispatch([sharers[0], loner, *sharers[1:]], engines(3), 0.0)
    where = placed(out)
    assert len({where[c.uid] for c in sharers}) == 1
    # without prefix affinity the default load balance spreads them
    out = sched().dispatch(sharers, engines(3), 0.0)
    assert sorted(placed(out).values()) == [0, 1, 2]


def test_engine_holding_the_context_is_preferred():
    es = engines(3)
    es[2].prefixes = {"sys"}
    es[2].num_requests = 10  # load balance alone would avoid it
    c = ci(shared_prefix="sys", prefix_keys=("sys", "sys+q"), prefix_lens=(500, 510))
    assert placed(sched(ctx_aware=True).dispatch([c], es, 0.0)) == {c.uid: 2}
    assert placed(sched().dispatch([c], es, 0.0)) == {c.uid: 0}
    es[1].prefixes = {"sys+q"}  # a deeper prefix wins
    assert placed(sched(ctx_aware=True).dispatch([c], es, 0.0)) == {c.uid: 1}
    es[1].num_requests = es[2].num_requests = 256  # holders full: fall back to any engine
    assert placed(sched(ctx_aware=True).dispatch([c], es, 0.0)) == {c.uid: 0}


def test_fallback_best_fit_or_load_balance():
    es = engines(3)
    es[0].num_requests, es[1].num_requests, es[2].num_requests = 5, 9, 1
    c = ci()
    assert placed(sched().dispatch([c], es, 0.0)) == {c.uid: 2}  # most remaining slots
    assert placed(sched(dag_aware=True).dispatch([c], es, 0.0)) == {c.uid: 1}  # best fit
    es[0].num_requests = 9
    es[0].reserved_tokens = 500  # equal slots: less remaining token capacity wins
    sc = sched(dag_aware=True, tokens_capacity=10_000)
    assert placed(sc.dispatch([c], es, 0.0)) == {c.uid: 0}


def test_app_fifo_orders_by_app_then_depth():
    late_app = ci(app="b", seq=1, depth=0)
    early_deep = ci(app="a", seq=0, depth=1)
    early_root = ci(app="a", seq=0, depth=0)
    q = [late_app, early_deep, early_root]
    es = engines(1, max_requests=2)
    out = sched(app_fifo=True).dispatch(q, es, 0.0)
    assert [c.uid for c, _ in out] == [early_root.uid, early_deep.uid]
    out = sched().dispatch(q, engines(1, max_requests=2), 0.0)
    assert [c.uid for c, _ in out] == [late_app.uid, early_root.uid]  # topological only


def test_latency_call_avoids_engine_over_its_budget():
    es = engines(2)
    es[0].num_requests, es[0].reserved_tokens = 3, 3000  # a throughput batch
    lat = ci(tokens=2000, objective="latency")
    out = sched(dag_aware=True).dispatch([lat], es, 0.0)
    assert placed(out) == {lat.uid: 1}  # best fit alone would pick engine 0
    es[1].max_requests = 0  # only the busy engine admits it: it goes there
    assert placed(sched(dag_aware=True).dispatch([lat], es, 0.0)) == {lat.uid: 0}


def test_latency_calls_join_latency_engines_and_throughput_avoids_them():
    es = engines(2)
    es[0].num_requests, es[0].reserved_tokens, es[0].latency_calls = 1, 300, 1
    es[0].requests_bound = 4
    lat, thr = ci(objective="latency"), ci(objective="throughput")
    out = placed(sched(dag_aware=True).dispatch([lat, thr], es, 0.0))
    assert out == {lat.uid: 0, thr.uid: 1}


def test_deduced_latency_bound_and_hints():
    es = engines(2)
    es[0].num_requests = 4
    lat = ci(objective="latency")
    assert placed(sched(dag_aware=True).dispatch([lat], es, 0.0)) == {lat.uid: 1}
    es[1].num_requests = 4
    assert sched(dag_aware=True).dispatch([lat], es, 0.0) == []  # bound 4 everywhere
    # only hints: no objective-derived bound; best fit packs it on engine 0
    assert placed(sched(dag_aware=True, deduction=False).dispatch([lat], es, 0.0))
    hinted = ci(max_requests=16, objective="latency")
    assert sched(dag_aware=True).call_bound(hinted) == 16
    es = engines(1, requests_bound=3, num_requests=3)
    assert sched(dag_aware=True).dispatch([ci()], es, 0.0) == []  # engine's own bound


def test_token_and_request_capacity_filters():
    es = engines(2)
    es[0].reserved_tokens = 900
    c = ci(tokens=200)
    assert placed(sched(dag_aware=True, tokens_capacity=1000).dispatch([c], es, 0.0)) == {
        c.uid: 1}
    es[1].tokens_capacity = 150
    assert sched(tokens_capacity=1000).dispatch([c], es, 0.0) == []
    calls = [ci() for _ in range(5)]
    out = sched(max_requests_per_engine=2).dispatch(calls, engines(2), 0.0)
    assert sorted(placed(out).values()) == [0, 0, 1, 1]  # the fifth stays queued


def test_inputs_are_not_mutated_and_decisions_stay_consistent():
    es = engines(3, max_requests=1)
    calls = [ci(shared_prefix="p") for _ in range(3)]
    out = sched().dispatch(calls, es, 0.0)
    assert sorted(placed(out).values()) == [0, 1, 2]
    assert all(e.num_requests == 0 and not e.prefixes for e in es)


def test_artifact_mode():
    es = engines(3)
    es[0].num_requests, es[1].num_requests, es[2].num_requests = 5, 9, 1
    es[1].prefixes = {"p"}
    c = ci(shared_prefix="p")
    art = {"mode": "artifact"}
    assert placed(sched(**art).dispatch([c], es, 0.0)) == {c.uid: 2}
    assert placed(sched(dag_aware=True, **art).dispatch([c], es, 0.0)) == {c.uid: 1}
    assert placed(sched(ctx_aware=True, **art).dispatch([c], es, 0.0)) == {c.uid: 1}
    group = [ci(task_group="g") for _ in range(3)]  # no groups: best fit packs them anyway
    out = sched(dag_aware=True, **art).dispatch(group, engines(2), 0.0)
    assert set(placed(out).values()) == {0}


def test_artifact_app_fifo_pulls_ready_successors_to_the_front():
    """experiments.md 3.2: a dispatched thread's ready successors get priority 1 and the queue is
    re-sorted (priority descending, stable). Successors arrive at the instant their producer is
    dispatched (pipelined readiness); one engine slot frees at t = 1 and t = 2."""
    def run(app_fifo: bool) -> list[list[str]]:
        s = sched(mode="artifact", app_fifo=app_fifo)
        a0, b0, c0 = ci(app="a", seq=0), ci(app="b", seq=1), ci(app="c", seq=2)
        a1, a2 = ci(app="a", seq=0, depth=1), ci(app="a", seq=0, depth=1)
        a3 = ci(app="a", seq=0, depth=2)
        name = {a0.uid: "a0", b0.uid: "b0", c0.uid: "c0", a1.uid: "a1", a2.uid: "a2",
                a3.uid: "a3"}
        full = engines(1, max_requests=1, num_requests=1)
        rounds = [[name[c.uid] for c, _ in s.dispatch([a0, b0, c0], engines(1, max_requests=1),
                                                     0.0)]]
        # the manager consults the policy once per arrival; a0's successors arrive at t = 0
        assert s.dispatch([b0, c0, a1], full, 0.0) == []
        assert s.dispatch([b0, c0, a1, a2], full, 0.0) == []
        queue = [b0, c0, a1, a2]
        for t in (1.0, 2.0):
            out = s.dispatch(queue, engines(1, max_requests=1), t)
            rounds.append([name[c.uid] for c, _ in out])
            queue = [c for c in queue if c not in {c for c, _ in out}]
            if t == 1.0 and rounds[-1] == ["a1"]:  # a1's successor arrives when a1 dispatches
                queue.append(a3)
                assert s.dispatch(queue, full, t) == []
        return rounds

    assert run(True) == [["a0"], ["a1"], ["a3"]]  # depth-first through app a
    assert run(False) == [["a0"], ["b0"], ["c0"]]  # arrival order


def test_artifact_app_fifo_keeps_the_order_of_calls_pulled_together_and_later_arrivals_queue():
    s = sched(mode="artifact", app_fifo=True)
    a0, b0 = ci(app="a", seq=0), ci(app="b", seq=1)
    succ = [ci(app="a", seq=0, depth=1) for _ in range(3)]
    late = ci(app="a", seq=0, depth=1)  # same app, arrives at a later instant: not pulled
    full = engines(1, max_requests=1, num_requests=1)
    assert placed(s.dispatch([a0, b0], engines(1, max_requests=1), 0.0)) == {a0.uid: 0}
    for i in range(3):
        assert s.dispatch([b0, *succ[:i + 1]], full, 0.0) == []
    assert s.dispatch([b0, *succ, late], full, 0.5) == []
    out = s.dispatch([b0, *succ, late], engines(1, max_requests=5), 1.0)
    assert [c.uid for c, _ in out] == [*(c.uid for c in succ), b0.uid, late.uid]


def test_artifact_best_fit_ranks_by_capacity_not_by_the_bound():
    """The artifact's best fit takes the engine with the fewest ``remain_thread_locs`` =
    ``threads_capacity`` - threads (parrot/os/engine.py; thread_dispatcher.py ``_dispatch_one``):
    the latency bound of the calls an engine holds filters engines but does not rank them. Engine
    0 holds 3 chats marked for at most 16 requests (13 slots under the bound), engine 1 holds 10
    unmarked maps (1014 of its 1024): a new map goes to engine 1, the fuller one. Ranking by
    the bound would have put it beside the chats."""
    es = engines(2, max_requests=1024)
    es[0].num_requests, es[0].requests_bound = 3, 16
    es[1].num_requests = 10
    chat_bound = 16
    new_map = ci()
    s = sched(mode="artifact", dag_aware=True)
    assert placed(s.dispatch([new_map], es, 0.0)) == {new_map.uid: 1}
    # the bound still filters: a chat is not placed where 16 calls already run
    es[1].num_requests = chat_bound
    chat = ci(max_requests=chat_bound)
    assert placed(sched(mode="artifact", dag_aware=True).dispatch([chat], es, 0.0)) == {
        chat.uid: 0}
    # and an engine whose own bound is reached takes nothing more, however full it is
    es[0].num_requests, es[1].num_requests = chat_bound, 0
    later_map = ci()
    assert placed(sched(mode="artifact", dag_aware=True).dispatch([later_map], es, 0.0)) == {
        later_map.uid: 1}


def test_load_balance_takes_the_engine_fitting_most_calls_of_a_unit():
    """The engine with the most free slots (engine 0, first of equals) fits only two of three
    sharers by tokens: engine 1, which fits all three, takes them."""
    es = engines(2)
    es[0].tokens_capacity = 250
    sharers = [ci(app=f"u{i}", seq=i, shared_prefix="sys") for i in range(3)]
    assert placed(sched(ctx_aware=True).dispatch(sharers, es, 0.0)) == {
        c.uid: 1 for c in sharers}


def test_free_slots_follow_dispatches_and_finishes():
    """The scheduler keeps its view of free slots between dispatches: its own placements
    count at once, a finish (``on_finish``, after the manager's accounting) frees a slot."""
    es = engines(3, max_requests=2)
    s = sched()
    first = [ci() for _ in range(4)]
    out = s.dispatch(first, es, 0.0)
    assert [e for _, e in out] == [0, 1, 2, 0]
    for _, e in out:  # the manager's accounting
        es[e].num_requests += 1
    assert [e for _, e in s.dispatch([ci(), ci(), ci()], es, 1.0)] == [1, 2]
    es[1].num_requests += 1
    es[2].num_requests += 1
    es[0].num_requests -= 1
    s.on_finish(first[0], 0)
    assert [e for _, e in s.dispatch([ci()], es, 2.0)] == [0]


def test_engines_are_found_by_prefix_key():
    """Engines' held-prefix sets keep an index (key -> engines) current as contexts come and
    go; the scheduler places a call by it."""
    es = engines(4)
    s = sched(ctx_aware=True)
    c = ci(shared_prefix="sys", prefix_keys=("sys",), prefix_lens=(50,))
    assert placed(s.dispatch([c], es, 0.0)) == {c.uid: 0}  # nobody holds it: load balance
    es[2].prefixes.add("sys")
    es[3].prefixes.add("sys")
    assert es[0].prefixes.index == {"sys": {2, 3}}
    assert placed(s.dispatch([c], es, 1.0)) == {c.uid: 2}
    es[2].prefixes.discard("sys")
    assert es[0].prefixes.index == {"sys": {3}}
    assert placed(s.dispatch([c], es, 2.0)) == {c.uid: 3}
    es[3].prefixes.clear()
    assert es[0].prefixes.index == {}


def test_among_holders_of_one_depth_the_engine_taking_most_sharers_wins():
    """Engines 0-2 hold the sharers' prefix to the same depth (engine 3 deeper, but full):
    engine 0 has room for one call, engine 1 for two, engine 2 for all three, so engine 2
    takes the whole unit even though engines 0 and 1 come first; with room for two on both
    engines 1 and 2, the first of them takes two and the third sharer goes on alone."""
    def cluster(room: list[int]) -> list[EngineLoad]:
        es = engines(4, max_requests=8)
        for e, free in zip(es, room, strict=True):
            e.prefixes.update(["sys", "sys+doc"] if e.engine_id == 3 else ["sys"])
            e.num_requests = 8 - free
        return es
    keys = {"shared_prefix": "sys", "prefix_keys": ("sys", "sys+doc"), "prefix_lens": (40, 80)}
    sharers = [ci(app=f"u{i}", seq=i, **keys) for i in range(3)]
    assert placed(sched(ctx_aware=True).dispatch(sharers, cluster([1, 2, 3, 0]), 0.0)) == {
        c.uid: 2 for c in sharers}
    out = sched(ctx_aware=True).dispatch(sharers, cluster([1, 2, 2, 0]), 0.0)
    assert [e for _, e in out] == [1, 1, 0]


def test_held_prefixes_keep_the_index_current_through_every_set_operation():
    index: dict[str, set[int]] = {}
    a, b = HeldPrefixes({"x"}), HeldPrefixes()
    a.attach(index, 0)
    b.attach(index, 1)
    assert index == {"x": {0}}
    b.update({"x", "y"})
    a |= {"z"}
    assert index == {"x": {0, 1}, "y": {1}, "z": {0}}
    a -= {"x"}
    b.remove("y")
    assert index == {"x": {1}, "z": {0}}
    b.symmetric_difference_update({"x", "w"})
    a.intersection_update(set())
    assert index == {"w": {1}} and a == set() and b == {"w"}
    assert b.pop() == "w" and index == {}


def test_the_artifacts_token_budget_moves_a_prefix_app_to_another_engine():
    """The artifact's engines admitted 262,144 tokens of calls unless their config said
    otherwise (``EngineConfig.tokens_capacity``), a call counting its whole prompt (a forked
    system prompt too) plus its output: 32 GPTs Productivity calls (8,148 tokens) fill an
    engine, so the 33rd leaves the engine holding its prompt for the load balance's choice."""
    assert ParrotSchedulerConfig().tokens_capacity == 262_144
    es = engines(2)
    es[0].prefixes = {"sys"}
    es[0].num_requests, es[0].reserved_tokens = 31, 31 * 8148
    calls = [ci(app=f"p{i}", seq=i, tokens=8148, shared_prefix="sys") for i in range(2)]
    out = sched(ctx_aware=True).dispatch(calls, es, 0.0)
    assert [e for _, e in out] == [0, 1]
    unbounded = sched(ctx_aware=True, tokens_capacity=None).dispatch(
        [ci(app="q", tokens=8148, shared_prefix="sys") for _ in range(2)], es, 0.0)
    assert [e for _, e in unbounded] == [0, 0]
