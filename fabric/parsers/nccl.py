"""An ``NCCL_DEBUG=INFO`` log: version, the network NCCL chose, its devices and GPUDirect RDMA.

NCCL prints one ``host:pid:tid [cudaDev] NCCL INFO|WARN message`` line per event, several
processes' lines interleaved (and ``mpirun``'s ``[1,3]<stdout>:`` prefixes, or a launcher's
own lines, in between). What railyard judges (``fabric.verify.nccl``) is read here:

- ``NCCL version 2.28.9+cuda13.0``;
- ``Using network IB|Socket|Libfabric|IBext_v6|gIB|FasTrak|...`` (the transport chosen);
- ``NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB eth0:...`` (each device and its
  link layer), ``NET/IB : No device found.``, ``NET/Socket : Using [0]eth0:...``;
- ``GPU Direct RDMA Enabled|Disabled for HCA 0 'mlx5_0'`` and channels ``via NET/IB/0/GDRDMA``;
- the plugins: ``Initialized NET plugin X``, ``Failed to initialize NET plugin IB``,
  aws-ofi-nccl's ``NET/OFI Selected Provider is efa (found 16 nics)`` and its version
  (``NET/OFI Initializing aws-ofi-nccl 1.9.1-aws``);
- every ``NCCL WARN`` message;
- why NCCL did not use a network, in its own words: a variable ``set by environment``
  (``NCCL_IB_DISABLE set by environment to 1.``), a plugin it could not load
  (``NET/Plugin: Could not find: libnccl-net.so``, ``NET/Plugin : No plugin found
  (libnccl-net.so)``, ``Plugin load (libnccl-net.so) returned 2 : ...``) and the rdma-core
  symbols missing from ``libmlx5`` (``dlvsym failed on mlx5dv_reg_dmabuf_mr``: rdma-core too old
  for dma-buf).

Lines that are not NCCL's (an nccl-tests table, a program's prints) are skipped; text with no
NCCL line at all is not an NCCL log.
"""

from __future__ import annotations

import re

from fabric.parsers.common import Model, ParseError, ToolResult, build, lines

TOOL = "nccl"

_LINE = re.compile(
    r"^(?:\[[^\]]*\]<\w+>:)?\s*(?P<host>[^\s:]+):(?P<pid>\d+):(?P<tid>\d+)\s+\[(?P<dev>\d+)\]"
    r"\s+NCCL\s+(?P<level>INFO|WARN)\s?(?P<msg>.*)$"
)
_BARE = re.compile(r"NCCL\s+(?P<level>INFO|WARN)\s?(?P<msg>.*)$")
_VERSION = re.compile(r"NCCL version (?P<version>\d+\.\d+\.\d+\S*)")
_NETWORK = re.compile(r"^Using network (?P<net>\S+)")
_IB_USING = re.compile(r"^NET/IB\s*: Using (?P<rest>.*)$")
_IB_DEVICE = re.compile(
    r"\[(?P<index>\d+)\](?P<name>[\w.-]+):(?P<port>\d+)/(?P<layer>IB|RoCE)(?:/(?P<extra>[\w/]+))?"
)
_OOB = re.compile(r"OOB (?P<oob>[^\s:]+):")
_NO_DEVICE = re.compile(r"^NET/IB\s*: No device found")
_SOCKET_USING = re.compile(r"^NET/Socket\s*: Using (?P<rest>.*)$")
_SOCKET_DEVICE = re.compile(r"\[(?P<index>\d+)\](?P<name>[^\s:<]+)")
_GDR_HCA = re.compile(
    r"^NET/(?P<net>\w+)\s*: GPU Direct RDMA (?:\([^)]*\) )?(?P<state>Enabled|Disabled|enabled|"
    r"disabled) for HCA (?P<index>\d+) '(?P<name>[^']+)'"
)
_GDR_GPU = re.compile(
    r"GPU Direct RDMA (?P<state>Enabled|Disabled|enabled|disabled) for GPU \S+ / HCA (?P<index>\d+)"
)
_CHANNEL = re.compile(r" via NET/(?P<net>[^/]+)/(?P<dev>\d+)(?:/(?P<flags>\S+))?")
_PLUGIN_OK = re.compile(r"^(?:Initialized|Assigned) NET plugin (?P<name>\S+)")
_PLUGIN_FAIL = re.compile(r"^Failed to initialize NET plugin (?P<name>\S+)")
_PLUGIN_PATH = re.compile(r"^(?:Plugin Path|NET/Plugin\s*: Loaded \w+ plugin)\s*:?\s*(?P<path>\S+)")
_ENV_SET = re.compile(r"^(?P<name>NCCL_\w+) set by environment to (?P<value>.*?)\.?\s*$")
#: A NET plugin NCCL looked for and did not load: 2.19+ ``NET/Plugin: Could not find: X``,
#: older ``NET/Plugin : No plugin found (X)`` and ``Plugin load (X) returned N : ...``.
_NET_PLUGIN_MISSING = re.compile(
    r"^NET/Plugin\s*:\s*(?:Could not find:\s*(?P<a>\S+?)\.?$|.*?No plugin found \((?P<b>[^)]+)\)"
    r"|Plugin load \((?P<c>[^)]+)\) returned)"
)
_DLVSYM = re.compile(r"^dlvsym failed on (?P<symbol>\w+)")
_OFI_INIT = re.compile(r"NET/OFI Initializing aws-ofi-nccl (?P<version>\S+)")
_OFI = re.compile(
    r"NET/OFI Selected [Pp]rovider is (?P<provider>[\w-]+)(?:.*?found (?P<nics>\d+) nics?)?"
)


