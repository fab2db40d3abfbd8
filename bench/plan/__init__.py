"""Check-plan benchmark: ``check --plan`` at 1,024, 4,096 and 16,384 hosts (issue 44)."""
