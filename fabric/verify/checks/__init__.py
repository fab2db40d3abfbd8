"""The shipped check suite: testinfra checks that ``python -m fabric check`` runs with pytest."""
