"""The shared core every part of parrotsim builds on: the strict config base, the registry of
pluggable kinds (workloads, engine and cluster policies) and the input-error type."""
