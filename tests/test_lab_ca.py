"""The lab CA (p4handoff/lab_ca.py): what it issues, checked with the cryptography package's verifier."""
from __future__ import annotations

import os
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID

from p4handoff.lab_ca import lab_certs


def test_certificates_chain_to_the_ca_with_the_right_names_and_usages(tmp_path: Path):
    controller, servers = lab_certs(tmp_path, ["gw", "bs1"])
    ca = x509.load_pem_x509_certificate((tmp_path / "ca.pem").read_bytes())
    for name, files in {"controller": controller, **servers}.items():
        cert = x509.load_pem_x509_certificate(files.cert.read_bytes())
        public = ca.public_key()
        assert isinstance(public, ec.EllipticCurvePublicKey) and cert.signature_hash_algorithm is not None
        public.verify(cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(cert.signature_hash_algorithm))
        assert cert.issuer == ca.subject
        assert cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
            x509.DNSName) == [name]
        usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        want = ExtendedKeyUsageOID.CLIENT_AUTH if name == "controller" else ExtendedKeyUsageOID.SERVER_AUTH
        assert list(usage) == [want]
        assert os.stat(files.key).st_mode & 0o777 == 0o600
    assert os.stat(tmp_path / "ca.key").st_mode & 0o777 == 0o600


def test_ctl_certs_writes_a_ca_and_a_certificate_per_switch(tmp_path: Path, capsys):
    from p4handoff.cli.main import main
    example = Path(__file__).resolve().parent.parent / "topo" / "three-switch.yaml"
    assert main(["ctl", "certs", "--network", str(example), "--out", str(tmp_path / "pki")]) == 0
    names = {p.name for p in (tmp_path / "pki").iterdir()}
    assert {"ca.pem", "ca.key", "controller.pem", "controller.key", "gw.pem", "bs1.key", "bs2.pem"} <= names
    out = capsys.readouterr().out
    assert "tls: {ca:" in out and "--grpc-server-with-client-auth" in out
