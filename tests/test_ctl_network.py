"""Network description: the example loads; bad files list every problem by field path."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from p4handoff.controller.network import NetworkError, load_network, parse_network
from p4handoff.wire import DSCP_IPF_PRIORITY_DEFAULT

EXAMPLE = Path(__file__).resolve().parent.parent / "topo" / "three-switch.yaml"


def example() -> dict:
    return yaml.safe_load(EXAMPLE.read_text())


def errors_of(raw) -> dict[str, str]:
    with pytest.raises(NetworkError) as info:
        parse_network(raw)
    return dict(info.value.errors)


def test_example_loads_with_derived_fields():
    net = load_network(EXAMPLE)
    assert net.gateway.name == "gw"
    assert [s.name for s in net.base_stations] == ["bs1", "bs2"]
    assert net.priority_dscp == DSCP_IPF_PRIORITY_DEFAULT
    assert net.controller.address == "192.0.2.1"
    mh1 = net.mobile("mh1")
    assert mh1 is net.mobile("10.0.1.1")
    assert mh1.cell_address("bs2") == "10.0.12.1" and mh1.cell_address("gw") is None
    assert net.mobile("mh2").correspondents == ("ch",)       # default: every fixed host
    aqm = net.switch("bs1").port(1).aqm
    assert (aqm.mode, aqm.min_th, aqm.max_th, aqm.wq_shift) == ("mred", 100, 200, 9)
    assert (aqm.limit, aqm.dummy_threshold, aqm.mean_pkt_time_us) == (300, 150, 2048)   # dummies: limit/2
    assert net.fixed("ch").gateway == "10.0.0.254"
    assert net.peered("bs1", "bs2") and net.peered("gw", "bs2") and not net.peered("bs1", "ch")
    # pipeline paths are resolved against the description's directory
    assert Path(net.controller.p4info).is_absolute()


def test_grpc_may_be_a_unix_socket():
    raw = example()
    raw["switches"][1]["grpc"] = "unix:/tmp/p4h/bs1.grpc"
    assert parse_network(raw).switch("bs1").grpc == "unix:/tmp/p4h/bs1.grpc"


def test_cell_ids_default_to_free_ids_in_file_order():
    raw = example()
    del raw["switches"][1]["cell_id"]          # bs1 unspecified, bs2 keeps 2
    net = parse_network(raw)
    assert net.switch("bs1").cell_id == 1 and net.switch("bs2").cell_id == 2
    raw["switches"][2]["cell_id"] = 1          # bs2 takes 1: bs1 gets the next free id
    net = parse_network(raw)
    assert net.switch("bs1").cell_id == 2


def test_all_errors_are_collected_each_with_its_path():
    raw = example()
    raw["switches"][1]["ports"][1]["peer"] = "bs9"
    raw["switches"][2]["grpc"] = "localhost"
    raw["switches"][2]["ports"][0]["aqm"]["max_th"] = 50            # below min_th 100
    raw["mobile_hosts"][0]["correspondents"] = ["ch", "nobody"]
    raw["priority_dscp"] = 1                                         # DSCP LE
    raw["bogus"] = 1
    errs = errors_of(raw)
    assert "unknown switch 'bs9'" in errs["switches[1].ports[1].peer"]
    assert "host:port" in errs["switches[2].grpc"]
    assert "above min_th" in errs["switches[2].ports[0].aqm.max_th"]
    assert "unknown fixed host 'nobody'" in errs["mobile_hosts[0].correspondents[1]"]
    assert "reserved" in errs["priority_dscp"]
    assert "unknown field" in errs["bogus"]


def test_message_lists_every_error_on_its_own_line(tmp_path):
    raw = example()
    raw["switches"][0]["mac"] = "zz"
    raw["switches"][1]["address"] = "10.0.1.300"
    f = tmp_path / "net.yaml"
    f.write_text(yaml.safe_dump(raw))
    with pytest.raises(NetworkError) as info:
        load_network(f)
    text = str(info.value)
    assert text.startswith(f"{f}: 2 error(s)")
    assert "  switches[0].mac: must be a MAC address" in text
    assert "  switches[1].address: must be an IPv4 address" in text


@pytest.mark.parametrize("mutate, path, message", [
    (lambda r: r["switches"][0].update(role="bs", cell_id=3), "switches", "exactly one switch must have role 'gateway'"),
    (lambda r: r["switches"][1].update(role="router"), "switches[1].role", "must be 'gateway' or 'bs'"),
    (lambda r: r["switches"][2].update(name="bs1"), "switches[2].name", "duplicate switch name 'bs1'"),
    (lambda r: r["switches"][2].update(mac="02:00:00:00:00:02"), "switches[2].mac", "duplicate switch MAC"),
    (lambda r: r["switches"][2].update(grpc="127.0.0.1:50052"), "switches[2].grpc", "duplicate (grpc, device_id)"),
    (lambda r: r["switches"][2].update(grpc="unix:relative.sock"), "switches[2].grpc", "unix:/absolute/path"),
    (lambda r: r["switches"][2].update(cell_id=1), "switches[2].cell_id", "duplicate cell id 1"),
    (lambda r: r["switches"][0].update(cell_id=7), "switches[0].cell_id", "only base stations"),
    (lambda r: r["switches"][1].update(mac="01:00:5e:00:00:01"), "switches[1].mac", "multicast MAC"),
    (lambda r: r["switches"][1].update(device_id=-1), "switches[1].device_id", "out of range"),
    (lambda r: r["switches"][1].pop("address"), "switches[1].address", "missing required field"),
    (lambda r: r["switches"][1]["ports"][0].update(number=2), "switches[1].ports[1].number", "duplicate port number 2"),
    (lambda r: r["switches"][1]["ports"][0].update(number=511), "switches[1].ports[0].number", "out of range"),
    (lambda r: r["switches"][1]["ports"][1].update(role="wifi"), "switches[1].ports[1].role", "access, peer, core"),
    (lambda r: r["switches"][0]["ports"][0].update(role="access"), "switches[0].ports[0].role", "no access ports"),
    (lambda r: r["switches"][1]["ports"][1].pop("peer"), "switches[1].ports[1].peer", "must name the neighbour"),
    (lambda r: r["switches"][0]["ports"][0].update(peer="bs1"), "switches[0].ports[0].peer", "only peer ports"),
    (lambda r: r["switches"][1]["ports"][2].update(peer="bs1"), "switches[1].ports[2].peer", "cannot peer with itself"),
    (lambda r: r["switches"][1]["ports"][2].update(peer="gw"), "switches[1].ports[2].peer", "one port per neighbour"),
    (lambda r: r["switches"][2]["ports"].pop(2), "switches[1].ports[2].peer", "no peer port back"),
    (lambda r: r["switches"][0]["ports"].pop(2), "switches[2]", "not peered with the gateway"),
    (lambda r: r["switches"][1]["ports"].pop(0), "switches[1].ports", "no access port"),
    (lambda r: r["switches"][0]["ports"][0].update(aqm={"mode": "red"}), "switches[0].ports[0].aqm", "access ports only"),
    (lambda r: r["switches"][1]["ports"][0]["aqm"].update(mode="codel"), "switches[1].ports[0].aqm.mode", "droptail, red, mred"),
    (lambda r: r["switches"][1]["ports"][0]["aqm"].update(w_q=0.002), "switches[1].ports[0].aqm.w_q", "nearest: 0.001953125"),
    (lambda r: r["switches"][1]["ports"][0]["aqm"].pop("max_p"), "switches[1].ports[0].aqm.max_p", "required for mode mred"),
    (lambda r: r["switches"][1]["ports"][0]["aqm"].update(max_p=0), "switches[1].ports[0].aqm.max_p", "out of range"),
    (lambda r: r["switches"][1]["ports"][0]["aqm"].update(max_th=400), "switches[1].ports[0].aqm.max_th", "exceeds the queue limit"),
    (lambda r: r["switches"][1]["ports"][0]["aqm"].update(mode="drop-tail"), "switches[1].ports[0].aqm.mode",
     "'drop-tail' is now spelled 'droptail'"),
    (lambda r: r["switches"][1]["ports"][0].update(aqm={"mode": "droptail", "min_th": 3}),
     "switches[1].ports[0].aqm.min_th", "droptail"),
    (lambda r: r["switches"][1]["ports"][0].update(aqm={"limit": 10, "dummy_threshold": 11}),
     "switches[1].ports[0].aqm.dummy_threshold", "exceeds the queue limit"),
    (lambda r: r["fixed_hosts"][0].update(switch="core9"), "fixed_hosts[0].switch", "unknown switch"),
    (lambda r: r["fixed_hosts"][0].update(gateway="10.0.0.1"), "fixed_hosts[0].gateway", "duplicate address"),
    (lambda r: r["fixed_hosts"][0].update(gateway="gw"), "fixed_hosts[0].gateway", "IPv4 address"),
    (lambda r: r["switches"][1]["ports"][0]["aqm"].update(mean_pkt_time_us=0), "switches[1].ports[0].aqm.mean_pkt_time_us",
     "out of range"),
    (lambda r: r["switches"][1]["ports"][0].update(aqm={"mode": "droptail", "mean_pkt_time_us": 5}),
     "switches[1].ports[0].aqm.mean_pkt_time_us", "droptail"),
    (lambda r: r["fixed_hosts"][0].update(port=9), "fixed_hosts[0].port", "has no port 9"),
    (lambda r: r["fixed_hosts"][0].update(port=2), "fixed_hosts[0].port", "is a peer port"),
    (lambda r: r["mobile_hosts"][1].update(address="10.0.1.1"), "mobile_hosts[1].address", "duplicate address"),
    (lambda r: r["mobile_hosts"][1].update(address="10.0.1.254"), "access_gateway.address", "duplicate address"),
    (lambda r: r["mobile_hosts"][1].update(name="ch"), "mobile_hosts[1].name", "share one namespace"),
    (lambda r: r["mobile_hosts"][0]["cell_addresses"].update(gw="10.0.9.9"), "mobile_hosts[0].cell_addresses.gw",
     "not a base station"),
    (lambda r: r["mobile_hosts"][0]["cell_addresses"].update(bs1="10.0.1.1"), "mobile_hosts[0].cell_addresses.bs1",
     "differ from the home address"),
    (lambda r: r["mobile_hosts"][0].update(buffer_packets=10**9), "mobile_hosts[0].buffer_packets", "out of range"),
    (lambda r: r["mobile_hosts"][0].update(address="224.0.0.1"), "mobile_hosts[0].address", "not a unicast"),
    (lambda r: r.update(buffer={"per_mh_packets": 64, "total_packets": 10}), "buffer.total_packets", "below per_mh"),
    (lambda r: r.update(controller={"election_id": 0}), "controller.election_id", "out of range"),
    (lambda r: r.update(controller={"hold": 1}), "controller.hold", "unknown field"),
    (lambda r: r["controller"].update(address="10.0.0.1"), "fixed_hosts[0].address", "duplicate address"),
    (lambda r: r["controller"].pop("keys"), "controller.keys", "controller.auth: none"),
    (lambda r: r["controller"].update(auth="none"), "controller.auth", "remove one of the two"),
    (lambda r: r["controller"].update(auth="off"), "controller.auth", "'keys' or 'none'"),
    (lambda r: r.pop("access_gateway"), "access_gateway", "missing required field"),
    (lambda r: r.update(switches=[]), "switches", "at least a gateway"),
    (lambda r: r.update(mobile_hosts={"mh1": {}}), "mobile_hosts", "must be a list"),
])
def test_bad_description(mutate, path, message):
    raw = copy.deepcopy(example())
    mutate(raw)
    errs = errors_of(raw)
    assert path in errs, f"no error at {path}; got {errs}"
    assert message in errs[path]


@pytest.mark.parametrize("text, message", [
    ("switches: [\n", "not valid YAML"),
    ("switches: []\nswitches: []\n", "duplicate key 'switches'"),
])
def test_unparseable_files_name_the_problem(tmp_path, text, message):
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(NetworkError) as info:
        load_network(f)
    assert message in str(info.value)


def test_missing_file_and_non_mapping_root(tmp_path):
    with pytest.raises(NetworkError, match="absent.yaml: no such file$"):
        load_network(tmp_path / "absent.yaml")
    assert "must be a mapping" in errors_of(["a", "list"])[""]
