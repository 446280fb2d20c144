"""This course as an LTI 1.3 tool: its registration with the LMS (settings rows
:data:`autograder.defaults.LTI`), its private key and published key set, and the
hub user name of an LMS member.

The private key (RSA 2048, PEM) comes from ``LTI_PRIVATE_KEY`` (the PEM itself), else
the file ``LTI_KEY_FILE`` (default: ``lti-tool-key.pem`` in the hub's state folder,
mode 0700), made there with mode 0600 when missing. It is never in the repository.
The public half is published as a JWKS (``GET <grader>/api/lti/jwks``); its ``kid`` is
the key's RFC 7638 thumbprint, so every process holding the key signs with the same kid.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwcrypto.jwk import JWK

from autograder import defaults

CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
ASSERTION_S = 300  # lifetime of a client assertion, seconds


@dataclass(frozen=True)
class Registration:
    """The LMS's registration of this tool (each field a settings row's value, "" when unset)."""

    issuer: str = ""
    client_id: str = ""
    token_url: str = ""
    lineitems_url: str = ""
    memberships_url: str = ""

    @classmethod
    def from_settings(cls):
        """The registration the environment gives (``LTI_*``)."""
        return cls(*(defaults.setting(n) for n in defaults.LTI[:5]))

    @property
    def can_post(self):
        """Whether grades can go back at all (a client id and a token URL are set)."""
        return bool(self.client_id and self.token_url)


def _new_key_pem() -> bytes:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def private_key_pem(path: Path | None = None) -> bytes:
    """The tool's private key (PEM bytes): ``LTI_PRIVATE_KEY``, else the file at ``path``
    (default :func:`autograder.defaults.lti_key_file`), made (0600, its folder 0700) when
    missing. Raises OSError when the file can be neither read nor made."""
    pem = defaults.setting("LTI_PRIVATE_KEY")
    if pem:
        return pem.encode()
    path = Path(path or defaults.lti_key_file())
    if not path.exists():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Written whole under a name of its own, then linked into place: a process starting
        # at the same moment never reads a half-written key, and the first link wins.
        part = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        _write_new(part, _new_key_pem())
        try:
            os.link(part, path)
        except FileExistsError:
            pass  # another process's key is in place: it is the tool's
        except OSError:  # a filesystem without hard links: the first to create it writes it
            try:
                _write_new(path, part.read_bytes())
            except FileExistsError:
                pass
        finally:
            part.unlink()
    return path.read_bytes()


def _write_new(path: Path, data: bytes) -> None:
    """Create ``path`` (0600) holding ``data``; FileExistsError when it exists."""
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as out:
        out.write(data)


def public_jwk(pem: bytes) -> dict:
    """The public JWK of private key ``pem``, with ``kid`` (thumbprint), ``alg``, ``use``."""
    key = JWK.from_pem(pem)
    jwk = json.loads(key.export_public())
    jwk.update(kid=key.thumbprint(), alg="RS256", use="sig")
    return jwk


def jwks(pem: bytes) -> dict:
    """The key set the tool publishes: ``{"keys": [public_jwk]}``."""
    return {"keys": [public_jwk(pem)]}


def client_assertion(registration: Registration, pem: bytes, now: float | None = None) -> str:
    """The signed JWT a tool sends to the LMS's token URL (IMS Security Framework 4.1):
    ``iss`` = ``sub`` = the client id, ``aud`` = the token URL, a fresh ``jti``."""
    now = int(time.time() if now is None else now)
    claims = {"iss": registration.client_id, "sub": registration.client_id,
              "aud": registration.token_url, "iat": now, "exp": now + ASSERTION_S,
              "jti": secrets.token_urlsafe(24)}
    return jwt.encode(claims, pem, algorithm="RS256", headers={"kid": public_jwk(pem)["kid"]})


def user_name(issuer: str, sub: str) -> str:
    """The hub (and system) user name of the LMS member ``sub`` of platform ``issuer``:
    ``lti-`` and 20 base32 characters of a hash of both (stable, valid as a Unix name
    and as a learner id, never the name or e-mail a member can change)."""
    digest = hashlib.sha256(f"{issuer}\0{sub}".encode()).digest()
    return "lti-" + base64.b32encode(digest).decode().lower()[:20]
