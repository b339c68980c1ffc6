"""Cluster schedulers; importing this package registers every policy."""

from parrotsim.policies.cluster import least_queue, round_robin, slots  # noqa: F401
from parrotsim.policies.cluster import parrot as _parrot  # noqa: F401
from parrotsim.sim.model.cluster_policy import CLUSTER_POLICIES, ClusterPolicy, ClusterPolicyConfig

__all__ = ["CLUSTER_POLICIES", "ClusterPolicy", "ClusterPolicyConfig"]
