"""Imports every workload module so that each registers its config (see ``registry``)."""

from parrotsim.workloads import (  # noqa: F401
    bing,
    chain_background,
    gpts,
    metagpt,
    mixed,
    sharegpt,
    summarization,
    trace_workload,
)
from parrotsim.workloads.registry import WORKLOADS

__all__ = ["WORKLOADS"]
