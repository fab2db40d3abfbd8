"""The railyard Pulumi program: read the cluster spec, build its component, export outputs."""

import pulumi

from fabric.components import cluster_component
from fabric.specload import spec_from_mapping

spec = spec_from_mapping(pulumi.Config("railyard").require_object("cluster"))
cluster = cluster_component(spec.name, spec)
pulumi.export("inventory", cluster.inventory)
pulumi.export("hosts", cluster.hosts)
for key in ("fabric", "bmc_endpoints", "state_dir"):
    if hasattr(cluster, key):
        pulumi.export(key, getattr(cluster, key))
