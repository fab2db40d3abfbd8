"""``bench.sweep --net FILE`` faults the nodes a net file names, whatever it calls them
(issue 42: "ibsim refused Unlink gpu00032:mlx5_0[1]: nodeid not found" on a file naming its
nodes "gpu00032 mlx5_0"). The served fabric is what ibnetdiscover reported against ibsim
serving ``tests/fixtures/ibsim/defaults.net`` (``ibnetdiscover__ibsim_defaults__1.txt``,
SOURCES.md); a public ibnetdiscover capture is a net file ibsim reads as it is."""

from __future__ import annotations

import pytest

from bench.sweep.__main__ import vantage_host
from bench.sweep.netfile import NetFileError, ca_ids, first_ca, parse_net, record_of, switch_end
from fabric.lab.simfabric import Faults
from fabric.parsers.ibnetdiscover import parse
from fabric.state import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"
NET = (FIXTURES / "ibsim" / "defaults.net").read_text()
SERVED = parse((FIXTURES / "ibnetdiscover__ibsim_defaults__1.txt").read_text())


def test_node_ids_and_descriptions_come_from_the_file() -> None:
    nodes = parse_net(NET)
    assert first_ca(nodes).node_id == "gpu01 mlx5_0"  # the vantage: SIM_HOST is the id
    by_id = {n.node_id: n for n in nodes}
    assert by_id["gpu02 mlx5_0"].description == "gpu02 mlx5_0"  # no comment: the id
    assert by_id["h10"].description == "ubuntu mlx5_0"
    assert by_id["leaf01"].links[10] == ("h10", 1)


def test_faults_are_named_as_the_file_names_them() -> None:
    """The faults ibsim refused before: the pulled CA is Unlinked by its record id ("h10",
    not "ubuntu:mlx5_0"), the counter goes on the switch id and port its port line names."""
    nodes = parse_net(NET)
    records = ca_ids(nodes, SERVED)
    vantage = first_ca(nodes).node_id
    assert vantage_host(SERVED, records, vantage) == "gpu01"
    faults = Faults.pick(SERVED, vantage_host(SERVED, records, vantage))
    pulled = record_of(records, faults.pulled.ca.guid, faults.pulled.ca.description)
    assert (pulled.node_id, faults.pulled.ca_port) == ("h10", 1)
    counter = record_of(records, faults.counter.ca.guid, faults.counter.ca.description)
    assert switch_end(counter, faults.counter.ca_port) == ("leaf01", faults.counter.switch_port)
    assert all(":" not in n.node_id for n in records.values() if " " in n.node_id)


def test_two_cas_with_one_description_cannot_be_faulted_by_it() -> None:
    records = ca_ids(parse_net(NET), SERVED)
    assert "0xb8e92403009cd400" not in records  # "localhost mlx5_0" twice in the file
    with pytest.raises(NetFileError, match="'localhost mlx5_0'"):
        record_of(records, "0xb8e92403009cd400", "localhost mlx5_0")


def test_a_public_capture_read_as_a_net_file() -> None:
    """ibnetdiscover's own output (ids "H-<guid>", descriptions "r-ufm216 HCA-2")."""
    text = (FIXTURES / "ibnetdiscover__ibtopotool__3.txt").read_text()
    nodes = parse_net(text)
    records = ca_ids(nodes, parse(text))
    assert first_ca(nodes).node_id == "H-0002c903003421b0"
    assert records["0xe41d2d030061f957"].node_id == "H-e41d2d030061f957"
    assert switch_end(records["0xe41d2d030061f957"], 1) == ("S-e41d2d030003e470", 34)
