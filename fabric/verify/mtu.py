"""MTU arithmetic: don't-fragment ping payloads, InfiniBand MTU codes."""

from __future__ import annotations

#: IPv4 header (20) + ICMP echo header (8): what a ping adds to its payload.
IPV4_ICMP_OVERHEAD = 28
#: InfiniBand MTU enumeration (PortInfo NeighborMTU / MTUCap) -> bytes.
IB_MTU_CODES = {1: 256, 2: 512, 3: 1024, 4: 2048, 5: 4096}


def df_ping_payload(mtu: int) -> int:
    """Return the largest ICMP payload that fits ``mtu`` unfragmented (``ping -M do -s``)."""
    if mtu <= IPV4_ICMP_OVERHEAD:
        raise ValueError(
            f"MTU {mtu} leaves no room for an ICMP payload (needs > {IPV4_ICMP_OVERHEAD})"
        )
    return mtu - IPV4_ICMP_OVERHEAD


def df_ping_command(address: str, mtu: int, interface: str | None = None) -> str:
    """Return a one-packet don't-fragment ping of the largest payload ``mtu`` allows."""
    iface = f" -I {interface}" if interface else ""
    return f"ping -M do -s {df_ping_payload(mtu)} -c 1 -W 2{iface} {address}"


def ib_mtu_bytes(value: str | int) -> int:
    """Return an IB MTU in bytes from ``"2048"``, ``2048`` or the enum code ``4``."""
    number = int(value)
    if number in IB_MTU_CODES.values():
        return number
    if number in IB_MTU_CODES:
        return IB_MTU_CODES[number]
    raise ValueError(
        f"{value!r} is neither an IB MTU in bytes {sorted(IB_MTU_CODES.values())} nor a code 1-5"
    )
