"""HTTPS in front of a hub for the tests, as an administrator puts it (docs/lti.md): TLS
with a self-signed certificate for a real-looking domain and its subdomains, each
connection's bytes passed to the hub's port as they are (the browser says
``X-Forwarded-Proto: https`` itself, as a proxy in front would). Plain HTTP to the
front is answered with a redirect to the same URL over HTTPS, as nginx or Caddy in front
of a hub answer it: on the hub's own port (another loopback address), the hub's
``http://`` links of its ``subdomain_host`` land on HTTPS."""
from __future__ import annotations

import datetime
import socket
import ssl
import threading
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def self_signed(folder: Path, domain: str) -> tuple[Path, Path]:
    """``(certificate, key)`` PEM files for ``domain`` and ``*.domain`` in ``folder``."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, domain)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.DNSName(domain), x509.DNSName(f"*.{domain}")]), critical=False)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = folder / "front.crt", folder / "front.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


class TLSFront:
    """Listens on ``address:port`` (default: a free loopback port) with TLS; each
    connection is relayed to ``127.0.0.1:target``. :meth:`close` stops it."""

    def __init__(self, folder: Path, domain: str, target: int, address="127.0.0.1", port=0):
        self.target = target
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(*self_signed(folder, domain))
        self.listener = socket.create_server((address, port))
        self.port = self.listener.getsockname()[1]
        self.open = True
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while self.open:
            try:
                raw, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw):
        try:
            if raw.recv(1, socket.MSG_PEEK) != b"\x16":  # not a TLS handshake: plain HTTP
                _to_https(raw)
                return
            outside = self.context.wrap_socket(raw, server_side=True)
            inside = socket.create_connection(("127.0.0.1", self.target))
        except OSError:
            raw.close()
            return
        threading.Thread(target=_pipe, args=(inside, outside), daemon=True).start()
        _pipe(outside, inside)

    def close(self):
        self.open = False
        self.listener.close()


def _to_https(raw):
    """Answer a plain HTTP request with a redirect to its URL over HTTPS, and close."""
    request = b""
    while b"\r\n\r\n" not in request and len(request) < 65536:
        if not (data := raw.recv(4096)):
            break
        request += data
    head = request.decode("latin-1").split("\r\n")
    path = head[0].split(" ")[1] if len(head[0].split(" ")) > 1 else "/"
    host = next((h.split(":", 1)[1].strip() for h in head[1:] if h.lower().startswith("host:")),
                "")
    raw.sendall(f"HTTP/1.1 301 Moved Permanently\r\nLocation: https://{host}{path}\r\n"
                "Content-Length: 0\r\nConnection: close\r\n\r\n".encode("latin-1"))
    raw.close()


def _pipe(source, sink):
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, sink):
            try:
                end.close()
            except OSError:
                pass
