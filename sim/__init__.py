"""parrotsim's SimPy cluster model: engines, KV cache, client/network, manager, cost model."""

__version__ = "0.1.0"
