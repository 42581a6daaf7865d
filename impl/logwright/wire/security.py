"""Listeners' security: TLS, SASL/PLAIN, SASL/SCRAM-SHA-256, and the principal of a session.

Invariants upheld:

* On a SASL listener a connection may send only ApiVersions, SaslHandshake and SaslAuthenticate
  until it has authenticated; anything else closes it, as Kafka does. Its principal is then
  ``User:<name>``; on PLAINTEXT and SSL without client certificates it is ``User:ANONYMOUS``, and
  on SSL with a client certificate it is ``User:`` followed by the certificate's subject.
* Passwords are compared in constant time and kept only as SCRAM's salted keys and a salted
  PLAIN hash; neither a password nor an auth token appears in a log line, a repr or an error.
* No client ever gets the cluster's internal principal: a user of that name is refused when
  the users are loaded.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import scramp

from logwright.broker.config import ANONYMOUS, INTERNAL_PRINCIPAL
from logwright.errors import LogwrightError

__all__ = [
    "MECHANISMS",
    "Protocol",
    "SaslExchange",
    "SecurityConfig",
    "SecurityError",
    "Users",
    "server_ssl_context",
]

MECHANISMS = ("PLAIN", "SCRAM-SHA-256")
SCRAM_ITERATIONS = 4096  # Kafka's default for new SCRAM credentials


class SecurityError(LogwrightError):
    """A security setting that cannot be used (a bad users file, a certificate that does not
    load, a listener protocol without what it needs)."""


class Protocol(enum.Enum):
    """Kafka's security protocols for a listener."""

    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"

    @property
    def tls(self) -> bool:
        """Whether the listener speaks TLS."""
        return self in (Protocol.SSL, Protocol.SASL_SSL)

    @property
    def sasl(self) -> bool:
        """Whether a connection must authenticate with SASL first."""
        return self in (Protocol.SASL_PLAINTEXT, Protocol.SASL_SSL)


@dataclass(frozen=True)
class _Credential:
    plain_salt: bytes
    plain_hash: bytes
    scram: tuple[bytes, bytes, bytes, int]  # salt, stored key, server key, iterations

    def __repr__(self) -> str:
        return "_Credential(<secret>)"


