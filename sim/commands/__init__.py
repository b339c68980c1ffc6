"""Subcommands of the ``parrotsim`` CLI; each module defines ``add_parser`` and ``main``."""
