"""The result model, errors, units and metric facts: imports nothing of volbench."""
