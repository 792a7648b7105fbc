"""Servers a workload needs (PostgreSQL for pgbench), started on the target under test.

A service is a context manager the runner opens once per target (and service key)
inside the target's teardown stack; every resource it creates is journaled, so a
normal exit, an exception, a signal and `volbench cleanup` after a SIGKILL all end
with the server stopped and its files removed.
"""
