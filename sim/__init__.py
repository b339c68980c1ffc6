"""The simulator: ``model`` (the SimPy cluster model: engines, KV cache, clients, manager, cost
model, profiles, metrics) and ``harness`` (run configs, experiment files, sweeps, the results
store and the execution backends)."""
