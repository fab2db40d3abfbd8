"""The RoCE GID index an RDMA tool must use, read from ``show_gids`` (not assumed to be 3).

RoCE v2 over IPv4 is what NCCL (``NCCL_IB_GID_INDEX``) and perftest (``-x``) need on a routed
Ethernet fabric; its index depends on the order the kernel filled the GID table in.
"""

from __future__ import annotations

from fabric.parsers.show_gids import ShowGidsReport


def roce_gid_index(gids: ShowGidsReport, device: str, port: int = 1) -> int | None:
    """The lowest GID index of ``device``'s ``port`` holding a RoCE v2 IPv4 entry, or None."""
    found = [
        g.index
        for g in gids.gids
        if g.device == device and g.port == port and g.version == "v2" and g.ipv4
    ]
    return min(found) if found else None
