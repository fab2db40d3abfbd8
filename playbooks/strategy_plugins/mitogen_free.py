"""Ansible's ``free`` strategy run by Mitogen (see ``mitogen_linear.py`` beside this file):
the strategy of ``playbooks/site.yml``'s plays whose hosts do not wait on each other."""

from ansible_mitogen.plugins.strategy.mitogen_free import StrategyModule

__all__ = ["StrategyModule"]
