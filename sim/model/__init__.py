"""The SimPy cluster model of LLM application serving.

Entities and their state (sequences and batches, the paged KV cache with forked contexts, the
per-engine prefix cache, call requests), the processes that own time (engines, LangChain and
Parrot clients, the network, the manager), the contracts the model asks of pluggable policies
(``engine_policy``, ``cluster_policy``), the cost model and its profiles, and the metrics of a
run. Nothing here imports a concrete policy, the harness, or torch.
"""
