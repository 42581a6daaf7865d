"""ACLs on disk: a real cluster's ``acls.json``.

Invariant upheld: the file is replaced atomically (``write_file_atomic``: a crash leaves the old
or the new list, never half of one) and written before the new ACLs apply, so an ACL a client
was told is in force survives a restart. A file that cannot be read or parsed is an error
naming it, never an empty list: starting allow-all because an ACL file was damaged would open
the cluster to everyone.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from logwright.broker.authorizer import AclBinding, Operation, Permission, ResourceType
from logwright.errors import LogwrightError
from logwright.world.fs import FileSystem, write_file_atomic

__all__ = ["ACL_FILE", "AclFileError", "load_acls", "save_acls"]

ACL_FILE = "acls.json"
_VERSION = 1


class AclFileError(LogwrightError):
    """``acls.json`` cannot be read or does not hold a list of ACLs."""


def save_acls(fs: FileSystem, path: str, acls: Sequence[AclBinding]) -> None:
    """Replace the file at ``path`` with ``acls``."""
    doc = {"version": _VERSION, "acls": [
        {"principal": a.principal, "resource_type": a.resource_type.value,
         "resource_name": a.resource_name, "operation": a.operation.value,
         "permission": a.permission.value} for a in acls]}
    write_file_atomic(fs, path, json.dumps(doc, indent=1, sort_keys=True).encode() + b"\n")


def load_acls(fs: FileSystem, path: str | None) -> list[AclBinding]:
    """The ACLs in ``path`` (none if ``path`` is None or the file does not exist)."""
    if path is None or not fs.exists(path):
        return []
    try:
        doc = json.loads(fs.read_file(path))
        if not isinstance(doc, dict) or doc.get("version") != _VERSION:
            raise ValueError(f"expected an object with \"version\": {_VERSION}")
        return [AclBinding(e["principal"], ResourceType(e["resource_type"]), e["resource_name"],
                           Operation(e["operation"]), Permission(e["permission"]))
                for e in doc["acls"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise AclFileError(f"{path}: not a readable ACL file ({exc}); fix or remove it") from None
