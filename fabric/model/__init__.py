"""The cluster model: facts every later step needs, computed from the spec alone (pure).

The layer right after the spec (docs/ARCHITECTURE.md): the target components, the hand-off's
variables and the check plan read a fact here instead of importing another step's code to get
it. ``cluster.ClusterModel`` computes each fact of one spec once (the hand-off's health
configuration reads it); ``ports`` holds how the declared HCA ports and the fabric as the
target reports it are derived; ``gcp`` the GPU subnets of A3 instances.
"""