class Users:
    """SASL users: name -> credentials, derived from passwords that are not kept."""

    def __init__(self, passwords: Mapping[str, str] | None = None) -> None:
        self._credentials: dict[str, _Credential] = {}
        for name, password in (passwords or {}).items():
            self.add(name, password)

    def add(self, name: str, password: str) -> None:
        """Add (or replace) user ``name``."""
        if not name or any(c in name for c in ",=\0") or f"User:{name}" == INTERNAL_PRINCIPAL:
            raise SecurityError(f"user name {name!r} is not allowed")
        if not password:
            raise SecurityError(f"user {name!r} has an empty password")
        salt = os.urandom(16)
        self._credentials[name] = _Credential(
            salt, hashlib.pbkdf2_hmac("sha256", password.encode(), salt, SCRAM_ITERATIONS),
            scramp.ScramMechanism("SCRAM-SHA-256").make_auth_info(
                password, iteration_count=SCRAM_ITERATIONS))

    @classmethod
    def from_file(cls, path: str) -> Users:
        """Users from a file of ``name=password`` lines (``#`` comments, blank lines skipped).
        The file should be readable by the server's user only."""
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except OSError as exc:
            raise SecurityError(f"{path}: cannot read the users file: "
                                f"{exc.strerror or exc}") from None
        passwords: dict[str, str] = {}
        for number, line in enumerate(lines, start=1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            name, sep, password = text.partition("=")
            if not sep or not name.strip():
                raise SecurityError(f"{path}:{number}: expected name=password")
            if name.strip() in passwords:
                raise SecurityError(f"{path}:{number}: user {name.strip()!r} given twice")
            passwords[name.strip()] = password
        try:
            return cls(passwords)
        except SecurityError as exc:
            raise SecurityError(f"{path}: {exc}") from None

    def __len__(self) -> int:
        return len(self._credentials)

    def __repr__(self) -> str:
        return f"Users({sorted(self._credentials)})"

    def check_plain(self, name: str, password: str) -> bool:
        """Whether ``password`` is user ``name``'s (constant time in the password)."""
        cred = self._credentials.get(name)
        if cred is None:
            hashlib.pbkdf2_hmac("sha256", password.encode(), b"0" * 16, SCRAM_ITERATIONS)
            return False
        given = hashlib.pbkdf2_hmac("sha256", password.encode(), cred.plain_salt,
                                    SCRAM_ITERATIONS)
        return hmac.compare_digest(given, cred.plain_hash)

    def scram_auth_info(self, name: str) -> tuple[bytes, bytes, bytes, int]:
        """SCRAM's stored credentials of ``name``; KeyError if there is no such user."""
        return self._credentials[name].scram


@dataclass(frozen=True)
class SecurityConfig:
    """What secured listeners need: SASL users, a TLS context, extra super users."""

    users: Users = field(default_factory=Users)
    ssl_context: ssl.SSLContext | None = None
    super_users: tuple[str, ...] = ()


def server_ssl_context(certfile: str, keyfile: str | None = None, cafile: str | None = None,
                       client_auth: bool = False) -> ssl.SSLContext:
    """A TLS server context (TLS 1.2 or later) from PEM files; with ``client_auth`` clients
    must present a certificate signed by ``cafile`` (Kafka's ``ssl.client.auth=required``)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(certfile, keyfile)
        if cafile is not None:
            context.load_verify_locations(cafile)
    except (OSError, ssl.SSLError) as exc:
        raise SecurityError(f"cannot load the TLS certificate or key: {exc}") from None
    if client_auth:
        if cafile is None:
            raise SecurityError("client authentication needs a CA file to check clients "
                                "against")
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def certificate_principal(sock: Any) -> str:
    """The principal of a TLS peer: ``User:`` and its certificate's subject (RFC 2253 order,
    as Kafka's default principal builder writes it), or ANONYMOUS without a certificate."""
    try:
        cert = sock.getpeercert()
    except (ValueError, OSError):
        return ANONYMOUS
    if not cert:
        return ANONYMOUS
    parts = [f"{key}={value}" for rdn in reversed(cert.get("subject", ()))
             for key, value in rdn]
    short = {"commonName": "CN", "organizationName": "O", "organizationalUnitName": "OU",
             "countryName": "C", "stateOrProvinceName": "ST", "localityName": "L"}
    for long, abbreviation in short.items():
        parts = [p.replace(f"{long}=", f"{abbreviation}=", 1) if p.startswith(f"{long}=")
                 else p for p in parts]
    return "User:" + ",".join(parts) if parts else ANONYMOUS


class SaslExchange:
    """One connection's SASL state: the mechanism chosen by SaslHandshake, then the tokens of
    SaslAuthenticate, until it authenticates (``principal``) or fails."""

    def __init__(self, users: Users) -> None:
        self.users = users
        self.mechanism: str | None = None
        self.principal: str | None = None
        self._scram: Any = None
        self._scram_user: str | None = None

    def __repr__(self) -> str:
        return f"SaslExchange(mechanism={self.mechanism!r}, principal={self.principal!r})"

    def choose(self, mechanism: str) -> bool:
        """SaslHandshake: whether ``mechanism`` is enabled (then it is this session's)."""
        if mechanism not in MECHANISMS or self.mechanism is not None:
            return False
        self.mechanism = mechanism
        return True

    def step(self, token: bytes) -> tuple[bytes, bool]:
        """One SaslAuthenticate token in; the answer token and whether the exchange is done.
        Raises SecurityError with a message safe to send back (no secret in it)."""
        if self.mechanism == "PLAIN":
            return self._plain(token), True
        if self.mechanism == "SCRAM-SHA-256":
            return self._scram_step(token)
        raise SecurityError("SaslAuthenticate before a successful SaslHandshake")

    def _plain(self, token: bytes) -> bytes:
        try:
            authzid, authcid, password = token.decode("utf-8").split("\0")
        except (UnicodeDecodeError, ValueError):
            raise SecurityError("malformed SASL/PLAIN token") from None
        if authzid and authzid != authcid:
            raise SecurityError("SASL/PLAIN: an authorization id other than the user's "
                                "is not allowed")
        if not self.users.check_plain(authcid, password):
            raise SecurityError("Authentication failed: invalid username or password")
        self.principal = f"User:{authcid}"
        return b""

    def _scram_step(self, token: bytes) -> tuple[bytes, bool]:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise SecurityError("malformed SCRAM message") from None
        try:
            if self._scram is None:
                def auth_info(name: str) -> tuple[bytes, bytes, bytes, int]:
                    self._scram_user = name
                    try:
                        return self.users.scram_auth_info(name)
                    except KeyError:
                        raise scramp.ScramException("unknown user") from None

                self._scram = scramp.ScramMechanism("SCRAM-SHA-256").make_server(auth_info)
                self._scram.set_client_first(text)
                return self._scram.get_server_first().encode(), False
            self._scram.set_client_final(text)
            final = self._scram.get_server_final()
        except scramp.ScramException:
            raise SecurityError("Authentication failed during authentication due to invalid "
                                "credentials with SASL mechanism SCRAM-SHA-256") from None
        self.principal = f"User:{self._scram_user}"
        return final.encode(), True
