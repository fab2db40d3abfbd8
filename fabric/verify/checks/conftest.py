"""The railyard check suite's fixtures and parametrisation.

Run: ``pytest fabric/verify/checks --hosts=ansible://all --ansible-inventory=state/lab/inventory.yml``
(or ``python -m fabric check --stack lab``). The spec is ``Pulumi.<stack>.yaml`` for an
inventory under ``state/<stack>/`` unless ``--spec`` names one.

Every check takes testinfra's ``host`` fixture; here ``host`` is the host the check runs on,
chosen from its parameter (an HCA port's host, a pair's source, an SM's host ...), so checks
are parametrised over ports and peers without crossing them with every host. A check family
that does not apply to the spec/target is not generated: its items are deselected and the
reason is printed and written to ``<report dir>/not_generated.json``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import testinfra

from fabric.state import StateLayout
from fabric.topology.ibsim_clients import bound_udp_ports
from fabric.topology.ibsim_console import IbsimConsole
from fabric.verify import context
from fabric.verify.bandwidth import Exclusive, HostsBusy, host_locks
from fabric.verify.facts import Facts
from fabric.verify.families.base import Fixture
from fabric.verify.harness import (
    HarnessError,
    pytest_runtest_makereport,  # noqa: F401  (the hook, registered here)
    run_dir,
    xdist_worker,
)
from fabric.verify.plan import (
    TABLE,
    CheckPlan,
    DeclaredLink,
    HcaPort,
    Pair,
    SubnetManagerExpect,
)

PLAN = pytest.StashKey[CheckPlan]()
INVENTORY = pytest.StashKey[Path]()
SKIPPED = pytest.StashKey[dict[str, str]]()
#: A probed fixture's values (``Fixture.probe``), probed once a run.
PROBED = pytest.StashKey[dict[str, list[Any]]]()


class NotGenerated:
    """Placeholder parameter of a check family that does not apply."""

    def __init__(self, family: str, reason: str) -> None:
        self.family, self.reason = family, reason


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("railyard")
    group.addoption(
        "--spec",
        dest="railyard_spec",
        help="cluster spec or Pulumi stack file (default: from the inventory path)",
    )
    group.addoption(
        "--report-dir", dest="railyard_report_dir", help="write not_generated.json here"
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "family(name): the check family, for not-generated reasons")
    if shutil.which("ansible-inventory") is None:  # testinfra's ansible backend shells out to it
        os.environ["PATH"] = (
            f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
        )
    inv_opt = config.getoption("ansible_inventory", None)
    if not inv_opt:
        raise pytest.UsageError(
            "the check suite needs --ansible-inventory=state/<stack>/inventory.yml"
        )
    inventory_path = Path(inv_opt).resolve()
    inventory = context.load_inventory(inventory_path)
    spec_opt = config.getoption("railyard_spec")
    spec = context.load_cluster_spec(
        Path(spec_opt) if spec_opt else context.spec_path_for(inventory_path)
    )
    hosts = context.select_hosts(config.getoption("hosts"), inventory)
    config.stash[PLAN] = CheckPlan(
        spec=spec, hosts=hosts, groups=context.inventory_groups(inventory)
    )
    config.stash[INVENTORY] = inventory_path
    config.stash[SKIPPED] = {}


def _params() -> Mapping[str, Fixture]:
    """Parameter name -> its fixture (values from the plan, test id, host the check runs on,
    report subject): the family table's (``fabric.verify.families``), every family's."""
    return TABLE.fixtures


def _values(config: pytest.Config, plan: CheckPlan, fixture: Fixture, module: str) -> list[Any]:
    """A fixture's values; where it has a probe (the RoCE QoS family's ConnectX), each value's
    host is asked once a run, and the values it rules out are reported as not generated."""
    if fixture.probe is None:
        return fixture.values(plan)
    probed = config.stash.setdefault(PROBED, {})
    if fixture.name not in probed:
        inventory = str(config.stash[INVENTORY])
        kept = []
        for value in fixture.values(plan):
            on = testinfra.get_host(
                f"ansible://{fixture.on(plan, value)}", ansible_inventory=inventory
            )
            reason = fixture.probe(lambda command, on=on: on.run(command).stdout, value)
            if reason is None:
                kept.append(value)
            else:
                config.stash[SKIPPED][f"{module}[{fixture.ident(value)}]"] = reason
        probed[fixture.name] = kept
    return probed[fixture.name]


def _family(metafunc: pytest.Metafunc) -> str | None:
    marker = metafunc.definition.get_closest_marker("family")
    return marker.args[0] if marker else None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    plan = metafunc.config.stash[PLAN]
    table = _params()
    names = [n for n in metafunc.fixturenames if n in table]
    if not names:
        return
    fixture = table[names[0]]
    family = _family(metafunc)
    reason = plan.not_generated().get(family or "")
    values: list[Any] = []
    if reason is None:
        module = Path(str(metafunc.definition.fspath)).stem
        values = _values(metafunc.config, plan, fixture, module)
        if not values:
            reason = (
                f"nothing to check: no {fixture.name.replace('_', ' ')} among the selected hosts"
            )
    if reason is not None:
        metafunc.parametrize(
            fixture.name, [NotGenerated(family or fixture.name, reason)], ids=["not-generated"]
        )
        return
    metafunc.parametrize(fixture.name, values, ids=[fixture.ident(v) for v in values])


def _group(plan: CheckPlan, params: Any) -> str:
    """The xdist group an item asks for (``--dist loadgroup``): its parameter fixture's
    ``group`` (every item of the sweep together; a served pair's by its target, one server per
    target at a time), else the host it runs on, so each host's tool outputs are gathered
    once (``Facts``). pytest-xdist 3.8
    here did not keep a group on one worker (a module's statically marked items spread over
    three workers too), so nothing relies on it: the sweep runs once per run under a file
    lock (``test_sweep.swept``), and a pair's server is started and reaped per check. (Why,
    found 2026-11-27: xdist's own ``pytest_collection_modifyitems`` reads the groups into the
    node ids before this hook adds them. Run first, the groups held, but the 11-node lab's
    check was no faster, 13.4-13.7 s against 11.5-14 s, with one worker given 87 of 153.)"""
    table = _params()
    for name, value in params.params.items() if params else []:
        if name in table:
            fixture = table[name]
            return fixture.group(value) if fixture.group else f"host-{fixture.on(plan, value)}"
    return "host-none"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    plan = config.stash[PLAN]
    keep, drop = [], []
    for item in items:
        params = getattr(item, "callspec", None)
        placeholder = next(
            (v for v in (params.params.values() if params else []) if isinstance(v, NotGenerated)),
            None,
        )
        if placeholder is None:
            item.add_marker(pytest.mark.xdist_group(name=_group(plan, params)))
            keep.append(item)
            continue
        drop.append(item)
        config.stash[SKIPPED][item.originalname] = placeholder.reason
    if drop:
        config.hook.pytest_deselected(items=drop)
    # the sweep's items last: the first worker sweeps in the background meanwhile (_sweep_early)
    items[:] = sorted(keep, key=lambda item: _item_family(item) == "sweep")
    report_dir = config.getoption("railyard_report_dir")
    if report_dir and not hasattr(config, "workerinput"):
        Path(report_dir).mkdir(parents=True, exist_ok=True)
        (Path(report_dir) / "not_generated.json").write_text(
            json.dumps(config.stash[SKIPPED], indent=2, sort_keys=True)
        )


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    skipped = config.stash.get(SKIPPED, {})
    if skipped:
        terminalreporter.section("checks not generated")
        for name, reason in sorted(skipped.items()):
            terminalreporter.write_line(f"{name}: {reason}")


@pytest.fixture(scope="session")
def plan(request: pytest.FixtureRequest) -> CheckPlan:
    """The check plan: spec, selected hosts and every family's parameters."""
    return request.config.stash[PLAN]


