"""The shipped experiment files (package data): ``paper/fig*.yaml`` for the paper's figures,
``example_sweep.yaml`` and ``fig11_chain.yaml``; ``parrotsim run paper/fig11`` finds them by
name."""
