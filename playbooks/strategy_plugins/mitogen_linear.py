"""Ansible's ``linear`` strategy run by Mitogen (``ansible_mitogen``, a railyard dependency).

Mitogen keeps one Python interpreter per host for the whole run and sends it each task's
module, instead of starting Python (and a module upload) on the host for every task; the same
plays, several times faster on the controller and the hosts (``bench/handoff``). The module is
installed in the .venv that runs Ansible; this file only gives its strategy the name
``ansible.cfg`` and ``playbooks/site.yml`` use.
"""

from ansible_mitogen.plugins.strategy.mitogen_linear import StrategyModule

__all__ = ["StrategyModule"]
