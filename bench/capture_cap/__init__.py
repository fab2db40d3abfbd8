"""Benchmark: ``import`` and ``topology --from-ibnetdiscover`` on a capture scaled to 200 MB."""
