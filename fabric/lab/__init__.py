"""Drivers for the one-machine lab: node image, podman networks and nodes, SSH keys,
the Redfish emulator and ibsim. Plain functions over real tools; the Pulumi dynamic
providers in ``fabric.targets.lab`` call them."""
