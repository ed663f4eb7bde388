"""Which page types count as suitable: a small, configurable policy.

The classifiers name a page type; the policy alone turns that into suitable or not, so a
deployment that also wants forum threads changes one set, not the models.
"""

from __future__ import annotations

from dataclasses import dataclass

PAGE_TYPES: tuple[str, ...] = (
    "article",
    "documentation",
    "forum",
    "product",
    "collection",
    "listing",
    "service",
    "login",
    "error",
    "other",
)

DEFAULT_SUITABLE_TYPES: frozenset[str] = frozenset({"article", "documentation"})


@dataclass(frozen=True, slots=True)
class SuitabilityPolicy:
    """The page types whose pages are kept as suitable content."""

    suitable_types: frozenset[str] = DEFAULT_SUITABLE_TYPES

    def __post_init__(self) -> None:
        unknown = set(self.suitable_types) - set(PAGE_TYPES)
        if unknown:
            raise ValueError(f"unknown page types in policy: {sorted(unknown)}")

    def is_suitable(self, page_type: str) -> bool:
        return page_type in self.suitable_types


DEFAULT_POLICY = SuitabilityPolicy()
