"""The experiment bound to its kinds, the plan, and the lifecycle of a run."""
