"""Cluster schedulers; importing this package registers every policy."""

from policies.cluster import least_queue, round_robin, slots  # noqa: F401
from policies.cluster import parrot as _parrot  # noqa: F401
from policies.cluster.base import CLUSTER_POLICIES, ClusterPolicy, ClusterPolicyConfig

__all__ = ["CLUSTER_POLICIES", "ClusterPolicy", "ClusterPolicyConfig"]
