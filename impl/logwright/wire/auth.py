"""SaslHandshake, SaslAuthenticate and the ACL APIs (DescribeAcls, CreateAcls, DeleteAcls).

Invariants upheld: a failed authentication is answered SASL_AUTHENTICATION_FAILED and the
connection closed, with a message that names no secret; ACLs change only through
``Cluster.add_acls``/``remove_acls`` (persisted before they apply), and only for a principal the
cluster's ACLs allow ALTER on the cluster (DESCRIBE to read them), as Kafka requires. ACLs
logwright's authorizer cannot enforce (prefixed patterns, hosts other than ``*``, resource types
other than TOPIC and CLUSTER, operations it does not check) are refused per ACL, never stored
to be silently ignored.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from logwright.broker.authorizer import (
    CLUSTER_NAME,
    AclBinding,
    Operation,
    Permission,
    ResourceType,
)
from logwright.errors import Errors, LogwrightError
from logwright.wire.codec import build, error_code, nested
from logwright.wire.handlers import NO_DELAY, response_of
from logwright.wire.security import MECHANISMS, SecurityError

if TYPE_CHECKING:
    from logwright.wire.exchange import Exchange

__all__ = ["AUTH_HANDLERS"]

UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34
SASL_AUTHENTICATION_FAILED = 58

# Kafka's codes: ResourceType, PatternType, AclOperation, AclPermissionType.
_RESOURCE = {ResourceType.TOPIC: 2, ResourceType.CLUSTER: 4}
_RESOURCE_ANY = 1
_PATTERN_ANY, _PATTERN_MATCH, _PATTERN_LITERAL = 1, 2, 3
_OPERATION = {Operation.ALL: 2, Operation.READ: 3, Operation.WRITE: 4, Operation.CREATE: 5,
              Operation.DELETE: 6, Operation.ALTER: 7, Operation.DESCRIBE: 8,
              Operation.CLUSTER_ACTION: 9}
_OPERATION_ANY = 1
_PERMISSION = {Permission.DENY: 2, Permission.ALLOW: 3}
_PERMISSION_ANY = 1


# ---- SASL ----------------------------------------------------------------------------------


def _sasl_handshake(ex: Exchange) -> None:
    cls = response_of(ex)
    sasl = ex.sasl
    if sasl is None or ex.authenticated_as is not None:
        # Not a SASL listener, or already authenticated: Kafka answers ILLEGAL_SASL_STATE.
        ex.respond(build(cls, error_code=error_code(ILLEGAL_SASL_STATE), mechanisms=()),
                   close_after=sasl is not None)
        return
    mechanism = ex.request.body.mechanism
    if not sasl.choose(mechanism):
        ex.respond(build(cls, error_code=error_code(UNSUPPORTED_SASL_MECHANISM),
                         mechanisms=MECHANISMS), close_after=True)
        return
    if ex.request.api_version == 0:
        # Version 0: the tokens that follow travel as bare size-prefixed frames, without
        # Kafka's request header (clients from before KIP-152).
        ex.tokens_follow_unframed()
    ex.respond(build(cls, error_code=error_code(0), mechanisms=MECHANISMS))


def _sasl_authenticate(ex: Exchange) -> None:
    cls = response_of(ex)
    sasl = ex.sasl
    if sasl is None or ex.authenticated_as is not None or sasl.mechanism is None:
        ex.respond(build(cls, error_code=error_code(ILLEGAL_SASL_STATE),
                         error_message="SaslAuthenticate is not expected now", auth_bytes=b"",
                         session_lifetime=datetime.timedelta(0)), close_after=True)
        return
    try:
        answer, done = sasl.step(bytes(ex.request.body.auth_bytes))
    except SecurityError as exc:
        ex.refuse(f"SASL/{sasl.mechanism} authentication failed")
        ex.respond(build(cls, error_code=error_code(SASL_AUTHENTICATION_FAILED),
                         error_message=str(exc), auth_bytes=b"",
                         session_lifetime=datetime.timedelta(0)), close_after=True)
        return
    if done:
        assert sasl.principal is not None
        ex.authenticated(sasl.principal)
    ex.respond(build(cls, error_code=error_code(0), error_message=None, auth_bytes=answer,
                     session_lifetime=datetime.timedelta(0)))


# ---- ACLs ----------------------------------------------------------------------------------


def _binding(resource_type: int, name: str, pattern: int, principal: str, host: str,
             operation: int, permission: int) -> AclBinding:
    """An ACL from its wire fields; LogwrightError naming what logwright cannot enforce."""
    types = {code: t for t, code in _RESOURCE.items()}
    operations = {code: o for o, code in _OPERATION.items()}
    permissions = {code: p for p, code in _PERMISSION.items()}
    if resource_type not in types:
        raise LogwrightError(f"resource type {resource_type} is not supported "
                             f"(TOPIC and CLUSTER are)")
    if pattern != _PATTERN_LITERAL:
        raise LogwrightError("only LITERAL resource patterns are supported")
    if host != "*":
        raise LogwrightError(f"host {host!r}: only '*' is supported")
    if operation not in operations:
        raise LogwrightError(f"operation {operation} is not supported")
    if permission not in permissions:
        raise LogwrightError(f"permission type {permission} is not ALLOW or DENY")
    kind = types[resource_type]
    if kind is ResourceType.CLUSTER and name != CLUSTER_NAME:
        raise LogwrightError(f"the CLUSTER resource is named {CLUSTER_NAME!r}, not {name!r}")
    try:
        return AclBinding(principal, kind, name, operations[operation], permissions[permission])
    except ValueError as exc:
        raise LogwrightError(str(exc)) from None


def _matcher(f: Any) -> Callable[[AclBinding], bool]:
    """Kafka's ACL filter: each field either ANY/None or equal (MATCH and ANY patterns match
    LITERAL ACLs, the only kind logwright keeps)."""
    def matches(a: AclBinding) -> bool:
        return ((f.resource_type_filter == _RESOURCE_ANY
                 or f.resource_type_filter == _RESOURCE[a.resource_type])
                and (f.resource_name_filter is None or f.resource_name_filter == a.resource_name)
                and f.pattern_type_filter in (_PATTERN_ANY, _PATTERN_MATCH, _PATTERN_LITERAL)
                and (f.principal_filter is None or f.principal_filter == a.principal)
                and (f.host_filter is None or f.host_filter == "*")
                and (f.operation == _OPERATION_ANY or f.operation == _OPERATION[a.operation])
                and (f.permission_type == _PERMISSION_ANY
                     or f.permission_type == _PERMISSION[a.permission]))
    return matches


def _describe_acls(ex: Exchange) -> None:
    cls = response_of(ex)
    if not ex.allowed_cluster(Operation.DESCRIBE):
        ex.respond(build(cls, throttle_time=NO_DELAY,
                         error_code=error_code(Errors.CLUSTER_AUTHORIZATION_FAILED),
                         error_message="DESCRIBE on the cluster is needed", resources=()))
        return
    match = _matcher(ex.request.body)
    resource_cls = nested(cls, "DescribeAclsResource")
    acl_cls = nested(cls, "AclDescription")
    by_resource: dict[tuple[ResourceType, str], list[Any]] = {}
    for a in ex.cluster.authorizer.acls:
        if match(a):
            by_resource.setdefault((a.resource_type, a.resource_name), []).append(build(
                acl_cls, principal=a.principal, host="*", operation=_OPERATION[a.operation],
                permission_type=_PERMISSION[a.permission]))
    ex.respond(build(cls, throttle_time=NO_DELAY, error_code=error_code(0), error_message=None,
                     resources=tuple(build(resource_cls, resource_type=_RESOURCE[kind],
                                           resource_name=name, pattern_type=_PATTERN_LITERAL,
                                           acls=tuple(acls))
                                     for (kind, name), acls in by_resource.items())))


def _create_acls(ex: Exchange) -> None:
    cls = response_of(ex)
    result_cls = nested(cls, "AclCreationResult")
    allowed = ex.allowed_cluster(Operation.ALTER)
    results: list[tuple[int, str | None]] = []
    wanted: list[AclBinding] = []
    for c in ex.request.body.creations:
        if not allowed:
            results.append((int(Errors.CLUSTER_AUTHORIZATION_FAILED),
                            "ALTER on the cluster is needed"))
            continue
        try:
            wanted.append(_binding(c.resource_type, c.resource_name,
                                   getattr(c, "resource_pattern_type", _PATTERN_LITERAL),
                                   c.principal, c.host, c.operation, c.permission_type))
            results.append((0, None))
        except LogwrightError as exc:
            results.append((int(Errors.INVALID_REQUEST), str(exc)))
    if wanted:
        try:
            ex.cluster.add_acls(wanted)
        except (LogwrightError, OSError) as exc:
            results = [(int(Errors.INVALID_REQUEST) if code == 0 else code,
                        f"not stored: {exc}" if code == 0 else text) for code, text in results]
    ex.respond(build(cls, throttle_time=NO_DELAY, results=tuple(
        build(result_cls, error_code=error_code(code), error_message=text)
        for code, text in results)))


def _delete_acls(ex: Exchange) -> None:
    cls = response_of(ex)
    result_cls = nested(cls, "DeleteAclsFilterResult")
    matching_cls = nested(cls, "DeleteAclsMatchingAcl")
    filters = ex.request.body.filters
    if not ex.allowed_cluster(Operation.ALTER):
        ex.respond(build(cls, throttle_time=NO_DELAY, filter_results=tuple(
            build(result_cls, error_code=error_code(Errors.CLUSTER_AUTHORIZATION_FAILED),
                  error_message="ALTER on the cluster is needed", matching_acls=())
            for _ in filters)))
        return
    current = ex.cluster.authorizer.acls
    matched = [[a for a in current if _matcher(f)(a)] for f in filters]
    ex.cluster.remove_acls({a for group in matched for a in group})
    ex.respond(build(cls, throttle_time=NO_DELAY, filter_results=tuple(
        build(result_cls, error_code=error_code(0), error_message=None, matching_acls=tuple(
            build(matching_cls, error_code=error_code(0), error_message=None,
                  resource_type=_RESOURCE[a.resource_type], resource_name=a.resource_name,
                  pattern_type=_PATTERN_LITERAL, principal=a.principal, host="*",
                  operation=_OPERATION[a.operation], permission_type=_PERMISSION[a.permission])
            for a in group)) for group in matched)))


AUTH_HANDLERS: dict[int, Callable[[Exchange], None]] = {
    17: _sasl_handshake,
    29: _describe_acls,
    30: _create_acls,
    31: _delete_acls,
    36: _sasl_authenticate,
}
