"""The Azure target's model additions (model layer): what a compute node runs to give its
placement, which the hand-off renders Slurm's topology from and the provider-topology check
compares with Slurm's (``fabric/targets/azure/placement.py`` reads it)."""

from __future__ import annotations

__all__ = ["IMDS_INSTANCE", "PLACEMENT_COMMAND"]

#: The VM's instance metadata (IMDS): ``compute.placementGroupId``, the placement group of its
#: scale set, and ``compute.vmScaleSetName`` / ``osProfile.computerName``. IMDS is reached
#: without a proxy and with the ``Metadata: true`` header, as Azure's docs require ("Azure
#: Instance Metadata Service", Proxies; MicrosoftDocs/azure-docs
#: articles/virtual-machines/instance-metadata-service.md).
IMDS_INSTANCE = (
    "curl -sS -f -m 5 --noproxy '*' -H Metadata:true "
    "'http://169.254.169.254/metadata/instance?api-version=2021-02-01'"
)

#: What each compute node runs to give its placement.
PLACEMENT_COMMAND = IMDS_INSTANCE
