"""The fabric graph: from the spec, from ibnetdiscover; ibsim net files; Slurm topology; diffs."""
