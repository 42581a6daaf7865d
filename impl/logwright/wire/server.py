"""``logwright serve``: the embedded cluster's brokers on the network, speaking Kafka's protocol.

Invariants upheld:

* One thread runs everything: the sockets (a ``selectors`` loop) and the cluster's scheduler
  take turns, so the brokers see wire requests exactly as they see the in-process client's,
  through the cluster's network, and no lock is needed.
* Like Kafka's socket server, a connection has one request in progress at a time: the next
  frame is read only once the previous one is answered (or, for acks=0 produce, handed on),
  so responses leave in request order.
* A connection that sends what Kafka would refuse (a frame over ``socket.request.max.bytes``,
  an unknown API key or version, malformed bytes) is closed, and only that connection; an
  ApiVersions request at a version this broker does not know is answered at v0 with
  UNSUPPORTED_VERSION and the versions it serves, as Kafka does. Buffered input per connection
  never exceeds one frame plus one read.
"""

from __future__ import annotations

import errno
import logging
import selectors
import socket
import ssl
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from logwright.broker.authorizer import Operation
from logwright.broker.config import ANONYMOUS
from logwright.cluster import Cluster
from logwright.errors import LogwrightError
from logwright.identity import broker_node_id
from logwright.protocol.messages import Message
from logwright.wire import apis, handlers
from logwright.wire.codec import (
    API_VERSIONS,
    DecodedRequest,
    WireError,
    decode_request,
    encode_response,
    frame_size,
)
from logwright.wire.security import (
    Protocol,
    SaslExchange,
    SecurityConfig,
    SecurityError,
    certificate_principal,
)

__all__ = ["Listener", "ListenerConfig", "WireServer", "serving"]

log = logging.getLogger("logwright.wire")

DEFAULT_MAX_REQUEST_BYTES = 104_857_600  # Kafka's socket.request.max.bytes
DEFAULT_IDLE_MS = 600_000  # Kafka's connections.max.idle.ms
DEFAULT_MAX_CONNECTIONS_PER_IP = 1_000
GATEWAY_NODE = "wire"
#: What a SASL connection may send before it authenticates: ApiVersions, SaslHandshake,
#: SaslAuthenticate.
BEFORE_AUTHENTICATION = frozenset({18, 17, 36})
_READ_CHUNK = 1 << 16
_TICK_MS = 20  # the longest the loop sleeps in select() with nothing due


@dataclass(frozen=True)
class Listener:
    """One broker's listening address, and the security protocol spoken there."""

    broker_id: int
    host: str
    port: int
    protocol: Protocol = Protocol.PLAINTEXT


@dataclass(frozen=True)
class ListenerConfig:
    """One listener of every broker (Kafka's ``listeners`` entry): its protocol, host and each
    broker's port (0 or absent: a free port)."""

    protocol: Protocol = Protocol.PLAINTEXT
    host: str = "127.0.0.1"
    ports: Mapping[int, int] = field(default_factory=dict)


@dataclass
class _Connection:
    sock: socket.socket
    broker_id: int
    peer: str
    last_active_ms: int
    protocol: Protocol = Protocol.PLAINTEXT
    principal: str | None = ANONYMOUS  # None: a SASL connection not yet authenticated
    sasl: SaslExchange | None = None
    handshaking: bool = False  # TLS handshake in progress
    raw_sasl: bool = False  # after SaslHandshake v0: SASL tokens in bare size-prefixed frames
    inbuf: bytearray = field(default_factory=bytearray)
    outbuf: bytearray = field(default_factory=bytearray)
    busy: bool = False  # a request is being served (Kafka mutes the channel)
    closing: bool = False  # close once the output is written
    closed: bool = False
    events: int = selectors.EVENT_READ  # what the selector watches for (0: not registered)