def _multiplexed(host: Any, control_dir: str) -> Any:
    """``host`` with its SSH commands sharing one connection per host (``ControlPath`` in
    ``control_dir``): testinfra's ssh backend passes ansible.cfg's ``ControlMaster=auto`` but
    no ``ControlPath``, so every command paid a new SSH handshake (about 0.2 s, most of a
    ping pair's time in the lab). Host keys are checked as before, by the master connection."""
    backend = host.backend
    if backend.NAME == "ansible" and not backend.force_ansible:
        # the ssh host the ansible backend runs every command through (testinfra caches it)
        backend = getattr(backend.ansible_runner.get_host(backend.host), "backend", None)
    if backend is not None and backend.NAME == "ssh" and not backend.controlpath:
        backend.controlpath = f"{control_dir}/%%C"  # testinfra %-formats; a socket path: 107 bytes
    return host


def _control_dir(run_dir: Path) -> Path:
    """The SSH control sockets' folder of the run whose temporary directory is ``run_dir``:
    one for every xdist worker, so each host gets one connection per run, and short (a
    socket's path holds at most 107 bytes)."""
    key = hashlib.sha256(str(run_dir).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"ry-cp-{key}"


@pytest.fixture(scope="session")
def facts(
    request: pytest.FixtureRequest, plan: CheckPlan, tmp_path_factory: pytest.TempPathFactory
) -> Facts:
    """Tool outputs gathered once per host (ibstat, sminfo ...), parsed by fabric.parsers."""
    inventory = request.config.stash[INVENTORY]
    connections: dict[str, Any] = {}
    control_dir = _control_dir(run_dir(tmp_path_factory, request.config))
    control_dir.mkdir(mode=0o700, exist_ok=True)

    def connect(name: str) -> Any:
        if name not in connections:
            connections[name] = _multiplexed(
                testinfra.get_host(f"ansible://{name}", ansible_inventory=str(inventory)),
                str(control_dir),
            )
        return connections[name]

    return Facts(plan=plan, connect=connect)


#: Seconds after which an empty socket folder of a run is taken as left behind (a run stopped
#: before its end removed it); one still in use only loses its shared connections.
STALE_CONTROL_DIR_S = 3600


def remove_stale_control_dirs(parent: Path, now: float | None = None) -> list[Path]:
    """Remove the empty ``ry-cp-*`` folders in ``parent`` older than
    :data:`STALE_CONTROL_DIR_S`; return them."""
    now = time.time() if now is None else now
    removed = []
    for folder in parent.glob("ry-cp-*"):
        try:
            if now - folder.stat().st_mtime > STALE_CONTROL_DIR_S and not any(folder.iterdir()):
                folder.rmdir()
                removed.append(folder)
        except OSError:
            continue  # another run's, changing under us
    return removed


#: SSH connections opened at once ahead of the checks (a bound: thousands of hosts must not
#: mean thousands of ``ssh`` processes at once).
CONNECT_AHEAD = 16


def pytest_sessionstart(session: pytest.Session) -> None:
    """On the xdist controller (or the only process): open the SSH connection to every
    checked host now, in the background, while the workers start, so no check waits for a
    handshake (the workers share them: :func:`_control_dir`)."""
    config = session.config
    factory = getattr(config, "_tmp_path_factory", None)
    if hasattr(config, "workerinput") or factory is None:
        return
    control_dir = _control_dir(factory.getbasetemp())
    remove_stale_control_dirs(control_dir.parent)
    control_dir.mkdir(mode=0o700, exist_ok=True)
    inventory = str(config.stash[INVENTORY])

    def open_connection(name: str) -> None:
        try:
            host = testinfra.get_host(f"ansible://{name}", ansible_inventory=inventory)
            _multiplexed(host, str(control_dir)).run("true")
        except Exception:  # noqa: BLE001 - a head start only: the check connects itself
            return

    def open_all(names: list[str]) -> None:
        with ThreadPoolExecutor(CONNECT_AHEAD) as pool:
            list(pool.map(open_connection, names))

    hosts = list(config.stash[PLAN].hosts)
    threading.Thread(target=open_all, args=(hosts,), name="railyard-ssh", daemon=True).start()


def pytest_unconfigure(config: pytest.Config) -> None:
    """The run's end (on the xdist controller, after every worker): close the SSH
    connections the checks shared, and remove their sockets' folder."""
    factory = getattr(config, "_tmp_path_factory", None)
    if hasattr(config, "workerinput") or factory is None:
        return
    control_dir = _control_dir(factory.getbasetemp())
    if not control_dir.is_dir():
        return

    def close(socket: Path) -> None:
        subprocess.run(
            ["ssh", "-o", f"ControlPath={socket}", "-O", "exit", "railyard"],
            capture_output=True,
            timeout=10,
            check=False,
        )

    with ThreadPoolExecutor(CONNECT_AHEAD) as pool:  # as many at once as were opened
        list(pool.map(close, list(control_dir.iterdir())))
    shutil.rmtree(control_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def exclusive(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Exclusive:
    """Hold hosts for one bandwidth test (``ib_write_bw`` servers, a GPUDirect pair, an NCCL
    run): a lock file per host in the run's directory, shared by every xdist worker
    (:func:`fabric.verify.bandwidth.host_locks`). xdist's groups do not hold (:func:`_group`),
    so this, not the grouping, keeps two bandwidth tests off one host; a wait past the lock's
    timeout is a harness error."""
    folder = run_dir(tmp_path_factory, request.config) / "bandwidth-locks"

    @contextmanager
    def hold(hosts: Iterable[str]) -> Iterator[None]:
        try:
            with host_locks(folder, hosts):
                yield
        except HostsBusy as err:
            raise HarnessError(str(err)) from err

    return hold


@pytest.fixture(scope="session")
def ibsim_console(request: pytest.FixtureRequest, plan: CheckPlan) -> IbsimConsole | None:
    """The lab's ibsim console (FIFO and log beside the inventory, or in the lab datacenter's
    stack a bare-metal spec names in ``lab.datacenter_stack``), or None off the lab."""
    if not plan.simulated:
        return None
    lab = plan.spec.lab
    if lab is not None and lab.datacenter_stack:
        state = StateLayout(lab.datacenter_stack)
    else:
        state = StateLayout.at(request.config.stash[INVENTORY].parent)
    return IbsimConsole(state.ibsim_console, state.ibsim_log)


@pytest.fixture(scope="session")
def alive_ports(facts: Facts) -> Callable[[str, list[int]], set[int]]:
    """``(host, ports)`` -> the ports still bound by a process on ``host`` (ibsim client liveness)."""

    def alive(name: str, ports: list[int]) -> set[int]:
        result = facts.connect(name).run("ss -Huan")
        if result.rc != 0:
            raise RuntimeError(f"{name}: ss -Huan failed: {result.stderr.strip()}")
        return bound_udp_ports(result.stdout) & set(ports)

    return alive


@pytest.fixture
def host(request: pytest.FixtureRequest, plan: CheckPlan, facts: Facts) -> Any:
    """The testinfra host this check runs on (derived from the check's parameter)."""
    table = _params()
    params = request.node.callspec.params if hasattr(request.node, "callspec") else {}
    for name, value in params.items():
        if name in table:
            on = table[name].on(plan, value)
            if on is None:
                pytest.fail(f"no host selected to run {request.node.name} on")
            return facts.connect(on)
    pytest.fail(
        f"{request.node.name}: a check needs a parameter naming where it runs ({', '.join(table)})"
    )


def _item_family(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker("family")
    return marker.args[0] if marker else None


@pytest.fixture(scope="session", autouse=True)
def _sweep_early(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    facts: Facts,
    plan: CheckPlan,
) -> Iterator[None]:
    """Start the run's one fabric sweep in the background on the first worker (or the only
    process), so it runs beside the host checks; the sweep's items, run last, read it."""
    worker = xdist_worker(request.config) or "gw0"
    session = request.session
    if worker != "gw0" or not any(_item_family(i) == "sweep" for i in session.items):
        yield
        return
    from fabric.verify.checks import test_sweep

    def sweep() -> None:
        try:
            test_sweep.shared_sweep(
                run_dir(tmp_path_factory, request.config),
                facts,
                plan,
                test_sweep.counters_wanted(session),
            )
        except Exception:  # noqa: BLE001 - the sweep's items run it again and report why
            return

    runner = threading.Thread(target=sweep, name="railyard-sweep", daemon=True)
    runner.start()
    yield
    runner.join(timeout=600)


@pytest.fixture(autouse=True)
def _subject(
    request: pytest.FixtureRequest, record_property: Callable[[str, object], None], plan: CheckPlan
) -> None:
    """Record what a check is about (port, pair, link, host) for the report's picture."""
    table = _params()
    params = request.node.callspec.params if hasattr(request.node, "callspec") else {}
    for name, value in params.items():
        if name in table:
            subject = table[name].subject(plan, value)
            if subject is not None:
                record_property("subject", subject)


__all__ = ["DeclaredLink", "HcaPort", "Pair", "SubnetManagerExpect"]
