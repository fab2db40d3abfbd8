"""Parser benchmark: every tool-output parser at 1, 10 and 100 MB of repeated real records."""
