"""volbench: build storage layouts, load them with real tools, repeat with method, report."""

__version__ = "0.1.0"
