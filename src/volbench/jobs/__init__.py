"""Driver programs for real-world jobs: started by the runner as processes like any tool,
they time their own phases and write the figures to a JSON file for the workload's parser."""
