"""What the nccl_tests role leaves: the declared binaries linked, a refused tarball unused, a
build with no MPI prefix stopped before it downloaded anything."""

from __future__ import annotations

import os

import pytest
import testinfra.utils.ansible_runner

testinfra_hosts = testinfra.utils.ansible_runner.AnsibleRunner(
    os.environ["MOLECULE_INVENTORY_FILE"]
).get_hosts("all")

BINARIES = ["all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "alltoall_perf"]


@pytest.mark.parametrize("name", BINARIES)
def test_declared_binary_is_linked_where_the_checks_run_it(host, name: str) -> None:
    link = host.file(f"/opt/railyard/nccl-tests/bin/{name}")
    assert link.is_symlink
    assert link.linked_to == f"/opt/site/nccl-tests/build/{name}"
    assert host.run(f"/opt/railyard/nccl-tests/bin/{name}").rc == 0


def test_refused_tarball_was_neither_unpacked_nor_built(host) -> None:
    assert not host.file("/var/tmp/refused/src/nccl-tests").exists
    assert not host.file("/var/tmp/refused/nccl-tests.tar.gz").exists
    assert not host.file("/opt/refused/bin/all_reduce_perf").exists


def test_a_build_without_mpi_stopped_before_the_download(host) -> None:
    assert not host.file("/var/tmp/no-mpi").exists
    assert not host.file("/opt/no-mpi/bin/all_reduce_perf").exists
