"""railyard: declare an AI-training cluster, provision it, and verify its RDMA fabric."""

__version__ = "0.1.0"
