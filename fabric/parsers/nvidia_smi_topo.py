"""``nvidia-smi topo -m``: the PCIe/NVLink relation between every GPU and NIC.

The header row names the devices (``GPU0 ... NIC0 ...``, or ``mlx5_0 ...`` on older drivers)
and then ``CPU Affinity``, ``NUMA Affinity``, ``GPU NUMA ID``; one row per device holds its
relation to each (``X``, ``SYS``, ``NODE``, ``PHB``, ``PXB``, ``PIX``, ``NV#``) and its
affinities. The ``NIC Legend`` maps ``NIC0`` to its RDMA device (``mlx5_0``). The header may
carry ANSI underline codes (as printed on a terminal); they are dropped. Lines before the
header (a shell prompt, a driver warning) are kept as ``preamble``, not read. ``nvidia-smi
topo -p2p`` output (its legend ``OK = Status Ok``, ``CNS``, ``GNS`` ...) is refused: it has
the same shape and says nothing about PCIe paths.
"""

from __future__ import annotations

import re

from fabric.parsers.common import Model, ParseError, ToolResult, build, lines

TOOL = "nvidia_smi_topo"

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_DEVICE = re.compile(r"^(?:GPU\d+|NIC\d+|mlx\d+_\S+|\w+\d+)$")
_RELATION = re.compile(r"^(?:X|SYS|NODE|PHB|PXB|PIX|NV\d+|SOC)$")
_LEGEND = re.compile(r"^\s*(?:Legend:|NIC Legend:|X\s+=|[A-Z#]+\s+=\s)")
_NIC_NAME = re.compile(r"^\s*(?P<nic>NIC\d+):\s*(?P<name>\S+)\s*$")
#: The legend of ``nvidia-smi topo -p2p r|w|n|a|p``: peer-to-peer status, not ``topo -m``.
_P2P_LEGEND = re.compile(r"^\s*(?:OK\s+=\s+Status Ok|CNS\s+=\s+Chipset not supported)")


class TopoRow(Model):
    """One device's row: its relation to every column device, and its affinities."""

    device: str
    relations: dict[str, str]
    cpu_affinity: str | None = None
    numa_affinity: str | None = None


class NvidiaSmiTopo(ToolResult):
    """The matrix (``rows``), the column devices and the NIC legend (``NIC0`` -> ``mlx5_0``)."""

    columns: list[str] = []
    rows: list[TopoRow] = []
    nic_names: dict[str, str] = {}
    preamble: list[str] = []

    @property
    def gpus(self) -> list[str]:
        """GPU row names (``GPU0`` ...)."""
        return [r.device for r in self.rows if r.device.startswith("GPU")]

    def nic_column(self, device: str) -> str | None:
        """The column of an RDMA device (``mlx5_0`` -> ``NIC0``; itself on older drivers)."""
        if device in self.columns:
            return device
        return next((nic for nic, name in self.nic_names.items() if name == device), None)

    def relation(self, gpu: str, device: str) -> str | None:
        """How ``gpu`` (``GPU0``) reaches ``device`` (``mlx5_0`` or ``NIC0``), or None."""
        column = self.nic_column(device)
        row = next((r for r in self.rows if r.device == gpu), None)
        return row.relations.get(column) if row and column else None


def parse(text: str) -> NvidiaSmiTopo:
    """Parse ``nvidia-smi topo -m`` output."""
    columns: list[str] = []
    rows: list[dict[str, object]] = []
    names: dict[str, str] = {}
    preamble: list[str] = []
    legend = False
    for lineno, raw in lines(text):
        line = _ANSI.sub("", raw)
        if not line.strip():
            continue
        if _P2P_LEGEND.match(line):
            raise ParseError(
                TOOL,
                lineno,
                "nvidia-smi topo -m's legend (this is 'nvidia-smi topo -p2p' output: peer-to-peer "
                "status, not the PCIe paths)",
                line,
            )
        if match := _NIC_NAME.match(line):
            names[match["nic"]] = match["name"]
            legend = True
            continue
        if _LEGEND.match(line):
            legend = True
            continue
        if not columns and line[:1].isspace():
            head = re.split(r"\s(?:CPU Affinity|NUMA Affinity)", line)[0].split()
            if head and all(_DEVICE.match(t) for t in head):
                columns = head
                continue
        tokens = line.split()
        if columns and tokens and _DEVICE.match(tokens[0]):
            cells = tokens[1 : 1 + len(columns)]
            if len(cells) < len(columns) or not all(_RELATION.match(c) for c in cells):
                raise ParseError(
                    TOOL,
                    lineno,
                    f"{len(columns)} relations (X, SYS, NODE, PHB, PXB, PIX, NV#)",
                    line,
                )
            rest = tokens[1 + len(columns) :]
            rows.append(
                {
                    "device": tokens[0],
                    "relations": dict(zip(columns, cells, strict=True)),
                    "cpu_affinity": rest[0] if rest else None,
                    "numa_affinity": rest[1] if len(rest) > 1 else None,
                }
            )
            continue
        if not columns and not rows and not legend:  # before the header: not the matrix
            preamble.append(line.strip())
            continue
        if not legend:
            raise ParseError(
                TOOL, lineno, "the 'GPU0 ...' header, a device row or the legend", line
            )
    if not columns and not names:
        raise ParseError(TOOL, 0, "the 'GPU0 ... CPU Affinity' header row")
    data = {"columns": columns, "rows": rows, "nic_names": names, "preamble": preamble}
    return build(TOOL, NvidiaSmiTopo, data, text=text)
