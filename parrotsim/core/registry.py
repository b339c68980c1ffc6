"""One registry for every pluggable kind: workloads (tagged by ``kind``), engine policies and
cluster policies (tagged by ``policy``).

A registry maps a tag to a config class; the experiment schema builds a tagged union over it,
so a YAML file picks a class by its tag and gets that class's fields validated. A user's own
class joins with the registry's decorator (``@register_cluster_policy`` and friends).
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel

T = TypeVar("T", bound=type[BaseModel])


class Registry(dict[str, type[BaseModel]]):
    """Config classes by tag; ``tag_field`` names the literal field that holds the tag."""

    def __init__(self, what: str, tag_field: str) -> None:
        super().__init__()
        self.what = what
        self.tag_field = tag_field

    def register(self, cls: T) -> T:
        """Class decorator: make ``cls`` available under its tag (the field's default)."""
        field = cls.model_fields.get(self.tag_field)
        tag = field.default if field is not None else None
        if not isinstance(tag, str) or tag in self:
            raise ValueError(f"{self.what} {tag!r} missing or registered twice")
        self[tag] = cls
        return cls
