"""A small typed Redfish client (DMTF DSP0266) on ``requests``.

Covers what provisioning and ``lab status`` need: the service root, the systems,
a system's serial number and MACs (``EthernetInterfaces``), its power state,
``ComputerSystem.Reset``, a one-time boot override that is read back, and a
bounded wait for a power state. Real BMCs and sushy-tools apply power actions
seconds after answering 204, so callers wait on what they read, not on what
they asked.

The password is held only by the ``requests`` session and never appears in an
error message or ``repr``: URLs are shown without a user or password, a BMC's answer
is shown with the password (plain or in a Basic authorization token) replaced by
``***``, and the ``requests`` exception (whose text may carry the URL) is not chained.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urljoin, urlsplit, urlunsplit

import requests

PowerState = Literal["On", "Off", "PoweringOn", "PoweringOff", "Paused"]
BootEnabled = Literal["Disabled", "Once", "Continuous"]

#: The ResetType values DMTF defines for ComputerSystem.Reset.
RESET_TYPES = (
    "On",
    "ForceOff",
    "GracefulShutdown",
    "GracefulRestart",
    "ForceRestart",
    "Nmi",
    "ForceOn",
    "PushPowerButton",
    "PowerCycle",
)


class RedfishError(RuntimeError):
    """A Redfish call failed; the message names the URL and what to check."""


def shown_url(url: str) -> str:
    """``url`` without the user and password a URL may carry (``https://u:p@bmc`` -> ``https://bmc``)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(an unparsable URL)"
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


@dataclass(frozen=True)
class BootOverride:
    """A system's boot source override as the BMC reports it."""

    target: str | None
    enabled: str | None
    allowed_targets: tuple[str, ...] = ()


@dataclass(frozen=True)
class BootOverrideResult:
    """What was asked of the BMC and what it read back afterwards."""

    requested_target: str
    requested_enabled: str
    readback: BootOverride

    @property
    def target_applied(self) -> bool:
        """True when the BMC reports the requested target."""
        return self.readback.target == self.requested_target

    @property
    def enabled_applied(self) -> bool:
        """True when the BMC reports the requested frequency (Once/Continuous)."""
        return self.readback.enabled == self.requested_enabled


@dataclass(frozen=True)
class SystemInfo:
    """The facts read from one ComputerSystem resource."""

    path: str
    id: str
    name: str | None
    uuid: str | None
    serial: str | None
    manufacturer: str | None
    model: str | None
    power_state: str | None
    boot: BootOverride
    macs: tuple[str, ...] = field(default=())


class RedfishClient:
    """A session against one Redfish service (one BMC, or one emulator)."""

    def __init__(
        self,
        base_url: str,
        username: str | None = None,
        password: str | None = None,
        *,
        verify_tls: bool | str = True,
        timeout: float = 10.0,
    ) -> None:
        """``base_url`` is ``https://BMC[:port]``; ``verify_tls`` may be a CA bundle path."""
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._session = requests.Session()
        self._session.verify = verify_tls
        self._session.headers.update({"Accept": "application/json", "OData-Version": "4.0"})
        if username is not None and password is not None:
            self._session.auth = (username, password)
        self._hidden = _credentials(base_url, username, password)

    def __repr__(self) -> str:
        return f"RedfishClient({shown_url(self.base_url)!r})"

    def _where(self, path: str = "") -> str:
        """The URL of ``path`` (the service itself when empty) as messages show it."""
        return shown_url(self._url(path) if path else self.base_url)

    def _error(self, message: str) -> RedfishError:
        """A RedfishError whose message holds no credential."""
        return RedfishError(self._scrub(message))

    def _scrub(self, text: str) -> str:
        """``text`` with the password and its Basic token replaced by ``***``."""
        for secret in self._hidden:
            text = text.replace(secret, "***")
        return text

    def __enter__(self) -> RedfishClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the HTTP session."""
        self._session.close()

    # -- HTTP -----------------------------------------------------------------

    def _url(self, path: str) -> str:
        return urljoin(self.base_url + "/", path.lstrip("/"))

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        try:
            return self._send(method, path, body)
        except RedfishError as error:
            raise RedfishError(self._scrub(str(error))) from None

    def _send(self, method: str, path: str, body: dict[str, Any] | None) -> Any:
        target = self._url(path)
        url = shown_url(target)
        try:
            response = self._session.request(method, target, json=body, timeout=self.timeout)
        except requests.exceptions.SSLError as exc:
            raise RedfishError(
                f"{method} {url}: TLS verification failed ({exc.__class__.__name__}); "
                "install the BMC's CA certificate, or set bmc.verify_tls: false in the spec "
                "for a lab BMC with a self-signed certificate"
            ) from None
        except requests.RequestException as exc:
            raise RedfishError(
                f"{method} {url}: BMC unreachable ({exc.__class__.__name__}); "
                "check bmc.endpoints.<node>.url and the route to the BMC network"
            ) from None
        if response.status_code in (401, 403):
            raise RedfishError(
                f"{method} {url}: HTTP {response.status_code}; check bmc.username and the "
                "secret named by bmc.password.config"
            )
        if response.status_code >= 400:
            raise RedfishError(
                f"{method} {url}: HTTP {response.status_code}: {_error_message(response)}"
            )
        if response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise RedfishError(f"{method} {url}: the answer is not JSON") from None

    def get(self, path: str) -> dict[str, Any]:
        """GET a resource and return its JSON body."""
        body = self._request("GET", path)
        if not isinstance(body, dict):
            raise self._error(f"GET {self._where(path)}: empty answer")
        return body

    # -- resources ------------------------------------------------------------

    def service_root(self) -> dict[str, Any]:
        """The service root (``/redfish/v1/``)."""
        return self.get("/redfish/v1/")

    def systems(self) -> list[str]:
        """The ``@odata.id`` paths of every ComputerSystem."""
        root = self.service_root()
        collection = root.get("Systems", {}).get("@odata.id", "/redfish/v1/Systems")
        return [m["@odata.id"] for m in self.get(collection).get("Members", [])]

    def system_path(self, system_id: str | None = None) -> str:
        """The path of ``Systems/<system_id>``, or of the first system when None."""
        members = self.systems()
        if not members:
            raise self._error(f"{self._where()}: the service lists no systems")
        if system_id is None:
            return members[0]
        for member in members:
            if member.rstrip("/").rsplit("/", 1)[-1] == system_id:
                return member
        ids = ", ".join(m.rstrip("/").rsplit("/", 1)[-1] for m in members)
        raise self._error(
            f"{self._where()}: no system {system_id!r} (have: {ids}); "
            "fix bmc.endpoints.<node>.system_id"
        )

    def macs(self, system_path: str) -> list[str]:
        """The MAC addresses of the system's EthernetInterfaces (lower case)."""
        system = self.get(system_path)
        link = system.get("EthernetInterfaces", {}).get("@odata.id")
        if not link:
            return []
        macs: list[str] = []
        for member in self.get(link).get("Members", []):
            nic = self.get(member["@odata.id"])
            mac = nic.get("PermanentMACAddress") or nic.get("MACAddress")
            if mac:
                macs.append(str(mac).lower())
        return macs

    def system(self, system_path: str) -> SystemInfo:
        """Read one system: identity, serial, power state, boot override and MACs."""
        body = self.get(system_path)
        return SystemInfo(
            path=system_path,
            id=str(body.get("Id", system_path.rstrip("/").rsplit("/", 1)[-1])),
            name=body.get("Name"),
            uuid=body.get("UUID"),
            serial=body.get("SerialNumber"),
            manufacturer=body.get("Manufacturer"),
            model=body.get("Model"),
            power_state=body.get("PowerState"),
            boot=_boot(body),
            macs=tuple(self.macs(system_path)),
        )

    def power_state(self, system_path: str) -> str | None:
        """The system's current ``PowerState`` as the BMC reports it now."""
        return self.get(system_path).get("PowerState")

    def boot_override(self, system_path: str) -> BootOverride:
        """The system's current boot source override."""
        return _boot(self.get(system_path))

    # -- actions --------------------------------------------------------------

    def reset(self, system_path: str, reset_type: str) -> None:
        """POST ComputerSystem.Reset; the BMC applies it later (see ``wait_power_state``)."""
        body = self.get(system_path)
        action = body.get("Actions", {}).get("#ComputerSystem.Reset", {})
        allowed = action.get("ResetType@Redfish.AllowableValues") or list(RESET_TYPES)
        if reset_type not in allowed:
            raise self._error(
                f"{self._where(system_path)}: ResetType {reset_type!r} not allowed "
                f"(allowed: {', '.join(allowed)})"
            )
        target = action.get("target", f"{system_path.rstrip('/')}/Actions/ComputerSystem.Reset")
        self._request("POST", target, {"ResetType": reset_type})

    def set_boot_override(
        self, system_path: str, target: str, enabled: BootEnabled = "Once"
    ) -> BootOverrideResult:
        """PATCH the boot source override, then read back what the BMC reports.

        The target is checked against the BMC's allowable values first. A BMC may
        report a different frequency than asked (sushy-tools answers ``Continuous``
        to ``Once``): the result carries both, and the caller decides.
        """
        before = self.boot_override(system_path)
        if before.allowed_targets and target not in before.allowed_targets:
            raise self._error(
                f"{self._where(system_path)}: boot target {target!r} not offered by the BMC "
                f"(allowed: {', '.join(before.allowed_targets)})"
            )
        self._request(
            "PATCH",
            system_path,
            {"Boot": {"BootSourceOverrideTarget": target, "BootSourceOverrideEnabled": enabled}},
        )
        readback = self.boot_override(system_path)
        result = BootOverrideResult(target, enabled, readback)
        if not result.target_applied:
            raise self._error(
                f"{self._where(system_path)}: asked boot target {target!r}, "
                f"the BMC reads back {readback.target!r}"
            )
        return result

    def clear_boot_override(self, system_path: str) -> BootOverride:
        """Set ``BootSourceOverrideEnabled`` to Disabled and return the read-back."""
        self._request("PATCH", system_path, {"Boot": {"BootSourceOverrideEnabled": "Disabled"}})
        return self.boot_override(system_path)

    def power_off(self, system_path: str, *, timeout: float = 120.0) -> str:
        """Power the system off: ``GracefulShutdown`` when the BMC offers it, ``ForceOff`` when
        it does not or the OS has not shut down within half of ``timeout``; wait until the BMC
        reports ``Off``. Return the reset type that took it off ("" when it was already Off)."""
        if self.power_state(system_path) == "Off":
            return ""
        action = self.get(system_path).get("Actions", {}).get("#ComputerSystem.Reset", {})
        allowed = action.get("ResetType@Redfish.AllowableValues") or list(RESET_TYPES)
        if "GracefulShutdown" in allowed:
            self.reset(system_path, "GracefulShutdown")
            try:
                self.wait_power_state(system_path, "Off", timeout=timeout / 2)
                return "GracefulShutdown"
            except RedfishError:
                pass
        self.reset(system_path, "ForceOff")
        self.wait_power_state(system_path, "Off", timeout=timeout / 2)
        return "ForceOff"

    def wait_power_state(
        self,
        system_path: str,
        state: str,
        *,
        timeout: float = 60.0,
        interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> float:
        """Poll until the system reports ``state``; return the seconds waited.

        Raises RedfishError naming the last state seen when ``timeout`` passes.
        """
        start = clock()
        seen: str | None = None
        while True:
            seen = self.power_state(system_path)
            if seen == state:
                return clock() - start
            if clock() - start >= timeout:
                raise self._error(
                    f"{self._where(system_path)}: PowerState still {seen!r} after "
                    f"{timeout:.0f} s waiting for {state!r}"
                )
            sleep(interval)


def _credentials(url: str, username: str | None, password: str | None) -> tuple[str, ...]:
    """What an answer or a message must never show: the password given and the one a URL may
    carry (``https://user:password@bmc``), each also as its HTTP Basic token."""
    pairs = [(username, password)]
    try:
        parts = urlsplit(url)
        pairs.append((parts.username, parts.password))
    except ValueError:
        pass
    hidden: list[str] = []
    for user, secret in pairs:
        if user is not None and secret:
            token = base64.b64encode(f"{user}:{secret}".encode()).decode("ascii")
            hidden += [token, secret]
    return tuple(hidden)


def _boot(system: dict[str, Any]) -> BootOverride:
    boot = system.get("Boot", {}) or {}
    allowed = boot.get("BootSourceOverrideTarget@Redfish.AllowableValues") or []
    return BootOverride(
        target=boot.get("BootSourceOverrideTarget"),
        enabled=boot.get("BootSourceOverrideEnabled"),
        allowed_targets=tuple(str(a) for a in allowed),
    )


def _error_message(response: requests.Response) -> str:
    """The Redfish ``error.message`` of an answer, or its first 200 characters."""
    try:
        body = response.json()
        return str(body["error"].get("message") or body["error"].get("code"))
    except (ValueError, KeyError, TypeError, AttributeError):
        return response.text[:200].strip() or response.reason or "no detail"
