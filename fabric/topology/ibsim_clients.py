"""ibsim's attached clients (console ``Attached``) and reaping the dead ones (``X <id>``).

In remote mode ibsim never notices that a client process died: a killed ``ibping -S`` or a
stopped OpenSM stays registered on its port (an ``SM`` client keeps the port's IsSM flag),
and the next server on that port is refused or never sees its MADs. ``Attached`` lists every
client as ``Client N: pid P connected at "node" port 0xGUID, lid L, qp Q SM``. In remote mode
(the lab) umad2sim registers its UDP source port as the "pid" (seen here: OpenSM pid 253 in
its container registered as pid 35402, the local port of its socket to ibsim), so a client is
alive while some process on that node still has that UDP port bound (``ss -Huan``).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

_CLIENT = re.compile(
    r'^Client (?P<id>\d+): pid (?P<pid>\d+) connected at "(?P<node>[^"]*)" port 0x(?P<guid>[0-9a-fA-F]+), '
    r"lid (?P<lid>\d+), qp (?P<qp>-?\d+)\s*(?P<sm>SM)?\s*$"
)


class SimClient(BaseModel):
    """One client attached to ibsim."""

    model_config = ConfigDict(frozen=True)

    id: int
    pid: int
    node: str
    port_guid: str
    lid: int
    qp: int
    sm: bool

    @property
    def host(self) -> str:
        """The lab host of the client's node id (``gpu03:mlx5_0`` -> ``gpu03``)."""
        return self.node.split(":", 1)[0]


def parse_attached(text: str) -> list[SimClient]:
    """Clients from the console's reply to ``Attached`` (other log lines are ignored)."""
    out = []
    for line in text.splitlines():
        match = _CLIENT.match(line.strip().removeprefix("sim> ").strip())
        if match:
            out.append(
                SimClient(
                    id=int(match["id"]),
                    pid=int(match["pid"]),
                    node=match["node"],
                    port_guid="0x" + match["guid"].lower().rjust(16, "0"),
                    lid=int(match["lid"]),
                    qp=int(match["qp"]),
                    sm=bool(match["sm"]),
                )
            )
    return out


def bound_udp_ports(ss_output: str) -> set[int]:
    """Local UDP ports from ``ss -Huan`` output (``State Recv-Q Send-Q Local:Port Peer:Port``)."""
    ports = set()
    for line in ss_output.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[3].rpartition(":")[2].isdigit():
            ports.add(int(fields[3].rpartition(":")[2]))
    return ports


def dead_clients(
    clients: list[SimClient], host: str, alive_pids: Callable[[str, list[int]], set[int]]
) -> list[SimClient]:
    """Clients registered for ``host`` whose process no longer runs there.

    ``alive_pids(host, pids)`` returns the subset of ``pids`` (UDP ports in remote mode) that
    are still in use on ``host``.
    """
    mine = [c for c in clients if c.host == host]
    if not mine:
        return []
    alive = alive_pids(host, sorted({c.pid for c in mine}))
    return [c for c in mine if c.pid not in alive]
