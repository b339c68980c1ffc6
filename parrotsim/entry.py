"""The ``parrotsim`` console script: the command line (:mod:`parrotsim.cli`), or - when one of
the project's dependencies is not installed (a GPU image without a package registry, say) - one
message naming it and pointing at ``python -m parrotsim.calibrate.preflight``, which lists
everything missing without importing it, and exit status 2 instead of an import traceback."""

from __future__ import annotations

import sys

try:
    from parrotsim.cli import main as _cli_main
    _missing: ModuleNotFoundError | None = None
except ModuleNotFoundError as exc:  # a third-party package; a missing module of ours is a bug
    if (exc.name or "").split(".")[0] == "parrotsim":
        raise
    _cli_main, _missing = None, exc


def main(argv: list[str] | None = None) -> int:
    """Run the command line; exit status 2 naming the package when a dependency is missing."""
    if _cli_main is None:
        print(f"parrotsim: the package {_missing.name!r} is not installed; install the "
              "project's dependencies (offline: calibrate/profiles/README.md), or run "
              "'python -m parrotsim.calibrate.preflight' to list everything missing",
              file=sys.stderr)
        return 2
    return _cli_main(argv)
