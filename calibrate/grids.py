"""Measurement grids of the calibration (pure Python: read by the GPU harness and the fitter).

Every grid point is a dict of integer parameters. The kernel-level sections time ONE layer's
attention kernel (the fitter multiplies by the number of layers); ``linear`` and ``forward`` run
the whole model. ``forward`` points describe a mixed batch:

* ``prefills``: ``"n@ctx;n@ctx"`` prompt chunks of ``n`` new tokens over ``ctx`` cached tokens;
* ``decodes`` sequences with ``decode_ctx`` cached tokens each (they read ``decode_ctx + 1``);
* ``prefix``: with decodes, the leading ``prefix`` tokens of every decode are one shared prefix
  read by the shared-prefix kernel (0 = paged kernel, private pages).

A third of the forward points of each batch type (every third, deterministic) is held out of
fitting; ``parrotsim validate`` reports the composed model's error on them.
"""

from __future__ import annotations

from itertools import product

SECTIONS = ("linear", "paged", "shared", "paged_shared", "prefill", "forward", "overhead")
#: columns of raw.csv
FIELDS = ["section", "tokens", "batch", "ctx", "prefix", "suffix", "new", "chunks", "prefills",
          "decodes", "decode_ctx", "case", "status", "us_median", "us_p20", "us_p80", "reps"]
HELDOUT_EVERY = 3  # index % 3 == 1 within each batch kind is held out


def linear_grid(quick: bool) -> list[dict]:
    """Token counts of the linear part: the full grid every 16 tokens to 1,024 and every 64 to
    2,048, then doubling. cuBLAS chooses its GEMM tile by the token count and a few counts get a
    slow one, one 16-token step wide: on LLaMA-3-8B shapes (H100) 448 tokens take 25 % longer
    than 512, while 432 and 464 do not (kernels/results/session14). A sparse grid misses such a
    spike, or spreads it over its neighbours when a point lands on it; this one measures it
    (the section took 44 s on an H100 for LLaMA-3-8B). ``--quick`` keeps the sparse grid."""
    tokens = ([1, 8, 32, 128, 256, 512, 1024, 2048, 4096, 8192] if quick else
              [1, 2, 4, 8, *range(16, 1025, 16), *range(1088, 2049, 64), 3072, 4096, 6144,
               8192])
    return [{"tokens": t} for t in tokens]


def paged_grid(quick: bool) -> list[dict]:
    batches = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    ctxs = [128, 1024, 4096, 16384] if quick else [128, 512, 1024, 2048, 4096, 8192, 16384]
    return [{"batch": b, "ctx": c} for b, c in product(batches, ctxs) if b * c <= 1 << 20]


def shared_grid(quick: bool) -> list[dict]:
    batches = [1, 4, 16, 64, 256] if quick else [1, 2, 4, 8, 16, 32, 64, 128, 256]
    prefixes = [512, 2048, 16384] if quick else [512, 1024, 2048, 4096, 8192, 16384]
    suffixes = [64, 512]
    return [{"batch": b, "prefix": p, "suffix": s}
            for p, b, s in product(prefixes, batches, suffixes)]


def prefill_grid(quick: bool) -> list[dict]:
    news = ([16, 64, 256, 1024, 4096, 8192] if quick else
            [16, 64, 128, 256, 512, 1024, 2048, 4096, 8192])
    ctxs = [0, 2048, 6144, 12288] if quick else [0, 512, 1024, 2048, 6144, 12288]
    pts = [{"new": n, "ctx": c, "chunks": 1} for n, c in product(news, ctxs)]
    pts += [{"new": 512, "ctx": 0, "chunks": 4}, {"new": 128, "ctx": 1024, "chunks": 8}]
    return pts


