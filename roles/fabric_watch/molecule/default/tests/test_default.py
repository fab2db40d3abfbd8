"""The service runs python -m fabric watch, serves the scrape errors of a stack whose hosts
answer nothing, and stops on SIGTERM with exit 0."""

from __future__ import annotations

import time

UNIT = "/etc/systemd/system/railyard-watch.service"

FETCH = (
    'python3 -c "import urllib.request as u; '
    "print(u.urlopen('http://127.0.0.1:9477/metrics', timeout=5).read().decode())\""
)


def metrics(host, seconds: float = 60.0) -> str:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while True:
        out = host.run(FETCH)
        if out.rc == 0 and "railyard_watch_scrapes" in out.stdout:
            return out.stdout
        assert time.monotonic() < deadline, f"no metrics: {out.stderr[-500:]}"
        time.sleep(1)


def test_unit_runs_fabric_watch_for_the_stack(host) -> None:  # type: ignore[no-untyped-def]
    unit = host.file(UNIT)
    assert unit.exists and unit.mode == 0o644
    assert "-m fabric watch --stack mol --spec /opt/railyard/Pulumi.lab.yaml" in unit.content_string
    assert "--listen 127.0.0.1 --port 9477" in unit.content_string
    service = host.service("railyard-watch")
    assert service.is_enabled and service.is_running


def test_unreachable_hosts_are_served_as_scrape_errors(host) -> None:  # type: ignore[no-untyped-def]
    text = metrics(host)
    assert 'railyard_watch_scrape_error{source="ibnetdiscover",stack="mol"} 1.0' in text
    assert "railyard_cable_up{" not in text


def test_stop_is_a_clean_exit(host) -> None:  # type: ignore[no-untyped-def]
    metrics(host)
    assert host.run("systemctl stop railyard-watch").rc == 0
    show = host.run("systemctl show -p Result -p ExecMainStatus railyard-watch").stdout
    assert "Result=success" in show and "ExecMainStatus=0" in show, show
    assert host.run("systemctl start railyard-watch").rc == 0