class _Gateway:
    """The wire's node on the cluster network: sends the brokers requests and hands each
    answer to the callback that waits for it."""

    def __init__(self, server: WireServer) -> None:
        self.node_id = GATEWAY_NODE
        self.server = server
        self._next_id = 0
        self._waiting: dict[int, tuple[str, Callable[[Message | None], None], int]] = {}

    def next_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def call(self, dst: str, message: Message, on_answer: Callable[[Message | None], None],
             timeout_ms: int) -> None:
        self._waiting[message.correlation_id] = (dst, on_answer,
                                                 self.server.now_ms() + timeout_ms)
        self.server.cluster.runtime.network.send(self.node_id, dst, message)

    def send(self, dst: str, message: Message) -> None:
        self.server.cluster.runtime.network.send(self.node_id, dst, message)

    def receive(self, src: str, message: object) -> None:
        if not isinstance(message, Message):
            return
        waiting = self._waiting.get(message.correlation_id)
        if waiting is None or waiting[0] != src:
            return  # late or unasked for
        del self._waiting[message.correlation_id]
        waiting[1](message)

    def expire(self, now_ms: int) -> None:
        """Answer None to every call whose broker did not answer in time."""
        for cid, (_dst, on_answer, deadline) in list(self._waiting.items()):
            if deadline <= now_ms:
                del self._waiting[cid]
                on_answer(None)


