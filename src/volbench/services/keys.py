"""Keys under which services hand their handles to workloads (ServiceContext.service).

A module of its own with no imports, so a workload and the service it reads can both
name the key without importing each other (services import workloads.base).
"""

FIO_CLIENTS = "fio_clients"  # services.fioservers -> workloads.fioclient
PGBENCH_CLIENTS = "pgbench_clients"  # services.pgclients -> workloads.pgbench_hosts
