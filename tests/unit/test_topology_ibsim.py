"""render_net output as ibsim 0.10 reads it (the integration test runs it in real ibsim)."""

from __future__ import annotations

import yaml

from fabric.graph import FabricGraph
from fabric.parsers.ibnetdiscover import parse
from fabric.spec import ClusterSpec
from fabric.state import REPO_ROOT
from fabric.topology.from_spec import graph_from_spec
from fabric.topology.ibsim import render_net, sim_host, sim_speed, simulated


def lab() -> FabricGraph:
    data = yaml.safe_load((REPO_ROOT / "Pulumi.lab.yaml").read_text())
    return graph_from_spec(ClusterSpec.model_validate(data["config"]["railyard:cluster"]))


def test_ca_record_has_host_device_description_and_guid() -> None:
    net = render_net(lab())
    assert (
        'caguid=0x0002c90302000000\nCa\t1 "gpu01:mlx5_0"\t# "gpu01 mlx5_0"\n[1]\t"leaf01"[1]\tw=2 s=7 e=7\n'
        in net
    )


def test_switch_record_lists_every_cabled_port() -> None:
    net = render_net(lab())
    block = net.split('Switch\t64 "spine01"')[1].split("\n\n")[0]
    assert [line.split("\t")[0] for line in block.splitlines()[1:]] == [
        f"[{p}]" for p in range(1, 9)
    ]


def test_every_line_fits_ibsim_line_buffer() -> None:
    assert max(len(line) for line in render_net(lab()).splitlines()) <= 255


def test_sim_host_is_the_ca_node_id() -> None:
    assert f'"{sim_host("sm2", "mlx5_0")}"' in render_net(lab())


def test_ndr_is_simulated_as_hdr() -> None:
    assert (sim_speed("NDR"), sim_speed("EDR"), sim_speed("FDR10")) == ("HDR", "EDR", "QDR")
    assert {(link.speed, link.rate_gbps) for link in simulated(lab()).links} == {("HDR", 200.0)}


def test_discovered_lab_fixture_matches_the_rendered_net() -> None:
    """The captured ibnetdiscover output of this net has the same GUIDs, ports and descriptions."""
    declared = simulated(lab())
    found = parse((REPO_ROOT / "tests/fixtures/ibnetdiscover__ibsim_lab__1.txt").read_text())
    assert found.cas.keys() == declared.cas.keys()
    assert {c.description for c in found.cas.values()} == {
        c.description for c in declared.cas.values()
    }

    def key(g):
        return {
            tuple(sorted([(ln.a_guid, ln.a_port), (ln.b_guid, ln.b_port)])) + (ln.width, ln.speed)
            for ln in g.links
        }

    assert key(found) == key(declared)
