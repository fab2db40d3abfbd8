"""``python -m fabric watch``: the declared fabric as Prometheus metrics.

``remote`` runs read-only tools on the stack's hosts over SSH (with timeouts), ``collect``
turns one round of their output into a typed ``Snapshot`` (cables against the declared values,
the master SM, the last check report by family, and every scrape error as such), ``metrics``
exposes the last snapshot to prometheus_client (HTTP endpoint or node_exporter textfile).
"""
