"""The typed config of one simulation run.

A :class:`RunConfig` names a workload (tagged by ``kind``), a cluster (number of engines, cost
profile, engine batching policy tagged by ``policy``, decode kernel, cluster scheduler tagged by
``policy``), the client and the network. Each pluggable part's config class is registered next
to its code; the unions below are built from those registries, so a new policy or workload is
available in YAML as soon as its module is imported by its package's catalog.

Fields that are each valid but meaningless together are rejected (:func:`combination_errors`),
each error located at the field that asks for what cannot happen, so that the experiment loader
reports it as ``FILE:LINE:COL: field.path: message``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import Field, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from parrotsim.core.config import StrictConfig
from parrotsim.policies.cluster import CLUSTER_POLICIES
from parrotsim.policies.cluster.least_queue import LeastQueueConfig
from parrotsim.policies.cluster.parrot import ParrotSchedulerConfig
from parrotsim.policies.engine import ENGINE_POLICIES
from parrotsim.policies.engine.hf import HfConfig
from parrotsim.policies.engine.parrot import ParrotEngineConfig
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

    ``kernel`` is the decode attention kernel whose cost curve batches of forked sequences use:
    ``paged`` (every sequence reads its whole context), ``shared_prefix`` (the project's
    kernel: each group's prefix read once, any number of groups per batch) or ``parrot_2023``
    (the Parrot artifact's kernel: one prefix per batch, a batch whose decodes do not all share
    one falls back to the paged kernel; its suffix pass is vLLM 0.1.4's, so it needs
    ``paged_kernel: vllm_0_1_4``). ``paged_kernel`` is the paged decode kernel of vLLM and
    Parrot engines: ``split_kv`` (today's, the profile's curves) or ``vllm_0_1_4`` (the
    paper's vLLM, without KV split, which Parrot's 2023 engine also ran); the hf engine has
    none. Both era kernels are costed from the profile's curves
    (:mod:`parrotsim.sim.model.era_kernels`).
    ``one_prefix_per_batch`` serves forked groups with the ``shared_prefix`` kernel's cost only
    in batches whose forked decodes all share one prefix, as the artifact's kernel did (it took
    the prefix of the batch's first job, ``jobs[0].context.parent_context``), the others with
    the paged kernel (the artifact's code served every decode that prefix instead; why the
    model keeps the fallback: :mod:`parrotsim.sim.model.era_kernels`); ``parrot_2023`` implies
    it.
    ``prefix_cache`` lets engines keep shared prefix contexts that calls fork (Parrot's
    ``cache_prefix``, or vLLM-style shared prefix blocks with the paged kernel). With
    ``prefix_lifetime: users`` a prefix is freed ``prefix_ttl_s`` seconds after its last user
    finished; with ``app`` it is kept until every app that used it has ended (the Parrot
    artifact kept prefix contexts in the process's memory space until the process ended).
    """

    engines: int = Field(default=1, ge=1)
    profile: str = "a100-80gb_llama-13b"
    engine: EnginePolicySpec = VllmConfig()  # type: ignore[valid-type]
    kernel: Literal["paged", "shared_prefix", "parrot_2023"] = "paged"
    paged_kernel: Literal["split_kv", "vllm_0_1_4"] = "split_kv"
    one_prefix_per_batch: bool = False
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

    @model_validator(mode="after")
    def _meaningful(self) -> RunConfig:
        errors = combination_errors(self)
        if errors:
            raise ValidationError.from_exception_data("RunConfig", [
                InitErrorDetails(type=PydanticCustomError("combination", "{message}",
                                                          {"message": message}),
                                 loc=loc, input=value)
                for loc, message, value in errors])
        return self


def era_kernel_fields(cluster: ClusterConfig) -> dict[str, Any]:
    """The ``cluster`` fields that run ``cluster`` on the artifact's kernels: vLLM 0.1.4's
    no-split paged kernel everywhere, and Parrot's 2023 kernel (one prefix per batch by
    itself) where it has the project's shared-prefix kernel."""
    fields: dict[str, Any] = {"paged_kernel": "vllm_0_1_4"}
    if cluster.kernel == "shared_prefix":
        fields.update(kernel="parrot_2023", one_prefix_per_batch=False)
    return fields


