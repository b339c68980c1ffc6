"""Where the read-only facts live: ``../shared/data`` next to the repository."""

from pathlib import Path

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
