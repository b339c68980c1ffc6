"""The typed config of one simulation run.

A :class:`RunConfig` names a workload (tagged by ``kind``), a cluster (number of engines, cost
profile, engine batching policy tagged by ``policy``, decode kernel, cluster scheduler tagged by
``policy``), the client and the network. Each pluggable part's config class is registered next
to its code; the unions below are built from those registries, so a new policy or workload is
available in YAML as soon as its module is imported by its package's catalog.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import Field

from parrotsim.core.config import StrictConfig
from parrotsim.policies.cluster import CLUSTER_POLICIES
from parrotsim.policies.cluster.least_queue import LeastQueueConfig
from parrotsim.policies.engine import ENGINE_POLICIES
from parrotsim.policies.engine.vllm import VllmConfig
from parrotsim.sim.model.client import LangChainClientConfig
from parrotsim.sim.model.network import NetworkConfig
from parrotsim.sim.model.parrot_client import ParrotClientConfig
from parrotsim.workloads.catalog import WORKLOADS


def _union(registry: dict, tag: str):
    members = tuple(registry.values())
    if len(members) == 1:
        return members[0]
    return Annotated[Union[members], Field(discriminator=tag)]  # noqa: UP007


WorkloadSpec = _union(WORKLOADS, "kind")
EnginePolicySpec = _union(ENGINE_POLICIES, "policy")
ClusterPolicySpec = _union(CLUSTER_POLICIES, "policy")


class ClusterConfig(StrictConfig):
    """The serving cluster: ``engines`` identical engines, one per GPU.

    ``kernel`` is the decode attention kernel whose cost curve batches of forked sequences use;
    ``prefix_cache`` lets engines keep shared prefix contexts that calls fork (Parrot's
    ``cache_prefix``, or vLLM-style shared prefix blocks with the paged kernel). With
    ``prefix_lifetime: users`` a prefix is freed ``prefix_ttl_s`` seconds after its last user
    finished; with ``app`` it is kept until every app that used it has ended (the Parrot
    artifact kept prefix contexts in the process's memory space until the process ended).
    """

    engines: int = Field(default=1, ge=1)
    profile: str = "a100-80gb_llama-13b"
    engine: EnginePolicySpec = VllmConfig()  # type: ignore[valid-type]
    kernel: Literal["paged", "shared_prefix"] = "paged"
    scheduler: ClusterPolicySpec = LeastQueueConfig()  # type: ignore[valid-type]
    block_size: int = Field(default=16, gt=0)
    prefix_cache: bool = False
    prefix_ttl_s: float = Field(default=0.0, ge=0)
    prefix_lifetime: Literal["users", "app"] = "users"
    fast_forward: bool = True


class RunConfig(StrictConfig):
    """Everything one run needs; equal configs (and seeds) give identical results."""

    seed: int = Field(default=0, ge=0)
    workload: WorkloadSpec  # type: ignore[valid-type]
    cluster: ClusterConfig = ClusterConfig()
    client: Annotated[Union[LangChainClientConfig, ParrotClientConfig],  # noqa: UP007
                      Field(discriminator="kind")] = LangChainClientConfig()
    network: NetworkConfig = NetworkConfig()