def forward_grid(quick: bool, max_kv_tokens: int) -> list[dict]:
    """Whole-forward batches (decode-only, prefill-only, mixed), within the KV capacity. The
    quick grid is a subset of the full one spanning the same extent, ordered so that its
    held-out third reaches the corners too (long contexts, large batches, long chunks)."""
    pts: list[dict] = []

    def add(prefills: str = "", decodes: int = 0, decode_ctx: int = 0, prefix: int = 0) -> None:
        kv = sum(int(n) + int(c) for n, c in (x.split("@") for x in prefills.split(";") if x))
        kv += decodes * (decode_ctx + 1 - prefix) + prefix
        if kv <= max_kv_tokens:
            pts.append({"prefills": prefills, "decodes": decodes, "decode_ctx": decode_ctx,
                        "prefix": prefix})

    dec = ([(1, 128), (1, 4096), (8, 1024), (16, 512), (32, 4096), (64, 2048), (128, 128),
            (256, 512), (128, 1024)] if quick else
           list(product([1, 4, 8, 16, 32, 64, 128, 256], [128, 512, 1024, 2048, 4096])))
    for b, ctx in dec:
        add(decodes=b, decode_ctx=ctx)
    for b, p in ([(8, 2048), (64, 6000)] if quick else
                 [(8, 2048), (32, 6000), (64, 6000), (128, 2048)]):
        add(decodes=b, decode_ctx=p + 256, prefix=p)
    news = [32, 1024, 512, 6144] if quick else [32, 128, 384, 512, 1024, 1536, 2048, 3072,
                                                 4096, 6144]
    for n in news:
        add(prefills=f"{n}@0")
    multi = (["256@12000", "2048@0;512@512", "96@5120;96@5120;96@5120", "1024@4096",
              "16@0;16@0;16@0;16@0"] if quick else
             ["256@0;256@0", "512@0;512@0;512@0;512@0", "512@2048", "1024@4096",
              "128@0;384@1024", "2048@0;512@512", "64@5120", "96@5120;96@5120;96@5120",
              "256@12000", "16@0;16@0;16@0;16@0"])
    for s in multi:
        add(prefills=s)
    mixes = ([("64@0", 16, 512), ("4000@0", 4, 4096), ("1536@0", 128, 256),
              ("256@1024", 32, 1024)] if quick else
             [("64@0", 16, 512), ("512@0", 8, 1024), ("512@0", 32, 2048), ("1024@0", 64, 512),
              ("2048@0", 16, 1024), ("256@1024", 32, 1024), ("1536@0", 128, 256),
              ("128@0;256@0", 64, 2048), ("4000@0", 4, 4096)])
    for s, b, ctx in mixes:
        add(prefills=s, decodes=b, decode_ctx=ctx)
    return pts


def batch_kind(point: dict) -> str:
    """``decode``, ``prefill`` or ``mixed``."""
    if not point.get("prefills"):
        return "decode"
    return "mixed" if int(point.get("decodes", 0)) else "prefill"


def heldout_flags(points: list[dict]) -> list[bool]:
    """Which forward points are held out of fitting (every third of each batch kind)."""
    seen: dict[str, int] = {}
    flags = []
    for p in points:
        k = batch_kind(p)
        i = seen.get(k, 0)
        seen[k] = i + 1
        flags.append(i % HELDOUT_EVERY == 1)
    return flags


def forward_pages(points: list[dict], page: int = 16) -> int:
    """KV pages of ``page`` tokens that the largest forward point takes (each point's pages are
    assigned from 0: its prompt chunks with their context and its decodes with theirs, each
    counted a page over), and 64 spare."""
    return max(sum(n + c + page for n, c in parse_prefills(p["prefills"]))
               + p["decodes"] * (p["decode_ctx"] + 1 + page) for p in points) // page + 64


def parse_prefills(s: str) -> list[tuple[int, int]]:
    """``"n@ctx;n@ctx"`` -> [(n, ctx), ...]."""
    return [(int(n), int(c)) for n, c in (x.split("@") for x in s.split(";") if x)]


def describe_forward(p: dict) -> str:
    """One line naming a forward point's batch, e.g. ``prefill 512@0 + 8 decodes @ 1024``."""
    parts = [f"prefill {p['prefills']}"] if p["prefills"] else []
    if p["decodes"]:
        parts.append(f"{p['decodes']} decodes @ {p['decode_ctx']}"
                     + (f" (shared {p['prefix']})" if p["prefix"] else ""))
    return " + ".join(parts)
