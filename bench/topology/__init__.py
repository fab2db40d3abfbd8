"""Topology benchmark: parse + Slurm topology generation at 2,048 and 16,384 hosts."""
