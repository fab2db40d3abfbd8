"""Filters of ``playbooks/remove-node.yml``: a thin adapter over :mod:`fabric.hostlist` (railyard
is installed in the .venv that runs Ansible).

``hostlist_without(expr, names)``        a Slurm host list without ``names`` ("" when none is left;
                                          ``ALL`` stays ``ALL``)
``partitions_without(parts, names)``     slurm_partitions with ``names`` out of each one's ``nodes``;
                                          a partition left with no node is dropped
``topology_conf_without(text, names)``   topology.conf (tree or block) without ``names``: each
                                          ``Nodes=`` list shortened, a switch or block left with no
                                          node dropped, and dropped switches taken out of
                                          ``Switches=`` lists
"""

from __future__ import annotations

import re

from fabric.hostlist import compress, expand

_FIELD = re.compile(r"\b(Nodes|Switches)=(\S+)")
_NAME = re.compile(r"\b(?:SwitchName|BlockName)=(\S+)")


def hostlist_without(expr: str, names: list[str] | str) -> str:
    """``hostlist_without("gpu[01-04]", ["gpu02"])`` -> ``gpu[01,03-04]``."""
    if expr.strip().upper() == "ALL":
        return expr
    gone = set(expand(names) if isinstance(names, str) else names)
    return compress(h for h in expand(expr) if h not in gone)


def partitions_without(parts: list[dict], names: list[str] | str) -> list[dict]:
    """``[{"name": "gpu", "nodes": "gpu[01-04]", ...}]`` without ``names`` in any ``nodes``."""
    out = []
    for part in parts or []:
        left = hostlist_without(str(part["nodes"]), names)
        if left:
            out.append({**part, "nodes": left})
    return out


def topology_conf_without(text: str, names: list[str] | str) -> str:
    """topology.conf without ``names`` (see the module docstring); comments are kept."""
    lines = text.splitlines()
    dropped: set[str] = set()
    kept: list[str] = []
    for line in lines:
        if line.lstrip().startswith("#") or "Nodes=" not in line:
            kept.append(line)
            continue
        left = ""

        def shorten(match: re.Match[str]) -> str:
            nonlocal left
            left = hostlist_without(match.group(2), names)
            return f"{match.group(1)}={left}"

        line = _FIELD.sub(lambda m: shorten(m) if m.group(1) == "Nodes" else m.group(0), line)
        if not left:
            name = _NAME.search(line)
            if name:
                dropped.add(name.group(1))
            continue
        kept.append(line)
    if dropped:
        kept = [_drop_switches(line, dropped) for line in kept]
        kept = [line for line in kept if line is not None]
    return "\n".join(kept) + ("\n" if text.endswith("\n") else "")


def _drop_switches(line: str, dropped: set[str]) -> str | None:
    """``Switches=`` without the dropped switches; None when none of them is left."""
    match = _FIELD.search(line)
    if line.lstrip().startswith("#") or not match or match.group(1) != "Switches":
        return line
    left = compress(s for s in expand(match.group(2)) if s not in dropped)
    if not left:
        return None
    return line[: match.start(2)] + left + line[match.end(2) :]


class FilterModule:
    """Ansible's entry point."""

    def filters(self) -> dict[str, object]:
        return {
            "hostlist_without": hostlist_without,
            "partitions_without": partitions_without,
            "topology_conf_without": topology_conf_without,
        }