#: Parrot scheduler knobs that act only through the Parrot client's DAG annotations (deduced
#: objectives and task groups) and only with ``dag_aware``; artifact mode ignores them
_DEDUCTION_KNOBS = ("deduction", "task_groups", "latency_max_requests", "latency_max_tokens")


def combination_errors(cfg: RunConfig) -> list[tuple[tuple[str, ...], str, Any]]:
    """``(field path, message, value)`` for each combination of fields that cannot mean what it
    says (empty for a meaningful config). The Parrot scheduler's knobs are checked only when
    changed from their defaults (so a config dumped and validated again is judged the same)."""
    cluster, client, out = cfg.cluster, cfg.client, []
    if cluster.kernel != "paged" and not cluster.prefix_cache:
        out.append((("cluster", "kernel"), f"the {cluster.kernel} kernel needs "
                    "cluster.prefix_cache: true; without cached prefixes no call forks one and "
                    "every batch is costed with the paged kernel", cluster.kernel))
    if cluster.kernel == "parrot_2023" and cluster.paged_kernel != "vllm_0_1_4":
        out.append((("cluster", "kernel"), "parrot_2023 ran its suffix pass with vLLM 0.1.4's "
                    "no-split kernel; set cluster.paged_kernel: vllm_0_1_4 (or use the "
                    "project's shared_prefix kernel)", cluster.kernel))
    if cluster.one_prefix_per_batch and cluster.kernel != "shared_prefix":
        out.append((("cluster", "one_prefix_per_batch"), "limits the shared_prefix kernel to "
                    f"one prefix per batch; the {cluster.kernel} kernel "
                    + ("has that limit already" if cluster.kernel == "parrot_2023"
                       else "shares no prefix"), cluster.one_prefix_per_batch))
    if isinstance(cluster.engine, HfConfig) and cluster.paged_kernel != "split_kv":
        out.append((("cluster", "paged_kernel"), "the hf engine (FastChat's HuggingFace "
                    "worker) runs no paged kernel; its cost is fitted to the paper's HF facts",
                    cluster.paged_kernel))
    if cluster.prefix_ttl_s > 0 and not cluster.prefix_cache:
        out.append((("cluster", "prefix_ttl_s"), "keeps cached prefixes alive, but "
                    "cluster.prefix_cache is false", cluster.prefix_ttl_s))
    if isinstance(cluster.engine, HfConfig) and cluster.prefix_cache:
        out.append((("cluster", "prefix_cache"), "the hf engine (FastChat's HuggingFace worker) "
                    "fills every prompt whole and cannot fork a cached prefix; use the vllm or "
                    "parrot engine", cluster.prefix_cache))
    if client.kind == "parrot" and client.readiness == "dispatched" \
            and not isinstance(cluster.engine, ParrotEngineConfig):
        out.append((("client", "readiness"), "'dispatched' sends a call to its engine before its "
                    "producers finish, and only the parrot engine makes it wait for its inputs "
                    f"(the {cluster.engine.policy} engine would run it at once); use readiness: "
                    "complete or cluster.engine.policy: parrot", client.readiness))
    sched = cluster.scheduler
    if isinstance(sched, ParrotSchedulerConfig):
        for knob in _DEDUCTION_KNOBS:
            value = getattr(sched, knob)
            if value == type(sched).model_fields[knob].default:
                continue
            if sched.mode == "artifact":
                why = ("has no effect in mode artifact (the artifact's dispatcher had no "
                       "objectives, task groups or latency bounds)")
            elif client.kind != "parrot":
                why = ("has no effect without the objectives and task groups that only the "
                       "Parrot client deduces (client.kind: parrot)")
            elif not sched.dag_aware:
                why = ("has no effect without dag_aware: true (objectives, task groups and "
                       "latency bounds steer only the DAG-aware placement)")
            else:
                continue
            out.append((("cluster", "scheduler", knob), why, value))
        if sched.ctx_aware and client.kind != "parrot" and not cluster.prefix_cache:
            out.append((("cluster", "scheduler", "ctx_aware"), "has no effect: it groups and "
                        "places calls by their shared prefix, which the LangChain client reports "
                        "only with cluster.prefix_cache: true", sched.ctx_aware))
    return out
