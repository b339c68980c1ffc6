"""The error type for bad user input (command-line flags, files, names).

The command line prints it to stderr as ``parrotsim: MESSAGE`` and exits with status 2, having
written nothing; messages name the file, line and field where they can.
"""


class UsageError(Exception):
    """Bad input: printed to stderr, exit status 2."""
