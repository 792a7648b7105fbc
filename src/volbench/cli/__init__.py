"""The command line: parse, call, print; the only place that exits."""
