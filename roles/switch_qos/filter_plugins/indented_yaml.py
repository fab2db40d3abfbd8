"""``to_indented_yaml``: YAML with block sequences indented under their key (yamllint's default).

Ansible's ``to_nice_yaml`` writes ``key:\\n- item`` (PyYAML's indentless sequences), which
yamllint's ``indentation`` rule rejects; rendered files should pass the project's linters.
"""

from __future__ import annotations

import json

import yaml


class _IndentedDumper(yaml.SafeDumper):
    def increase_indent(self, flow=False, indentless=False):  # noqa: D401 - PyYAML hook
        return super().increase_indent(flow, False)

    def ignore_aliases(self, data):
        return True


def to_indented_yaml(data, indent: int = 2) -> str:
    """Dump plain data (dicts, lists, scalars) as block YAML with indented sequences.

    The JSON round trip turns Ansible's tagged str/int/dict subclasses into plain types
    that the safe dumper can represent.
    """
    return yaml.dump(
        json.loads(json.dumps(data)),
        Dumper=_IndentedDumper,
        indent=indent,
        default_flow_style=False,
        sort_keys=False,
        allow_unicode=True,
        width=1000,
    )


class FilterModule:
    """Ansible entry point."""

    def filters(self):
        return {"to_indented_yaml": to_indented_yaml}
