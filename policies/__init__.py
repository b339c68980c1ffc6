"""Pluggable decisions: cluster schedulers and engine batching policies (pure, no SimPy)."""
