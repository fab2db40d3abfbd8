"""Lab benchmarks (scale: bench/lab/scale.py)."""
