"""Verification: the testinfra check suite, its plan, runner and reports.

``plan`` derives what to check from the spec and inventory (no SSH); ``checks`` (the testinfra suite) runs
the real tools on the nodes; ``runner`` invokes pytest; ``results`` reads its JUnit XML;
``report`` renders the terminal table, Markdown and the graphviz fabric picture.
"""
