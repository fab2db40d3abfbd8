"""The hand-off's provider topology play (playbooks/provider_topology.yml, imported by site.yml)
run by ansible-playbook on this machine: two "VMs" whose metadata reading prints Google's
documented ``physical_host_topology`` answers get the topology.conf the check expects, handed
to every Slurm host; a provider that places nobody leaves Slurm without a topology."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from fabric.state import REPO_ROOT
from fabric.topology.cloud import gce_instances_from_metadata, gce_topology_graph
from fabric.topology.render import render

FIXTURES = REPO_ROOT / "tests/fixtures"
SHOW = """\
- name: Show what each Slurm host was handed
  hosts: all
  gather_facts: false
  tasks:
    - name: Write it beside the inventory
      ansible.builtin.copy:
        content: "{{ slurm_topology_conf | default('UNSET') }}"
        dest: "{{ inventory_dir }}/conf-{{ inventory_hostname }}.txt"
        mode: "0644"
      delegate_to: localhost
"""


def _run(tmp_path: Path, readings: dict[str, str]) -> dict[str, str]:
    hosts = {}
    for host, text in readings.items():
        (tmp_path / f"{host}.txt").write_text(text)
        hosts[host] = {"railyard_placement_command": f"cat {tmp_path / host}.txt"}
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = {
        "all": {
            "vars": local
            | {
                "railyard_topology_provider": "gcp",
                "railyard_topology_region": "europe-west1",
                "railyard_topology_nodes": ",".join(readings),
                "railyard_topology_args": ["--plugin", "tree"],
            },
            "children": {
                "compute": {"hosts": hosts},
                "slurm_controller": {"hosts": {"head1": {}}},
            },
        }
    }
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "show.yml").write_text(SHOW)
    done = subprocess.run(
        [
            str(Path(sys.executable).with_name("ansible-playbook")),
            "-i",
            str(tmp_path / "inventory.yml"),
            str(REPO_ROOT / "playbooks/provider_topology.yml"),
            str(tmp_path / "show.yml"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=REPO_ROOT,
        env={
            "PATH": f"{Path(sys.executable).parent}:/usr/sbin:/usr/bin:/sbin:/bin",
            "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"),
            "HOME": str(tmp_path),
        },
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    return {h: (tmp_path / f"conf-{h}.txt").read_text() for h in [*readings, "head1"]}


def test_documented_placements_become_every_slurm_hosts_topology(tmp_path: Path) -> None:
    listed = json.loads(
        (FIXTURES / "gce_instances_list__ai_hypercomputer__example.json").read_text()
    )
    readings = {
        "vm-01": json.dumps(listed["items"][0]["resourceStatus"]["physicalHostTopology"]),
        "vm-02": (
            FIXTURES / "gce_metadata_physical_host_topology__ai_hypercomputer__example.json"
        ).read_text(),
    }
    confs = _run(tmp_path, readings)
    expected = render(gce_topology_graph(gce_instances_from_metadata(readings)), "tree")
    assert confs == dict.fromkeys(confs, expected)
    assert json.loads((tmp_path / "placement.json").read_text())["vm-02"]["rc"] == 0


def test_nobody_placed_leaves_slurm_without_topology(tmp_path: Path) -> None:
    confs = _run(tmp_path, {"vm-01": "", "vm-02": ""})
    assert confs == dict.fromkeys(confs, "")
