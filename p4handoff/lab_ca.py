"""A small certificate authority for the control channel: P4Runtime over TLS with mutual authentication.

`p4handoff ctl certs --network FILE --out DIR` (and the lab and testbed, on
their own) write into DIR:

- `ca.pem` / `ca.key`: a self-signed CA (EC P-256, 10 years);
- `<switch>.pem` / `<switch>.key`: one server certificate per switch, its
  name as the DNS subject alternative name (the controller checks it:
  `grpc.ssl_target_name_override`, so a Unix-socket or 127.0.0.1 address
  still authenticates the switch by name);
- `controller.pem` / `controller.key`: the controller's client certificate
  (extended key usage clientAuth), which every switch requires
  (`simple_switch_grpc --grpc-server-with-client-auth`).

Private keys are written mode 0600 before any byte of them. Uses the
`cryptography` package.
"""
from __future__ import annotations

import datetime
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CONTROLLER = "controller"
VALID_DAYS = 3650


@dataclass(frozen=True)
class TlsFiles:
    """The CA to verify the peer against, and our certificate and key (PEM files)."""

    ca: Path
    cert: Path
    key: Path

    def read(self) -> tuple[bytes, bytes, bytes]:
        return self.ca.read_bytes(), self.cert.read_bytes(), self.key.read_bytes()


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "p4handoff lab"),
                      x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _builder(subject: str, issuer: x509.Name, public: ec.EllipticCurvePublicKey) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.timezone.utc)
    return (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(issuer).public_key(public)
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=VALID_DAYS)))


def make_ca(out: Path, cn: str = "p4handoff lab CA") -> None:
    out.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (_builder(cn, _name(cn), key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    _write_private(out / "ca.key", _key_pem(key))
    (out / "ca.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def issue(out: Path, name: str, *, client: bool) -> TlsFiles:
    """A certificate for `name` signed by the CA in `out`: a client's (clientAuth) or a switch's (serverAuth,
    DNS name `name`)."""
    ca_cert = x509.load_pem_x509_certificate((out / "ca.pem").read_bytes())
    ca_key = serialization.load_pem_private_key((out / "ca.key").read_bytes(), None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = ec.generate_private_key(ec.SECP256R1())
    usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
    builder = (_builder(name, ca_cert.subject, key.public_key())
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
               .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False))
    cert = builder.sign(ca_key, hashes.SHA256())
    _write_private(out / f"{name}.key", _key_pem(key))
    (out / f"{name}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return TlsFiles(out / "ca.pem", out / f"{name}.pem", out / f"{name}.key")


def lab_certs(out: Path, switches: Iterable[str]) -> tuple[TlsFiles, dict[str, TlsFiles]]:
    """A fresh CA in `out`, the controller's client certificate and one server certificate per switch."""
    make_ca(out)
    return issue(out, CONTROLLER, client=True), {s: issue(out, s, client=False) for s in switches}
