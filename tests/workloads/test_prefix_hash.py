"""PrefixHash keys at semantic-variable boundaries and shared prefixes."""

from hashlib import blake2b

from parrotsim.workloads.app import App, Call, Ref, Text, single_call_app
from parrotsim.workloads.prefix_hash import _text_step, prefix_hashes, prefix_keys, shared_prefix


def refine_app(app_id: str, chunk: int = 100) -> App:
    c = Call("refine", (Text("head", 40), Ref("prev"), Text("mid", 20), Ref("chunk")), "s", 50)
    return App(app_id, 0.0, (c,), ("s",), inputs={"prev": 50, "chunk": chunk})


def gpt(app_id: str, system: str = "gpts/prod/system", query: str = "q1") -> App:
    return single_call_app(app_id, 0.0, (Text(system, 7437), Text(query, 7)), 704)


def test_one_key_per_boundary_with_cumulative_lengths():
    app = refine_app("a")
    keys, lens = prefix_keys(app, app.calls[0])
    assert len(keys) == 4 and len(set(keys)) == 4
    assert lens == (40, 90, 110, 210)


def test_equal_text_gives_equal_keys_across_apps():
    k1, _ = prefix_keys(gpt("u1", query="q1"), gpt("u1").calls[0])
    k2, _ = prefix_keys(gpt("u2", query="q2"), gpt("u2", query="q2").calls[0])
    assert k1[0] == k2[0] and k1[1] != k2[1]  # same system prompt, different queries
    k3, _ = prefix_keys(gpt("u3"), gpt("u3", system="gpts/image/system").calls[0])
    assert k3[0] != k1[0] and k3[1] != k1[1]  # different constant text never matches later


def test_refs_differ_across_apps_but_leading_text_is_shared():
    a, b = refine_app("a"), refine_app("b")
    ka, _ = prefix_keys(a, a.calls[0])
    kb, _ = prefix_keys(b, b.calls[0])
    assert ka[0] == kb[0]
    assert all(x != y for x, y in zip(ka[1:], kb[1:], strict=True))
    ka2, _ = prefix_keys(a, a.calls[0])
    assert ka2 == ka  # deterministic


def test_shared_prefix_is_the_leading_constant_run():
    app = refine_app("a")
    key, n = shared_prefix(app, app.calls[0])
    assert n == 40 and key == prefix_keys(app, app.calls[0])[0][0]
    g = gpt("u1")
    assert shared_prefix(g, g.calls[0]) == (prefix_keys(g, g.calls[0])[0][0], 7437)
    one = single_call_app("s", 0.0, (Text("sharegpt/1", 300),), 10)
    assert shared_prefix(one, one.calls[0]) is None
    three = single_call_app("t", 0.0, (Text("a", 10), Text("b", 20), Text("c", 5)), 10)
    assert shared_prefix(three, three.calls[0])[1] == 30
    starts_with_ref = App("r", 0.0, (Call("c", (Ref("x"), Text("t", 4)), "o", 3),), ("o",),
                          inputs={"x": 5})
    assert shared_prefix(starts_with_ref, starts_with_ref.calls[0]) is None


def reference_keys(app: App, call: Call) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The keys computed afresh, piece by piece (no memo): blake2b of 'previous key|piece id'."""
    lengths = app.inputs
    keys, lens, key, n = [], [], "", 0
    for piece in call.prompt:
        if isinstance(piece, Text):
            pid, n = f"T:{piece.content_id}:{piece.tokens}", n + piece.tokens
        else:
            pid, n = f"R:{app.app_id}:{piece.var}", n + lengths[piece.var]
        key = blake2b(f"{key}|{pid}".encode(), digest_size=12).hexdigest()
        keys.append(key)
        lens.append(n)
    return tuple(keys), tuple(lens)


def test_remembered_text_steps_depend_on_the_prefix_before_and_the_text_length():
    """The memo of text steps is keyed by (key so far, text): the same text after another
    prefix, or with another length, is hashed again (a memo keyed by the text alone, or by
    its content id alone, would hand back the first app's key)."""
    _text_step.cache_clear()
    apps = [single_call_app("a", 0.0, (Text("sys", 10), Text("x", 5), Text("q", 1)), 3),
            single_call_app("b", 0.0, (Text("sys2", 10), Text("x", 5), Text("q", 1)), 3),
            single_call_app("c", 0.0, (Text("sys", 10), Text("x", 6), Text("q", 1)), 3),
            single_call_app("d", 0.0, (Text("sys", 10), Text("x", 5), Text("q", 1)), 3),
            App("e", 0.0, (Call("c", (Text("sys", 10), Ref("v"), Text("x", 5)), "o", 3),),
                ("o",), inputs={"v": 4}),
            App("f", 0.0, (Call("c", (Text("sys", 10), Ref("v"), Text("x", 5)), "o", 3),),
                ("o",), inputs={"v": 4})]
    got = [prefix_keys(a, a.calls[0]) for a in apps]
    assert got == [reference_keys(a, a.calls[0]) for a in apps]
    assert got[0][0][1] != got[1][0][1] and got[0][0][1] != got[2][0][1]
    assert got[3] == got[0]  # the same prompt: the same keys, from the memo
    assert got[4][0][2] != got[5][0][2]  # text after another app's variable: another key


def test_prefix_hashes_is_prefix_keys_and_shared_prefix_in_one_pass():
    cases = [refine_app("a"), gpt("u1"), gpt("u2", query="q2"),
             single_call_app("s", 0.0, (Text("sharegpt/1", 300),), 10),
             single_call_app("t", 0.0, (Text("a", 10), Text("b", 20), Text("c", 5)), 10),
             App("r", 0.0, (Call("c", (Ref("x"), Text("t", 4)), "o", 3),), ("o",),
                 inputs={"x": 5})]
    for app in cases:
        call = app.calls[0]
        keys, lens, shared = prefix_hashes(app, call)
        assert (keys, lens) == reference_keys(app, call) == prefix_keys(app, call)
        assert shared == shared_prefix(app, call)
