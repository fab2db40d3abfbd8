"""Target azure: ND H100 v5 / ND H200 v5 in one scale set, on Azure's InfiniBand fabric."""
