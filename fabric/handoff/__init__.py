"""The hand-off from provisioning to configuration: spec -> role variables -> ansible-runner.

- ``vars``: the role variables (group_vars for ``all``) derived from the cluster spec.
- ``summary``: ansible-runner events folded into per-host counts and a short failure report.
- ``runner``: run a playbook with ansible-runner against ``state/<stack>/inventory.yml``.
- ``secrets``: the secrets the hand-off passes to Ansible from the stack (the munge key).

The Slurm ``topology.conf`` the ``slurm`` role writes is rendered by
``fabric.topology.render``.
"""
