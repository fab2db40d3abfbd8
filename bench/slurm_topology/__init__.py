"""How long a real slurmctld takes to build its topology from what railyard writes."""
