"""A real gRPC server on 127.0.0.1 for the `grpc` runtime's tests: `ixtest.router.Router`
(tests/fixtures/grpc/router.proto), its messages made by grpcio-tools' own dynamic stubs (not
by ix), with scripted failures, a delay, an echo of metadata, and reflection on request."""

import sys
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from pathlib import Path

import grpc
from grpc_reflection.v1alpha import reflection

PROTO_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "grpc"
PROTO = PROTO_DIR / "router.proto"
METHOD = "ixtest.router.Router/Route"

if str(PROTO_DIR) not in sys.path:
    sys.path.insert(0, str(PROTO_DIR))
pb2, pb2_grpc = grpc.protos_and_services("router.proto")

#: A prompt's keyword and the skill the router sends it to.
ROUTES = {"pdf": "pdf", "sheet": "xlsx", "slides": "pptx"}


class Router(pb2_grpc.RouterServicer):
    """Routes by keyword; `script[case_id]`: status codes to answer first, one per call."""

    def __init__(self) -> None:
        self.script: dict[str, list[grpc.StatusCode]] = {}
        self.calls: list[tuple[dict, dict]] = []  # (request fields, metadata) per call
        self.lock = threading.Lock()

    def Route(self, request, context):
        metadata = dict(context.invocation_metadata())
        with self.lock:
            self.calls.append(({"text": request.text, "case_id": request.case_id,
                                "attempt": request.attempt, "verbose": request.verbose,
                                "prefer": list(request.options.prefer)}, metadata))
            codes = self.script.get(request.case_id) or []
            code = codes.pop(0) if codes else None
        if code is not None:
            context.abort(code, f"scripted {code.name}")
        if "slow" in request.text:
            time.sleep(1.0)
        skills = [skill for word, skill in ROUTES.items() if word in request.text]
        reply = pb2.RouteReply(answer=f"routed: {request.text}", skills=skills)
        if skills:
            reply.best.skill, reply.best.score = skills[0], 0.75
        if request.case_id == "echo":
            reply.extra.update({"authorization": metadata.get("authorization", "")})
            context.set_trailing_metadata((("x-echo", metadata.get("authorization", "")),))
        return reply

    def calls_of(self, case_id: str) -> int:
        with self.lock:
            return sum(1 for fields, _ in self.calls if fields["case_id"] == case_id)


@contextmanager
def serving(*, reflect: bool = False, tls: tuple[bytes, bytes] | None = None,
            ) -> Iterator[tuple[str, Router]]:
    """The server started on a free port: its target (`127.0.0.1:PORT`) and its servicer;
    `tls`: (key, certificate) in PEM, served over TLS."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    router = Router()
    pb2_grpc.add_RouterServicer_to_server(router, server)
    if reflect:
        name = pb2.DESCRIPTOR.services_by_name["Router"].full_name
        reflection.enable_server_reflection((name, reflection.SERVICE_NAME), server)
    if tls is None:
        port = server.add_insecure_port("127.0.0.1:0")
    else:
        port = server.add_secure_port("127.0.0.1:0", grpc.ssl_server_credentials([tls]))
    server.start()
    try:
        yield f"127.0.0.1:{port}", router
    finally:
        server.stop(None).wait()


def self_signed() -> tuple[bytes, bytes]:
    """A key and a self-signed certificate for 127.0.0.1 (PEM), valid for a day."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ix test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return (key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()),
            cert.public_bytes(serialization.Encoding.PEM))


def free_port() -> int:
    """A port nothing listens on (for UNAVAILABLE)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
