"""P4Runtime over TLS on BMv2 (issue 23): a client without a valid certificate is refused, the controller's works.

Skips by name and reason where BMv2 is missing (tests/bmv2_support.py).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from p4handoff.bmv2 import Bmv2Switch, bmv2_available
from p4handoff.controller.p4runtime import ClientTls, P4RuntimeClient, P4RuntimeError
from p4handoff.reliability.tls_probe import NAME, _call, clients

_ok, _why = bmv2_available()
pytestmark = [pytest.mark.bmv2, pytest.mark.skipif(not _ok, reason=_why or "BMv2 missing")]


def test_only_a_client_with_a_certificate_from_the_lab_ca_is_served(tmp_path: Path):
    tls, bad, good = clients(tmp_path)
    with Bmv2Switch({}, tls=tls, log_path=tmp_path / "bmv2.log") as sw:
        refused = {kind: _call(sw.grpc_addr, creds) for kind, creds in bad.items()}
        assert refused == dict.fromkeys(bad, False)
        assert _call(sw.grpc_addr, good)
        client_tls = ClientTls(tls.ca.read_bytes(), tls.probe_cert.read_bytes(), tls.probe_key.read_bytes(), NAME)
        with P4RuntimeClient(sw.grpc_addr, tls=client_tls, timeout=5) as c:       # the controller's own client
            assert c.is_primary
        wrong_name = ClientTls(client_tls.ca, client_tls.cert, client_tls.key, "gw")   # the switch must be bs1
        with pytest.raises(P4RuntimeError):
            P4RuntimeClient(sw.grpc_addr, tls=wrong_name, timeout=3)
