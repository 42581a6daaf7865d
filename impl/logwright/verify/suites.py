"""The suites ``logwright verify`` runs, in order. Each returns table rows."""

from __future__ import annotations

from logwright.verify.core import Suite

SUITES: list[tuple[str, Suite]] = []