class IbDevice(Model):
    """One device of ``NET/IB : Using``: ``[0]mlx5_0:1/IB`` or ``/RoCE`` (``/SHARP`` extra)."""

    index: int
    name: str
    port: int
    link_layer: str
    extra: str | None = None


class GdrHca(Model):
    """A ``GPU Direct RDMA Enabled|Disabled for HCA N 'name'`` line."""

    net: str
    index: int
    name: str | None = None
    enabled: bool


class NetChannel(Model):
    """Channels connected through a network device: ``via NET/IB/0/GDRDMA`` (``count`` lines)."""

    net: str
    device: int
    gdr: bool
    count: int


class NcclLog(ToolResult):
    """What an ``NCCL_DEBUG=INFO`` log says about the network. ``NCCL WARN`` lines are listed,
    not judged: some are harmless (``fabric.verify.nccl`` judges)."""

    version: str | None = None
    hosts: list[str] = []
    networks: list[str] = []
    ib_devices: list[IbDevice] = []
    ib_no_device: bool = False
    oob_interface: str | None = None
    socket_devices: list[str] = []
    gdr: list[GdrHca] = []
    channels: list[NetChannel] = []
    plugins_initialized: list[str] = []
    plugins_failed: list[str] = []
    plugin_paths: list[str] = []
    ofi_provider: str | None = None
    ofi_nics: int | None = None
    ofi_nccl_version: str | None = None  # aws-ofi-nccl's "NET/OFI Initializing aws-ofi-nccl X"
    warnings: list[str] = []
    env: dict[
        str, str
    ] = {}  # "NCCL_IB_DISABLE set by environment to 1." -> {"NCCL_IB_DISABLE": "1"}
    net_plugins_missing: list[str] = []  # "NET/Plugin: Could not find: libnccl-net.so"
    missing_symbols: list[str] = []  # "dlvsym failed on mlx5dv_reg_dmabuf_mr" (rdma-core too old)


def _add(items: list[str], value: str) -> None:
    if value not in items:
        items.append(value)


