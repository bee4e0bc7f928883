"""Sans-IO TCP: connection state machine, NewReno sender, reassembling receiver (see docs/hosts-tcp.md)."""
from p4handoff.hosts.tcp.config import TcpConfig
from p4handoff.hosts.tcp.connection import State, TcpConnection, rst_for, unwrap
from p4handoff.hosts.tcp.errors import TcpError
from p4handoff.hosts.tcp.trace import TraceRecord, TraceSink

__all__ = ["TcpConfig", "TcpConnection", "TcpError", "State", "TraceRecord", "TraceSink", "rst_for", "unwrap"]
