"""Testinfra checks of the switch_qos rendering (local connection: the controller).

The role renders each inventory switch's configuration, and these checks compare it with the
reviewed golden files in roles/switch_qos/tests/golden/.
"""

import os
from pathlib import Path

import pytest

RENDERED = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "rendered"
GOLDEN = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"]) / "tests" / "golden"
FILES = {
    "leaf-sonic": "sonic_qos.yml",
    "leaf-cumulus": "nvue_qos.commands",
    "spine-sonic-pcp": "sonic_qos.yml",
    "leaf-linux": "linux_qos.json",
}


@pytest.fixture
def switch(host):
    return host.backend.get_hostname()


def test_rendered_file_matches_golden(host, switch):
    rendered = host.file(str(RENDERED / switch / FILES[switch]))
    assert rendered.exists
    assert rendered.content_string == (GOLDEN / switch / FILES[switch]).read_text()


def test_only_the_os_file_is_rendered(host, switch):
    assert sorted(host.file(str(RENDERED / switch)).listdir()) == [FILES[switch]]


def test_rendered_file_mode(host, switch):
    assert host.file(str(RENDERED / switch / FILES[switch])).mode == 0o644
