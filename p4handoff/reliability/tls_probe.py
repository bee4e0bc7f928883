"""Clients without a valid certificate against simple_switch_grpc with TLS and client authentication.

One BMv2 (no data ports) on 127.0.0.1, its certificates from a fresh lab CA
(p4handoff.lab_ca). Each client kind tries `attempts` times to complete a
P4Runtime `Capabilities` call: plaintext, TLS without a client certificate,
TLS with a certificate from another CA, TLS with the switch's own *server*
certificate as a client's, and (the control) the controller's certificate.
A call that returns is accepted.
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import grpc

from p4handoff.bmv2 import Bmv2Switch, SwitchTls
from p4handoff.controller.p4runtime._protos import p4runtime_pb2, p4runtime_pb2_grpc
from p4handoff.lab_ca import TlsFiles, issue, lab_certs, make_ca

NAME = "bs1"
TIMEOUT = 3.0


def _call(address: str, creds: grpc.ChannelCredentials | None) -> bool:
    """Whether a Capabilities call completes over a channel with `creds` (None: plaintext)."""
    channel = (grpc.insecure_channel(address) if creds is None else
               grpc.secure_channel(address, creds, options=[("grpc.ssl_target_name_override", NAME)]))
    try:
        p4runtime_pb2_grpc.P4RuntimeStub(channel).Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=TIMEOUT)
        return True
    except grpc.RpcError:
        return False
    finally:
        channel.close()


def _creds(ca: Path, client: TlsFiles | None) -> grpc.ChannelCredentials:
    if client is None:
        return grpc.ssl_channel_credentials(root_certificates=ca.read_bytes())
    return grpc.ssl_channel_credentials(ca.read_bytes(), client.key.read_bytes(), client.cert.read_bytes())


def clients(work: Path) -> tuple[SwitchTls, dict[str, grpc.ChannelCredentials | None], grpc.ChannelCredentials]:
    """The switch's TLS settings, the unauthenticated clients by kind, and the authenticated one."""
    controller, servers = lab_certs(work / "pki", [NAME])
    other = work / "other-ca"
    make_ca(other, "someone else's CA")
    stranger = issue(other, "controller", client=True)
    ca = servers[NAME].ca
    tls = SwitchTls(ca, servers[NAME].cert, servers[NAME].key, NAME, controller.cert, controller.key)
    bad: dict[str, grpc.ChannelCredentials | None] = {
        "plaintext": None,
        "no_client_certificate": _creds(ca, None),
        "other_ca": _creds(ca, stranger),
        "server_certificate_as_client": _creds(ca, servers[NAME]),
    }
    return tls, bad, _creds(ca, controller)


def measure_tls(attempts: int = 5) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="p4h-tls-") as tmp:
        tls, bad, good = clients(Path(tmp))
        with Bmv2Switch({}, tls=tls, log_path=Path(tmp) / "bmv2.log") as sw:
            tried = accepted = 0
            by_kind: dict[str, int] = {}
            for kind, creds in bad.items():
                wins = sum(_call(sw.grpc_addr, creds) for _ in range(attempts))
                by_kind[kind] = wins
                tried += attempts
                accepted += wins
            control = sum(_call(sw.grpc_addr, good) for _ in range(attempts))
    return {"tls_unauthenticated_clients_tried": tried, "tls_unauthenticated_clients_accepted": accepted,
            "tls_unauthenticated_by_kind": by_kind, "tls_authenticated_client_accepted": f"{control}/{attempts}"}