class WireServer:
    """Serves ``cluster`` (a ``Cluster.real``) on one port per broker.

    ``ports`` maps broker id to port (0 or absent: a free port, reported in ``listeners``).
    Construct, then ``serve_forever(stop)`` in the thread that owns the cluster; ``close()``
    closes the sockets (the cluster is the caller's to close)."""

    def __init__(self, cluster: Cluster, host: str = "127.0.0.1",
                 ports: Mapping[int, int] | None = None,
                 max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
                 idle_ms: int = DEFAULT_IDLE_MS,
                 max_connections_per_ip: int = DEFAULT_MAX_CONNECTIONS_PER_IP,
                 listeners: Sequence[ListenerConfig] | None = None,
                 security: SecurityConfig | None = None) -> None:
        if max_request_bytes < 1:
            raise LogwrightError(f"socket.request.max.bytes must be positive, "
                                 f"not {max_request_bytes}")
        configs = (list(listeners) if listeners is not None
                   else [ListenerConfig(Protocol.PLAINTEXT, host, dict(ports or {}))])
        self.security = security or SecurityConfig()
        for config in configs:
            if config.protocol.tls and self.security.ssl_context is None:
                raise SecurityError(f"a {config.protocol.value} listener needs a TLS "
                                    f"certificate (ssl_context)")
            if config.protocol.sasl and not len(self.security.users):
                raise SecurityError(f"a {config.protocol.value} listener needs SASL users")
        if len({c.protocol for c in configs}) != len(configs):
            raise LogwrightError("one listener per security protocol")
        for principal in self.security.super_users:
            if principal not in cluster.authorizer.super_users:
                cluster.authorizer.super_users = cluster.authorizer.super_users | {principal}
        self.cluster = cluster
        self.host = configs[0].host
        self.max_request_bytes = max_request_bytes
        self.idle_ms = idle_ms
        self.max_connections_per_ip = max_connections_per_ip
        self.selector = selectors.DefaultSelector()
        self.listeners: list[Listener] = []
        # (protocol, broker id) -> the listening socket
        self._servers: dict[tuple[Protocol, int], socket.socket] = {}
        self._connections: dict[int, _Connection] = {}
        self._per_ip: dict[str, int] = {}
        self._calls: deque[tuple[Callable[[], Any], Future[Any]]] = deque()
        self._waits: list[tuple[Callable[[], bool], int, Callable[[bool], None]]] = []
        #: Connections closed for a protocol error, and why (the last 100).
        self.refused: deque[str] = deque(maxlen=100)
        self.requests_served = 0
        self.gateway = _Gateway(self)
        cluster.runtime.network.register(self.gateway)
        cluster.runtime.network.keep_order_from(GATEWAY_NODE)
        try:
            for config in configs:
                for broker_id in sorted(cluster.brokers):
                    self._listen(config, broker_id)
        except BaseException:
            self.close()
            raise

    # ---- sockets -----------------------------------------------------------------------------

    def _listen(self, config: ListenerConfig, broker_id: int) -> None:
        listener = Listener(broker_id, config.host, config.ports.get(broker_id, 0),
                            config.protocol)
        sock = self._bind(listener)
        self._servers[(config.protocol, broker_id)] = sock
        self.listeners.append(replace(listener, port=sock.getsockname()[1]))

    def _bind(self, listener: Listener) -> socket.socket:
        sock = socket.socket(socket.AF_INET6 if ":" in listener.host else socket.AF_INET,
                             socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((listener.host, listener.port))
        except OSError as exc:
            sock.close()
            raise LogwrightError(f"broker {listener.broker_id}: cannot listen on "
                                 f"{listener.host}:{listener.port}: "
                                 f"{exc.strerror or exc}") from None
        sock.listen(128)
        sock.setblocking(False)
        self.selector.register(sock, selectors.EVENT_READ, ("listen", listener))
        return sock

    def _follow_brokers(self) -> None:
        """A broker whose process is down does not listen, as a dead Kafka broker does not:
        its connections close and new ones are refused, so clients look for the new leader.
        When it runs again it listens on the same port."""
        for x in self.listeners:
            broker = self.cluster.brokers.get(x.broker_id)
            alive = broker is not None and broker.alive
            key = (x.protocol, x.broker_id)
            sock = self._servers.get(key)
            if not alive and sock is not None:
                self.selector.unregister(sock)
                sock.close()
                del self._servers[key]
                for conn in list(self._connections.values()):
                    if conn.broker_id == x.broker_id:
                        self._close(conn)
            elif alive and sock is None:
                try:
                    self._servers[key] = self._bind(x)
                except LogwrightError as exc:
                    log.warning("%s; retrying", exc)

    def bootstrap_for(self, protocol: Protocol = Protocol.PLAINTEXT) -> str:
        """``host:port`` of every broker's ``protocol`` listener, comma-separated."""
        return ",".join(f"{x.host}:{x.port}" for x in self.listeners if x.protocol is protocol)

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` of every broker on the first listener, as clients take them."""
        return self.bootstrap_for(self.listeners[0].protocol)

    def address_of(self, broker_id: int, protocol: Protocol = Protocol.PLAINTEXT
                   ) -> tuple[str, int] | None:
        """The host and port broker ``broker_id`` listens on for ``protocol``, if it does."""
        for x in self.listeners:
            if x.broker_id == broker_id and x.protocol is protocol:
                return x.host, x.port
        return None

    def now_ms(self) -> int:
        """The cluster's clock."""
        return self.cluster.runtime.clock.now_ms()

    def _accept(self, server: socket.socket, listener: Listener) -> None:
        try:
            sock, addr = server.accept()
        except OSError:
            return
        ip = str(addr[0])
        if self._per_ip.get(ip, 0) >= self.max_connections_per_ip:
            self.refused.append(f"{ip}: more than max.connections.per.ip "
                                f"({self.max_connections_per_ip}) connections")
            sock.close()
            return
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        protocol = listener.protocol
        if protocol.tls:
            assert self.security.ssl_context is not None
            sock = self.security.ssl_context.wrap_socket(sock, server_side=True,
                                                         do_handshake_on_connect=False)
        conn = _Connection(sock, listener.broker_id, f"{ip}:{addr[1]}", self.now_ms(),
                           protocol=protocol,
                           principal=None if protocol.sasl else ANONYMOUS,
                           sasl=SaslExchange(self.security.users) if protocol.sasl else None,
                           handshaking=protocol.tls)
        self._per_ip[ip] = self._per_ip.get(ip, 0) + 1
        self._connections[sock.fileno()] = conn
        self.selector.register(sock, selectors.EVENT_READ, ("conn", conn))

    def _handshake(self, conn: _Connection) -> None:
        """Advance a TLS handshake; once done, an SSL connection's principal is its client
        certificate's subject (or ANONYMOUS)."""
        sock = conn.sock
        assert isinstance(sock, ssl.SSLSocket)
        try:
            sock.do_handshake()
        except ssl.SSLWantReadError:
            self._set_events(conn, selectors.EVENT_READ)
            return
        except ssl.SSLWantWriteError:
            self._set_events(conn, selectors.EVENT_WRITE)
            return
        except (ssl.SSLError, OSError) as exc:
            self._close(conn, f"TLS handshake failed: {getattr(exc, 'reason', None) or exc}")
            return
        conn.handshaking = False
        conn.last_active_ms = self.now_ms()
        if conn.protocol is Protocol.SSL:
            conn.principal = certificate_principal(sock)
        self._update_interest(conn)

    def _close(self, conn: _Connection, why: str = "") -> None:
        if conn.closed:
            return
        conn.closed = True
        if why:
            self.refused.append(f"{conn.peer}: {why}")
            log.info("closing connection from %s: %s", conn.peer, why)
        if conn.events:
            self.selector.unregister(conn.sock)
            conn.events = 0
        self._connections.pop(conn.sock.fileno(), None)
        ip = conn.peer.rsplit(":", 1)[0]
        self._per_ip[ip] = max(0, self._per_ip.get(ip, 1) - 1)
        conn.sock.close()

    def _read(self, conn: _Connection) -> None:
        if conn.handshaking:
            self._handshake(conn)
            return
        try:
            data = conn.sock.recv(_READ_CHUNK)
            if isinstance(conn.sock, ssl.SSLSocket):
                while conn.sock.pending():  # decrypted bytes the selector cannot see
                    data += conn.sock.recv(conn.sock.pending())
        except (BlockingIOError, InterruptedError, ssl.SSLWantReadError,
                ssl.SSLWantWriteError):
            return
        except OSError as exc:
            self._close(conn, f"read failed: {exc.strerror or exc}")
            return
        if not data:
            self._close(conn)
            return
        conn.last_active_ms = self.now_ms()
        conn.inbuf += data
        self._next_request(conn)

    def _next_request(self, conn: _Connection) -> None:
        """Serve the next complete frame of ``conn``, unless one is in progress."""
        while not conn.busy and not conn.closed and not conn.closing:
            try:
                size = frame_size(conn.inbuf, self.max_request_bytes)
            except WireError as exc:
                self._close(conn, exc.reason)
                return
            if size is None or len(conn.inbuf) < 4 + size:
                self._update_interest(conn)
                return
            frame = bytes(conn.inbuf[4:4 + size])
            del conn.inbuf[:4 + size]
            self._serve(conn, frame)
        self._update_interest(conn)

    def _update_interest(self, conn: _Connection) -> None:
        if conn.closed or conn.handshaking:
            return
        # A busy connection is not read (Kafka mutes it): its next frames wait in the kernel,
        # which pushes back on the client, so a connection buffers one frame plus one read.
        events = 0 if conn.busy or conn.closing else selectors.EVENT_READ
        if conn.outbuf:
            events |= selectors.EVENT_WRITE
        self._set_events(conn, events)

    def _set_events(self, conn: _Connection, events: int) -> None:
        if events == conn.events:
            return
        if conn.events == 0:
            self.selector.register(conn.sock, events, ("conn", conn))
        elif events == 0:
            self.selector.unregister(conn.sock)
        else:
            self.selector.modify(conn.sock, events, ("conn", conn))
        conn.events = events

    def _write(self, conn: _Connection) -> None:
        if conn.handshaking:
            self._handshake(conn)
            return
        if conn.outbuf:
            try:
                sent = conn.sock.send(conn.outbuf)
            except (BlockingIOError, InterruptedError, ssl.SSLWantReadError,
                    ssl.SSLWantWriteError):
                return
            except OSError as exc:
                self._close(conn, "" if exc.errno in (errno.EPIPE, errno.ECONNRESET)
                            else f"write failed: {exc.strerror or exc}")
                return
            del conn.outbuf[:sent]
        if not conn.outbuf and conn.closing:
            self._close(conn)
            return
        self._update_interest(conn)

    # ---- requests ----------------------------------------------------------------------------

    def _serve(self, conn: _Connection, frame: bytes) -> None:
        if conn.raw_sasl:
            self._raw_sasl_token(conn, frame)
            return
        try:
            request = decode_request(frame)
        except WireError as exc:
            if exc.api_key == API_VERSIONS and exc.correlation_id is not None:
                # Kafka answers an ApiVersions it cannot parse at v0, so the client learns
                # which versions to use instead.
                body = handlers.unsupported_api_versions()
                self._send(conn, encode_response(API_VERSIONS, 0, exc.correlation_id, body))
                return
            self._close(conn, exc.reason)
            return
        if conn.principal is None and request.api_key not in BEFORE_AUTHENTICATION:
            self._close(conn, f"API key {request.api_key} sent before SASL authentication")
            return
        self.requests_served += 1
        conn.busy = True
        apis.handle(_Exchange(self, conn, request))

    def _raw_sasl_token(self, conn: _Connection, token: bytes) -> None:
        """A SASL token after SaslHandshake v0: no Kafka header, the answer is a bare
        size-prefixed token too, and a failure closes the connection (as Kafka does)."""
        assert conn.sasl is not None
        try:
            answer, done = conn.sasl.step(token)
        except SecurityError:
            self._close(conn, f"SASL/{conn.sasl.mechanism} authentication failed")
            return
        if done:
            conn.raw_sasl = False
            conn.principal = conn.sasl.principal
        self._send(conn, len(answer).to_bytes(4, "big") + answer)

    def _send(self, conn: _Connection, data: bytes) -> None:
        if conn.closed:
            return
        conn.outbuf += data
        self._write(conn)

    def _finish(self, conn: _Connection, request: DecodedRequest, body: Any | None,
                close_after: bool = False) -> None:
        """``body`` answers ``request`` (None: no answer, as for acks=0); the connection may
        read its next frame, or, with ``close_after``, is closed once the answer is out."""
        if conn.closed:
            return
        conn.busy = False
        conn.closing = conn.closing or close_after
        if body is not None:
            self._send(conn, encode_response(request.api_key, request.api_version,
                                             request.correlation_id, body))
        if conn.closing and not conn.outbuf:
            self._close(conn)
            return
        self._next_request(conn)

    def wait_for(self, done: Callable[[], bool], timeout_ms: int,
                 then: Callable[[bool], None]) -> None:
        """Call ``then(True)`` once ``done()`` holds, or ``then(False)`` after ``timeout_ms``;
        checked after every turn of the loop, never blocking it."""
        if done():
            then(True)
            return
        self._waits.append((done, self.now_ms() + timeout_ms, then))

    def _check_waits(self) -> None:
        if not self._waits:
            return
        now = self.now_ms()
        pending, self._waits = self._waits, []
        for done, deadline, then in pending:
            if done():
                then(True)
            elif deadline <= now:
                then(False)
            else:
                self._waits.append((done, deadline, then))

    # ---- the loop ----------------------------------------------------------------------------

    def run_in_loop(self, fn: Callable[[], Any]) -> Future[Any]:
        """Run ``fn`` in the thread that serves (the only one that may touch the cluster while
        it serves), at the next turn of the loop; its result or exception in the future."""
        future: Future[Any] = Future()
        self._calls.append((fn, future))
        return future

    def _run_calls(self) -> None:
        while self._calls:
            fn, future = self._calls.popleft()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn())
                except BaseException as exc:  # handed to the caller
                    future.set_exception(exc)

    def run_once(self, max_wait_ms: int = _TICK_MS) -> None:
        """One turn: due cluster tasks, ready sockets, waits and expiries."""
        self._run_calls()
        self._follow_brokers()
        scheduler = self.cluster.runtime.scheduler
        scheduler.run_pending()
        due = scheduler.next_due_ms()
        now = self.now_ms()
        wait_ms = max_wait_ms if due is None else max(0, min(max_wait_ms, due - now))
        if self._waits:
            wait_ms = min(wait_ms, 5)
        for key, events in self.selector.select(wait_ms / 1000.0):
            kind, target = key.data
            if kind == "listen":
                self._accept(key.fileobj, target)  # type: ignore[arg-type]
                continue
            conn: _Connection = target
            if events & selectors.EVENT_WRITE:
                self._write(conn)
            if events & selectors.EVENT_READ and not conn.closed and not conn.busy:
                self._read(conn)
        scheduler.run_pending()
        now = self.now_ms()
        self.gateway.expire(now)
        self._check_waits()
        self._close_idle(now)

    def _close_idle(self, now: int) -> None:
        for conn in list(self._connections.values()):
            if not conn.busy and now - conn.last_active_ms > self.idle_ms:
                self._close(conn, f"idle for more than connections.max.idle.ms "
                                  f"({self.idle_ms} ms)")

    def serve_forever(self, stop: threading.Event) -> None:
        """Serve until ``stop`` is set."""
        while not stop.is_set():
            self.run_once()

    @property
    def connections(self) -> int:
        """Open client connections."""
        return len(self._connections)

    def close(self) -> None:
        """Close every connection and listening socket."""
        for conn in list(self._connections.values()):
            self._close(conn)
        for sock in self._servers.values():
            self.selector.unregister(sock)
            sock.close()
        self._servers.clear()
        self.selector.close()
        self.cluster.runtime.network.unregister(GATEWAY_NODE)


class _Exchange:
    """One request being served: what the handlers see of the server."""

    def __init__(self, server: WireServer, conn: _Connection, request: DecodedRequest) -> None:
        self.server = server
        self.conn = conn
        self.request = request
        self.answered = False

    @property
    def cluster(self) -> Cluster:
        return self.server.cluster

    @property
    def broker_id(self) -> int:
        """The broker whose port the request came in on."""
        return self.conn.broker_id

    @property
    def broker_node(self) -> str:
        return broker_node_id(self.conn.broker_id)

    @property
    def principal(self) -> str:
        """Who sent the request (``User:ANONYMOUS`` unless authenticated)."""
        return self.conn.principal or ANONYMOUS

    @property
    def authenticated_as(self) -> str | None:
        """The connection's principal; None on a SASL listener before authentication."""
        return self.conn.principal

    def wait_for(self, done: Callable[[], bool], timeout_ms: int,
                 then: Callable[[bool], None]) -> None:
        """``then(True)`` once ``done()`` holds, ``then(False)`` after ``timeout_ms``."""
        self.server.wait_for(done, timeout_ms, then)

    def address_of(self, broker_id: int) -> tuple[str, int] | None:
        """Where ``broker_id`` listens for this request's protocol."""
        return self.server.address_of(broker_id, self.conn.protocol)

    def refuse(self, why: str) -> None:
        """Record why this connection is about to be refused (no secret in ``why``)."""
        self.server.refused.append(f"{self.conn.peer}: {why}")

    @property
    def protocol(self) -> Protocol:
        """The security protocol of the listener the request came in on."""
        return self.conn.protocol

    @property
    def sasl(self) -> SaslExchange | None:
        """The connection's SASL exchange (SASL listeners only)."""
        return self.conn.sasl

    def tokens_follow_unframed(self) -> None:
        """SaslHandshake v0 succeeded: the next frames are bare SASL tokens."""
        self.conn.raw_sasl = True

    def authenticated(self, principal: str) -> None:
        """The connection's SASL exchange succeeded as ``principal``."""
        self.conn.principal = principal

    def allowed_topic(self, operation: Operation, topic: str) -> bool:
        """Whether the sender may do ``operation`` on ``topic`` (the cluster's ACLs)."""
        return self.cluster.authorizer.authorize_topic(self.principal, operation, topic)

    def allowed_cluster(self, operation: Operation) -> bool:
        """Whether the sender may do ``operation`` on the cluster."""
        return self.cluster.authorizer.authorize_cluster(self.principal, operation)

    def respond(self, body: Any | None, close_after: bool = False) -> None:
        """Answer the request (None: send nothing, as for acks=0). Once only. With
        ``close_after`` the connection is closed once the answer is sent (a failed SASL
        authentication)."""
        assert not self.answered, "a request is answered once"
        self.answered = True
        self.server._finish(self.conn, self.request, body, close_after)

    def call(self, message_of: Callable[[int], Message],
             on_answer: Callable[[Message | None], None], timeout_ms: int) -> None:
        """Send the broker this request came to ``message_of(correlation_id)``; its answer
        (None after ``timeout_ms`` without one) goes to ``on_answer``."""
        gateway = self.server.gateway
        gateway.call(self.broker_node, message_of(gateway.next_id()), on_answer, timeout_ms)

    def send(self, message_of: Callable[[int], Message]) -> None:
        """Send the broker ``message_of(correlation_id)``, expecting no answer."""
        gateway = self.server.gateway
        gateway.send(self.broker_node, message_of(gateway.next_id()))


@contextmanager
def serving(cluster: Cluster, host: str = "127.0.0.1", ports: Mapping[int, int] | None = None,
            **options: Any) -> Iterator[WireServer]:
    """Serve ``cluster`` from a background thread for the ``with`` block (an embedded broker
    that Kafka clients in the same process, or others, connect to). While it serves, touch the
    cluster only through ``server.run_in_loop(fn)``. Leaving the block stops the thread and
    closes the sockets; the cluster stays open."""
    server = WireServer(cluster, host, ports, **options)
    stop = threading.Event()
    thread = threading.Thread(target=server.serve_forever, args=(stop,),
                              name="logwright-wire", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        stop.set()
        thread.join()
        server.close()
