"""Sans-IO TCP: connection state machine, NewReno sender, reassembling receiver (see docs/hosts-tcp.md)."""
from hosts.tcp.config import TcpConfig
from hosts.tcp.connection import State, TcpConnection, TcpError, rst_for, unwrap
from hosts.tcp.trace import TraceRecord, TraceSink

__all__ = ["TcpConfig", "TcpConnection", "TcpError", "State", "TraceRecord", "TraceSink", "rst_for", "unwrap"]
