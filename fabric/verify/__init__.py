"""Verification: the testinfra check suite's plan, runner, fault injection and reports.

``plan`` derives what to check from the spec and inventory (no SSH); ``tests/checks`` runs
the real tools on the nodes; ``runner`` invokes pytest; ``results`` reads its JUnit XML;
``report`` renders the terminal table, Markdown and the graphviz fabric picture;
``faults`` injects ibsim / OpenSM / MTU faults into the lab.
"""
