"""Rewrite the golden tables from the current code: ``python -m tests.golden.regenerate [CASE ...]``.

Only after a change that is meant to change results; say in the commit which cases changed and
why (``git diff --stat tests/golden`` lists them).
"""

from __future__ import annotations

import sys

from tests.golden.cases import CASES, golden_path, golden_table


def main(argv: list[str]) -> int:
    cases = argv or list(CASES)
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        print(f"unknown case(s) {unknown}; known: {list(CASES)}", file=sys.stderr)
        return 2
    for case in cases:
        text = golden_table(case)
        path = golden_path(case)
        old = path.read_text() if path.exists() else None
        path.write_text(text)
        print(f"{path.name}: {'unchanged' if old == text else 'written'} "
              f"({text.count(chr(10)) - 1} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
