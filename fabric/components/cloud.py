"""What the cloud targets' components (aws, gcp) share: :class:`CloudCluster`."""

from __future__ import annotations

from typing import Any

import pulumi

from fabric.components.access import pinned_inventory
from fabric.components.target import TargetCluster
from fabric.spec import ClusterSpec, SpecError, provision_problems


class CloudCluster(TargetCluster):
    """A cloud target's component (type ``railyard:<target>:Cluster``).

    ``__init__`` refuses a spec with problems before anything is created (what ``validate``
    checks, and the target), then sets what the target's resources read: ``_name``, ``_spec``,
    ``_child`` (the options that make a resource a child of this one) and ``_config`` (the
    stack config).
    """

    def __init__(
        self,
        target: str,
        name: str,
        spec: ClusterSpec,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        problems = provision_problems(spec, target)
        if problems:
            raise SpecError(problems)
        super().__init__(f"railyard:{target}:Cluster", name, None, opts)
        self._name, self._spec = name, spec
        self._child = pulumi.ResourceOptions(parent=self)
        self._config = pulumi.Config()

    def _inventory(
        self,
        private: dict[str, pulumi.Input[str]],
        public: dict[str, pulumi.Input[str | None]],
        sources: dict[str, pulumi.Input[dict[str, Any]] | None],
    ) -> pulumi.Output[dict[str, Any]]:
        """The inventory over the instances' addresses, each host key pinned first from where
        the cloud reports it (``sources``; ``fabric.components.access.pinned_inventory``)."""
        return pinned_inventory(
            self._name,
            self._spec,
            private=private,
            public=public,
            sources=sources,
            parent=self,
            config=self._config,
        )
