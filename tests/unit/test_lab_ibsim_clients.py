"""ibsim client listing and dead-client selection, on real console and ``ss`` output.

ATTACHED is ibsim 0.10's reply to ``Attached`` on a running lab stack (two OpenSMs, sm1 and
sm2); SS is ``ss -Huan`` run inside sm2's container at the same time: OpenSM (pid 253 in the
container) holds UDP port 35402, the "pid" ibsim registered for it.
"""

from __future__ import annotations

import pytest

from fabric.topology.ibsim_clients import SimClient, bound_udp_ports, dead_clients, parse_attached

ATTACHED = (
    'Client 0: pid 35402 connected at "sm2:mlx5_0" port 0x2c90302000025, lid 1, qp 0 SM\n'
    'Client 1: pid 57250 connected at "sm1:mlx5_0" port 0x2c90302000021, lid 13, qp 0 SM\n'
)
SS = (
    "ESTAB 0      0      198.18.96.19:35402 198.18.96.1:7961\n"
    "ESTAB 0      0      198.18.96.19:58398 198.18.96.1:7960\n"
)


def test_attached_lists_every_client() -> None:
    assert parse_attached(ATTACHED) == [
        SimClient(
            id=0, pid=35402, node="sm2:mlx5_0", port_guid="0x0002c90302000025", lid=1, qp=0, sm=True
        ),
        SimClient(
            id=1,
            pid=57250,
            node="sm1:mlx5_0",
            port_guid="0x0002c90302000021",
            lid=13,
            qp=0,
            sm=True,
        ),
    ]


@pytest.mark.parametrize(
    "text", ["", "ibwarn: [8250] process_packet: no one to handle pkt: class 0x81, attr 0x20\n"]
)
def test_no_clients_in_other_lines(text: str) -> None:
    assert parse_attached(text) == []


def test_client_host_is_the_node_id_host() -> None:
    assert parse_attached(ATTACHED)[0].host == "sm2"


def test_bound_udp_ports_are_local_ports() -> None:
    assert bound_udp_ports(SS) == {35402, 58398}


@pytest.mark.parametrize(("ss", "dead_ids"), [(SS, []), ("", [0])])
def test_dead_clients_are_those_whose_port_is_gone(ss: str, dead_ids: list[int]) -> None:
    clients = parse_attached(ATTACHED)
    dead = dead_clients(clients, "sm2", lambda _host, ports: bound_udp_ports(ss) & set(ports))
    assert [c.id for c in dead] == dead_ids


def test_other_hosts_clients_are_never_selected() -> None:
    asked: list[str] = []
    dead = dead_clients(
        parse_attached(ATTACHED), "gpu01", lambda host, _ports: asked.append(host) or set()
    )
    assert (dead, asked) == ([], [])
