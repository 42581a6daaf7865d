"""The ACL authorizer every request handler consults.

Invariant upheld: a request is served only if the authorizer allows its principal the operation
on the resource, with Kafka's rules: with no ACL configured at all everything is allowed (the
embedded cluster's default); otherwise super users are allowed, a matching DENY wins over any
matching ALLOW, and a principal with no matching ALLOW is denied (``allow.everyone.if.no.acl.found``
is false, as in Kafka). READ, WRITE, DELETE and ALTER each imply DESCRIBE; ALL matches every
operation; the principal ``User:*`` and the resource name ``*`` are wildcards.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

CLUSTER_NAME = "kafka-cluster"
"""The one CLUSTER resource's name, as Kafka names it."""

WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"


class ResourceType(enum.Enum):
    """What an ACL protects."""

    TOPIC = "TOPIC"
    CLUSTER = "CLUSTER"


# Read per message: globals, not enum lookups (``logwright.errors.NO_ERROR`` says why).
_TOPIC: Final = ResourceType.TOPIC
_CLUSTER: Final = ResourceType.CLUSTER


class Operation(enum.Enum):
    """What a principal wants to do (Kafka's AclOperation names)."""

    ALL = "ALL"
    READ = "READ"
    WRITE = "WRITE"
    CREATE = "CREATE"
    DELETE = "DELETE"
    ALTER = "ALTER"
    DESCRIBE = "DESCRIBE"
    CLUSTER_ACTION = "CLUSTER_ACTION"


class Permission(enum.Enum):
    """ALLOW or DENY; a matching DENY always wins."""

    ALLOW = "ALLOW"
    DENY = "DENY"


_IMPLIES_DESCRIBE = frozenset({Operation.READ, Operation.WRITE, Operation.DELETE,
                               Operation.ALTER})


@dataclass(frozen=True)
class AclBinding:
    """One ACL: ``permission`` for ``principal`` to do ``operation`` on a resource."""

    principal: str  # "User:alice", or "User:*" for everyone
    resource_type: ResourceType
    resource_name: str  # a topic name, CLUSTER_NAME, or "*"
    operation: Operation
    permission: Permission = Permission.ALLOW

    def __post_init__(self) -> None:
        if ":" not in self.principal:
            raise ValueError(f"principal {self.principal!r} must look like 'User:<name>'")
        if not self.resource_name:
            raise ValueError("an ACL needs a resource name (or '*')")

    def matches(self, principal: str, operation: Operation, resource_type: ResourceType,
                resource_name: str, permission: Permission) -> bool:
        """Whether this binding applies to the request, for the given permission."""
        if self.permission is not permission or self.resource_type is not resource_type:
            return False
        if self.principal not in (principal, WILDCARD_PRINCIPAL):
            return False
        if self.resource_name not in (resource_name, WILDCARD):
            return False
        if self.operation in (operation, Operation.ALL):
            return True
        # A DENY of DESCRIBE does not deny READ; an ALLOW of READ does allow DESCRIBE.
        return (permission is Permission.ALLOW and operation is Operation.DESCRIBE
                and self.operation in _IMPLIES_DESCRIBE)


class AclAuthorizer:
    """ACLs in memory; allow-all until the first ACL is added."""

    def __init__(self, acls: Iterable[AclBinding] = (), super_users: Iterable[str] = ()) -> None:
        self._acls: list[AclBinding] = []
        self.super_users = frozenset(super_users)
        for acl in acls:
            self.add_acl(acl)

    @property
    def acls(self) -> tuple[AclBinding, ...]:
        """Every ACL, in the order added."""
        return tuple(self._acls)

    def add_acl(self, acl: AclBinding) -> None:
        """Add ``acl`` (idempotent)."""
        if acl not in self._acls:
            self._acls.append(acl)

    def remove_acl(self, acl: AclBinding) -> bool:
        """Remove ``acl``; False if it was not there."""
        if acl in self._acls:
            self._acls.remove(acl)
            return True
        return False

    def authorize(self, principal: str, operation: Operation, resource_type: ResourceType,
                  resource_name: str) -> bool:
        """Whether ``principal`` may do ``operation`` on the named resource."""
        if not self._acls or principal in self.super_users:
            return True
        if any(acl.matches(principal, operation, resource_type, resource_name, Permission.DENY)
               for acl in self._acls):
            return False
        return any(acl.matches(principal, operation, resource_type, resource_name,
                               Permission.ALLOW) for acl in self._acls)

    def authorize_topic(self, principal: str, operation: Operation, topic: str) -> bool:
        """``authorize`` on the TOPIC resource ``topic``."""
        return self.authorize(principal, operation, _TOPIC, topic)

    def authorize_cluster(self, principal: str, operation: Operation) -> bool:
        """``authorize`` on the CLUSTER resource."""
        return self.authorize(principal, operation, _CLUSTER, CLUSTER_NAME)
