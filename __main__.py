"""The railyard Pulumi program: read the cluster spec, build the cluster, export its outputs
(every target's: inventory, hosts, switches, fabric, bmc_endpoints, state_dir; then each step's)."""

import pulumi

from fabric.program import Cluster, ClusterArgs
from fabric.spec import spec_from_mapping

config = pulumi.Config("railyard")
spec = spec_from_mapping(config.require_object("cluster"))
args = ClusterArgs(
    spec=spec,
    stack=pulumi.get_stack(),
    handoff=config.get_bool("handoff") is not False,
    verify=config.get_bool("verify") is not False,
)
cluster = Cluster(spec.name, args)
for key, value in cluster.outputs.items():
    pulumi.export(key, value)
