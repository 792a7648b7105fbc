"""Who may connect to a throwaway cluster, and as which role: its pg_hba.conf and
pg_ident.conf, written by volbench over initdb's (which trust every local user as any
role, the superuser included).

Local connections use `peer` authentication through one user map: the kernel says which
system user is on the other end of the socket, and the map says which roles that user
may be.

    postgres        <- root (volbench's own statements), postgres
    volbench_bench  <- root, the run's sandbox user (pgbench, system/sandbox.py)

So pgbench, and anything a script runs through `\\shell` in its sandbox, can only ever
be `volbench_bench`, a role that cannot run programs or touch server files
(services/pgrole.py): `psql -U postgres` from inside the sandbox is refused by the
server. The socket directory is also closed to every other system user (mode 0710,
group: the sandbox user's). With `clients_from:`, TCP admits exactly the client hosts'
addresses, as `volbench_bench` only (trust: the hosts are the user's own).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from pathlib import Path

from volbench.services import pgrole
from volbench.system.recipe import Recipe

MAP = "volbench"
SUPERUSER = "postgres"


def hba_lines(tcp_clients: Sequence[str] = ()) -> list[str]:
    """pg_hba.conf: the superuser and the benchmark role through the peer map on the
    socket, TCP only from the client hosts and only as the benchmark role."""
    lines = ["# volbench: peer through the map; the benchmark role alone over TCP",
             f"local all {SUPERUSER} peer map={MAP}",
             f"local all {pgrole.BENCH_ROLE} peer map={MAP}"]
    for client in tcp_clients:
        bits = ipaddress.ip_address(client).max_prefixlen
        lines.append(f"host all {pgrole.BENCH_ROLE} {client}/{bits} trust")
    return lines


def ident_lines(sandbox_user: str | None) -> list[str]:
    """pg_ident.conf: which system user may be which role."""
    lines = ["# volbench: system user -> role",
             f"{MAP} root {SUPERUSER}", f"{MAP} {SUPERUSER} {SUPERUSER}",
             f"{MAP} root {pgrole.BENCH_ROLE}"]
    if sandbox_user:
        lines.append(f"{MAP} {sandbox_user} {pgrole.BENCH_ROLE}")
    return lines


def write(datadir: Path, tcp_clients: Sequence[str], sandbox_user: str | None,
          recipe: Recipe) -> None:
    """Replace initdb's pg_hba.conf and pg_ident.conf (keeping their owner and mode)."""
    hba, ident = hba_lines(tcp_clients), ident_lines(sandbox_user)
    (datadir / "pg_hba.conf").write_text("\n".join(hba) + "\n")
    (datadir / "pg_ident.conf").write_text("\n".join(ident) + "\n")
    recipe.note(f"wrote {datadir / 'pg_hba.conf'}: " + "; ".join(hba[1:]))
    recipe.note(f"wrote {datadir / 'pg_ident.conf'}: " + "; ".join(ident[1:]))
