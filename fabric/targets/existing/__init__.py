"""An existing cluster adopted over SSH target: its parts, one module per role (fabric/targets/__init__.py)."""
