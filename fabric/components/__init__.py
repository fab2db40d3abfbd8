"""Pulumi parts every target shares (the layer ``pulumi``): the one target interface
(``target.py``, :class:`~fabric.components.target.TargetCluster`), the host-key pin
(``access.py``, ``dynamic_hostkeys.py``), the cloud-config (``cloudinit.py``), config secrets
and the munge key (``config_secret.py``, ``munge.py``), ``KubernetesObjects``
(``kubernetes.py``), and the rerun-on-change base of the hand-off's and the checks' resources
(``rerun.py``). Nothing here names a target; the program (``fabric.program``) picks the
spec's target component through the registry.

``handoff.py`` and ``verify.py`` are aliases only (their resources live in
``fabric.handoff.resource`` and ``fabric.verify.resource``), kept for stacks made before the
move (docs/ARCHITECTURE.md, "Layers").
"""
