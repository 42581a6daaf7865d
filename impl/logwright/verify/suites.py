"""The suites ``logwright verify`` runs, in order. Each returns table rows."""

from __future__ import annotations

from logwright.verify.core import Suite
from logwright.verify.formal import formal_suite
from logwright.verify.storage_campaign import storage_suite

SUITES: list[tuple[str, Suite]] = [
    ("storage crash campaign", storage_suite),
    ("formal models", formal_suite),
]
