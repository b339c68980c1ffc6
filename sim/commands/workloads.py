"""``parrotsim workloads list|describe``: see ``workloads/cli.py``."""

from workloads.cli import add_parser, main

__all__ = ["add_parser", "main"]