def parse(text: str) -> NcclLog:
    """Parse an ``NCCL_DEBUG=INFO`` log (``NCCL_DEBUG_SUBSYS=INIT,NET`` or more)."""
    data: dict[str, object] = {}
    hosts: list[str] = []
    networks: list[str] = []
    devices: dict[str, dict[str, object]] = {}
    sockets: list[str] = []
    gdr: dict[tuple[str, int], dict[str, object]] = {}
    channels: dict[tuple[str, int, bool], int] = {}
    ok_plugins: list[str] = []
    bad_plugins: list[str] = []
    paths: list[str] = []
    warnings: list[str] = []
    env: dict[str, str] = {}
    missing_plugins: list[str] = []
    symbols: list[str] = []
    seen = False
    for _, line in lines(text):
        if version := _VERSION.search(line):
            data.setdefault("version", version["version"])
            seen = True
        match = _LINE.match(line) or _BARE.search(line)
        if not match:
            continue
        seen = True
        if "host" in match.groupdict():
            _add(hosts, match["host"])
        message = match["msg"].strip()
        if match["level"] == "WARN":
            _add(warnings, message)
            continue
        if setting := _ENV_SET.match(message):
            env.setdefault(setting["name"], setting["value"].strip())
            continue
        if missing := _NET_PLUGIN_MISSING.match(message):
            _add(missing_plugins, missing["a"] or missing["b"] or missing["c"])
            continue
        if symbol := _DLVSYM.match(message):
            _add(symbols, symbol["symbol"])
            continue
        if net := _NETWORK.match(message):
            _add(networks, net["net"])
        elif using := _IB_USING.match(message):
            for dev in _IB_DEVICE.finditer(using["rest"]):
                devices.setdefault(
                    dev["name"],
                    {
                        "index": int(dev["index"]),
                        "name": dev["name"],
                        "port": int(dev["port"]),
                        "link_layer": dev["layer"],
                        "extra": dev["extra"],
                    },
                )
            if oob := _OOB.search(using["rest"]):
                data.setdefault("oob_interface", oob["oob"])
        elif _NO_DEVICE.match(message):
            data["ib_no_device"] = True
        elif using := _SOCKET_USING.match(message):
            for dev in _SOCKET_DEVICE.finditer(using["rest"]):
                _add(sockets, dev["name"])
        elif hca := _GDR_HCA.match(message):
            gdr[(hca["net"], int(hca["index"]))] = {
                "net": hca["net"],
                "index": int(hca["index"]),
                "name": hca["name"],
                "enabled": hca["state"].lower() == "enabled",
            }
        elif hca := _GDR_GPU.search(message):
            gdr.setdefault(
                ("IB", int(hca["index"])),
                {"net": "IB", "index": int(hca["index"]), "enabled": hca["state"] == "Enabled"},
            )
        elif via := _CHANNEL.search(message):
            key = (via["net"], int(via["dev"]), "GDRDMA" in (via["flags"] or ""))
            channels[key] = channels.get(key, 0) + 1
        elif plugin := _PLUGIN_OK.match(message):
            _add(ok_plugins, plugin["name"])
        elif plugin := _PLUGIN_FAIL.match(message):
            _add(bad_plugins, plugin["name"])
        elif plugin := _PLUGIN_PATH.match(message):
            _add(paths, plugin["path"])
        elif init := _OFI_INIT.search(message):
            data.setdefault("ofi_nccl_version", init["version"])
        elif ofi := _OFI.search(message):
            data.setdefault("ofi_provider", ofi["provider"])
            if ofi["nics"]:
                data.setdefault("ofi_nics", int(ofi["nics"]))
    if not seen:
        raise ParseError(TOOL, 0, "'NCCL INFO' lines (run with NCCL_DEBUG=INFO)")
    data |= {
        "hosts": hosts,
        "networks": networks,
        "ib_devices": sorted(devices.values(), key=lambda d: (d["index"], d["name"])),  # type: ignore[arg-type,return-value]
        "socket_devices": sockets,
        "gdr": [gdr[key] for key in sorted(gdr)],
        "channels": [
            {"net": n, "device": d, "gdr": g, "count": c}
            for (n, d, g), c in sorted(channels.items())
        ],
        "plugins_initialized": ok_plugins,
        "plugins_failed": bad_plugins,
        "plugin_paths": paths,
        "warnings": warnings,
        "env": env,
        "net_plugins_missing": missing_plugins,
        "missing_symbols": symbols,
    }
    return build(TOOL, NcclLog, data, text=text)
