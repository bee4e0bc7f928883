"""The key file: one shared secret per host, for registrations (MH) and handoff notifications (any host).

Named by the network description (`controller.keys`), never inline, so a
description can be shared, committed or printed without its secrets. Read
by the controller at start and by `p4handoff host --keys FILE --key-name NAME`.
The file must belong to whoever reads it and be readable by nobody else
(mode 0600 or stricter): a key any local user can read authenticates nothing.

    # p4handoff key file (mode 0600)
    hosts:
      mh1: {key: 64 hex digits, spi: 256}    # spi: optional, the MH's Mobile-Home SPI
      ch:  {key: 64 hex digits}

Keys are 16 to 64 bytes of hex (`p4handoff ctl keys` writes 32 random bytes
per host). One key per host serves both uses through domain separation
(`derive`): the registration MAC and the notification MAC never share a key.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import yaml

from p4handoff.yamlfile import FILE, DocumentError, read_yaml

SPI_HMAC_SHA256 = 256     # RFC 5944 §3.5.1 reserves SPIs 0-255; ours: HMAC-SHA256, the file's per-MH key
MIN_KEY_BYTES, MAX_KEY_BYTES = 16, 64
KEY_BYTES = 32


class KeyFileError(DocumentError):
    """A key file that cannot be used (missing, readable by others, malformed)."""

    kind = "key file"


@dataclass(frozen=True)
class HostKey:
    key: bytes
    spi: int = SPI_HMAC_SHA256


@dataclass(frozen=True)
class Keys:
    """Every host's key by host name; `source` names the file for messages."""

    hosts: dict[str, HostKey]
    source: str = "<keys>"

    def get(self, name: str) -> HostKey | None:
        return self.hosts.get(name)


def derive(key: bytes, purpose: str) -> bytes:
    """A subkey for one use (`registration`, `notification`): HMAC-SHA256(key, label)."""
    return hmac.new(key, b"p4handoff " + purpose.encode(), hashlib.sha256).digest()


def load_keys(path: str | Path) -> Keys:
    """Read and check a key file; KeyFileError names every problem."""
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise KeyFileError(str(p), [(FILE, "not found: `p4handoff ctl keys --network <description> --out "
                                           f"{p}` writes one")]) from None
    except OSError as exc:
        raise KeyFileError(str(p), [(FILE, exc.strerror or str(exc))]) from None
    if not stat.S_ISREG(st.st_mode):
        raise KeyFileError(str(p), [(FILE, "not a regular file")])
    if st.st_mode & 0o077:
        raise KeyFileError(str(p), [(FILE, f"mode {stat.S_IMODE(st.st_mode):04o} lets other users read "
                                               f"the keys; chmod 600 {p}")])
    if st.st_uid != os.geteuid():
        raise KeyFileError(str(p), [(FILE, f"owned by uid {st.st_uid}, not by this user ({os.geteuid()})")])
    return parse_keys(read_yaml(p, KeyFileError), str(p))


def parse_keys(raw: Any, source: str = "<keys>") -> Keys:
    errors: list[tuple[str, str]] = []
    hosts_raw = raw.get("hosts") if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or set(raw) - {"hosts"} or not isinstance(hosts_raw, dict):
        raise KeyFileError(source, [("hosts", "a key file is a mapping with one key, 'hosts': name -> {key, spi}")])
    hosts: dict[str, HostKey] = {}
    for name, entry in hosts_raw.items():
        where = f"hosts.{name}"
        if not isinstance(entry, dict) or set(entry) - {"key", "spi"} or "key" not in entry:
            errors.append((where, "must be {key: HEX} or {key: HEX, spi: N}"))
            continue
        try:
            key = bytes.fromhex(str(entry["key"]))
        except ValueError:
            errors.append((f"{where}.key", "not hex"))
            continue
        if not MIN_KEY_BYTES <= len(key) <= MAX_KEY_BYTES:
            errors.append((f"{where}.key", f"{len(key)} bytes; need {MIN_KEY_BYTES} to {MAX_KEY_BYTES}"))
            continue
        spi = entry.get("spi", SPI_HMAC_SHA256)
        if not isinstance(spi, int) or isinstance(spi, bool) or not 256 <= spi <= 0xFFFFFFFF:
            errors.append((f"{where}.spi", f"{spi!r}: must be 256..4294967295 (0-255 are reserved, RFC 5944)"))
            continue
        hosts[str(name)] = HostKey(key, spi)
    if errors:
        raise KeyFileError(source, errors)
    return Keys(hosts, source)


def write_keys(path: str | Path, names: Iterable[str], keep: Keys | None = None) -> Keys:
    """A key file with a fresh random key for each of `names` (a name already in `keep` keeps its key),
    created with mode 0600 before any key is written to it."""
    hosts = {n: (keep.get(n) if keep is not None and keep.get(n) is not None else HostKey(secrets.token_bytes(KEY_BYTES)))
             for n in names}
    doc = {"hosts": {n: {"key": k.key.hex(), "spi": k.spi} for n, k in hosts.items() if k is not None}}
    p = Path(path)
    tmp = p.with_name(p.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write("# p4handoff key file: keep it mode 0600\n")
        yaml.safe_dump(doc, f, sort_keys=True)
    os.rename(tmp, p)
    return parse_keys(doc, str(p))
