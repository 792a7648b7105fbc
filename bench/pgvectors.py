"""The pgbench and PostgreSQL attack vectors of issue 34, and the ones tried beyond it:
one catalogue for bench/chaos.py --vectors (the real CLI, a real server, sentinels) and
tests/system/test_pg_vectors.py (CI).

Each vector is one thing a hostile experiment file tries, and what must happen:

- `refused`: the experiment file is refused when it is read (`volbench plan` exits 1),
  with a line naming the field and `said`;
- `contained`: it is allowed to run, and the wall stops it: SQL run as the benchmark
  role (`sql`, which must fail with `said`), or a shell command inside pgbench's sandbox
  (the probe of tests/system/test_pg_sandbox.py, one line per vector).

Placeholders: {S} a root-only folder, {O} a folder anyone may write (what postgres could
write there shows an escape as postgres), {L} a loop device no experiment names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Vector:
    name: str
    kind: str  # script, options, settings, sql, sandbox, files
    how: str
    expect: str  # refused | contained
    said: str  # in the refusal, or in the error the wall gives ('|': any of them)
    workload: dict[str, Any] = field(default_factory=dict)  # pgbench fields (refused)
    script: str = ""  # a script file's text, given as `script:` ({F} in options: its path)
    sql: str = ""  # run as volbench_bench (contained)


def _script(name: str, how: str, text: str, said: str = "which runs a shell command",
            **workload: Any) -> Vector:
    return Vector(name, "script", how, "refused", said, workload, script=text)


def _options(name: str, how: str, options: list[str], said: str) -> Vector:
    return Vector(name, "options", how, "refused", said, {"options": options})


def _setting(name: str, key: str, value: Any, said: str = "is not a setting volbench lets"
             ) -> Vector:
    return Vector(name, "settings", f"settings: {{{key}: {value!r}}}", "refused", said,
                  {"settings": {key: value}})


def _sql(name: str, sql: str, said: str) -> Vector:
    return Vector(name, "sql", sql, "contained", said, sql=sql)


SHELL = "touch {S}/escaped"
SCRIPTS = [
    _script("shell-line-start", "\\shell at a line's start", f"\\shell {SHELL}\n"),
    _script("shell-after-sql", "\\shell after `SELECT 1;` (issue)", f"SELECT 1; \\shell {SHELL}\n"),
    _script("shell-after-comment", "\\shell after /* c */ (issue)",
            f"/* c */ \\shell {SHELL}\n"),
    _script("shell-upper", "\\SHELL (pgbench ignores case)", f"\\SHELL {SHELL}\n"),
    _script("setshell", "\\setshell", f"\\setshell v {SHELL}\n"),
    _script("shell-indented", "\\shell after blanks, on line 3",
            f"\\set a 1\nSELECT :a;\n   \\shell {SHELL}\n"),
    _script("shell-after-string", "\\shell after a quoted string with a ;",
            f"SELECT 'a;b'; \\shell {SHELL}\n"),
    _script("shell-after-dollar", "\\shell after a dollar-quoted body",
            f"SELECT $$x$$; \\shell {SHELL}\n"),
    _script("shell-in-options", "a script with \\shell through -f",
            f"\\shell {SHELL}\n", options=["-f", "{F}"]),
    _script("bundled-file", "bundled -Cf/abs/evil.sql@1 (issue)", f"\\shell {SHELL}\n",
            options=["-Cf{F}@1"]),
    _script("file-prefix", "--fil=FILE: a prefix of --file and --fillfactor",
            f"\\shell {SHELL}\n", said="ambiguous abbreviation", options=["--fil={F}"]),
    _script("file-weight", "--file=FILE@5", f"\\shell {SHELL}\n", options=["--file={F}@5"]),
    _script("script-dev-zero", "-f /dev/zero (issue: read whole into memory)", "",
            said="is a character device, not a regular file", options=["-f", "/dev/zero"]),
    _script("script-directory", "-f a directory", "", said="is a directory, not a regular",
            options=["-f", "/tmp"]),
    # Tried after the catalogue's 92 (none escaped the wall, this one did): volbench read
    # it as root and pgbench's syntax error stored its first line in the run's stderr.
    _script("script-private-file", "-f /etc/shadow: a file only root may read", "",
            said="is private (mode", options=["-f", "/etc/shadow"]),
]
OPTIONS = [
    _options("bundled-user", "-Upostgres: the superuser", ["-Upostgres"], "is set by volbench"),
    _options("user-prefix", "--user=postgres: a prefix of --username", ["--user=postgres"],
             "is set by volbench"),
    _options("host-system", "-h /var/run/postgresql: another server", ["-h",
             "/var/run/postgresql"], "is set by volbench"),
    _options("port-bundled", "-p5432 -h localhost", ["-p5432", "-hlocalhost"],
             "is set by volbench"),
    _options("dbname-17", "-d postgres (pgbench 17: --dbname)", ["-d", "postgres"],
             "the database is volbench's"),
    _options("positional-db", "a database name as an argument", ["postgres"], "is not an option"),
    _options("double-dash", "`--` then arguments", ["--", "-Upostgres"], "is not an option"),
    _options("log-prefix", "--log-prefix=/etc/x: logs elsewhere", ["--log-prefix=/etc/x"],
             "is set by volbench"),
    _options("ambiguous", "--p: ambiguous prefix", ["--p=1"], "ambiguous abbreviation"),
    Vector("init-user", "options", "init_options: [-Upostgres]", "refused",
           "is set by volbench", {"init_options": ["-Upostgres"]}),
]
SETTINGS = [
    _setting("config-file", "config_file", "/tmp/x.conf", "names a file or a directory"),
    _setting("hba-file", "hba_file", "/tmp/hba"),
    _setting("ident-file", "ident_file", "/tmp/ident"),
    _setting("include", "include", "/tmp/x.conf"),
    _setting("include-dir", "include_dir", "/tmp"),
    _setting("include-if-exists", "include_if_exists", "/tmp/x.conf"),
    _setting("archive-command", "archive_command", "touch {O}/a",
             "runs a shell command as postgres"),
    _setting("restore-command", "restore_command", "touch {O}/r"),
    _setting("ssl-passphrase-command", "ssl_passphrase_command", "touch {O}/p"),
    _setting("archive-library", "archive_library", "/tmp/evil", "loads code into the server"),
    _setting("preload-path", "shared_preload_libraries", "/tmp/evil.so",
             "loads code into the server"),
    _setting("preload-name", "shared_preload_libraries", "pg_stat_statements"),
    _setting("session-preload", "session_preload_libraries", "evil"),
    _setting("jit-provider", "jit_provider", "../../../../tmp/evil", "loads code"),
    _setting("dynamic-library-path", "dynamic_library_path", "/tmp"),
    _setting("data-directory", "data_directory", "/var/lib/postgresql/15/main"),
    _setting("external-pid-file", "external_pid_file", "/etc/x.pid"),
    _setting("log-directory", "log_directory", "/var/log"),
    _setting("ssl-key-file", "ssl_key_file", "/etc/ssl/private/x.key"),
    _setting("extension-custom", "plperl.on_init", "system('touch {O}/perl')",
             "settings of extensions, with a '.', are never taken"),
    _setting("port", "port", 5432, "is set by volbench to keep the cluster private"),
    _setting("value-injection", "work_mem", "4MB -c archive_command=x",
             "is not a number, on/off or one word"),
    _setting("value-newline", "work_mem", "4MB\narchive_command=x",
             "control character|not a number, on/off or one word"),
    _setting("value-trailing-newline", "fsync", "on\n", "is not a number, on/off or one word"),
]
# PostgreSQL 15 says "must be superuser …", 16 on "permission denied to COPY …".
COPY = "must be superuser|permission denied to COPY"
# {P}: a backend of the superuser's, open while the vectors run.
SQL = [
    _sql("copy-to-program", "COPY (SELECT 1) TO PROGRAM 'touch {O}/p'", COPY),
    _sql("copy-from-program", "COPY t FROM PROGRAM 'id'", COPY),
    _sql("copy-to-file", "COPY (SELECT 1) TO '{O}/f'", COPY),
    _sql("copy-from-file", "COPY t FROM '/etc/passwd'", COPY),
    _sql("lo-import", "SELECT lo_import('/etc/passwd')", "permission denied"),
    _sql("lo-export", "SELECT lo_export(lo_create(0), '{O}/lo')", "permission denied"),
    _sql("read-file", "SELECT pg_read_file('/etc/passwd')", "permission denied"),
    _sql("read-binary-file", "SELECT pg_read_binary_file('/etc/passwd')", "permission denied"),
    _sql("ls-dir", "SELECT pg_ls_dir('/')", "permission denied"),
    _sql("stat-file", "SELECT pg_stat_file('/etc/passwd')", "permission denied"),
    # Not installed here (refused for that), and not trusted where they are (refused for
    # that): the role never gets an untrusted language or a file reader.
    _sql("untrusted-language", "CREATE EXTENSION plpython3u", "plpython3u"),
    _sql("untrusted-perl", "CREATE EXTENSION plperlu", "plperlu"),
    _sql("file-fdw", "CREATE EXTENSION file_fdw", "file_fdw"),
    _sql("adminpack", "CREATE EXTENSION adminpack", "adminpack"),
    _sql("c-function", "CREATE FUNCTION f() RETURNS int AS '{O}/x.so', 'f' LANGUAGE C",
         "permission denied for language c"),
    _sql("load", "LOAD '{O}/x.so'", "access to library"),
    _sql("sql-session-preload", "SET session_preload_libraries = 'x'", "permission denied"),
    _sql("alter-system", "ALTER SYSTEM SET archive_command = 'touch {O}/a'",
         "permission denied"),
    _sql("set-role", "SET ROLE postgres", "permission denied"),
    _sql("alter-role-superuser", "ALTER ROLE volbench_bench SUPERUSER",
         "permission denied|must be superuser"),
    _sql("grant-program", "GRANT pg_execute_server_program TO volbench_bench",
         "permission denied|must have admin option"),
    _sql("create-role", "CREATE ROLE x SUPERUSER", "permission denied|must be superuser"),
    _sql("create-tablespace", "CREATE TABLESPACE x LOCATION '{O}'", "permission denied"),
    _sql("create-database", "CREATE DATABASE x", "permission denied"),
    _sql("reload", "SELECT pg_reload_conf()", "permission denied"),
    _sql("event-trigger", "CREATE EVENT TRIGGER x ON ddl_command_start EXECUTE FUNCTION f()",
         "permission denied"),
    _sql("sql-dynamic-library-path", "SET dynamic_library_path = '{O}'", "permission denied"),
    _sql("terminate-backend", "SELECT pg_terminate_backend({P})",
         "permission denied|must be a superuser"),
    # The audit of issue 34 (PostgreSQL 15 and 18).
    _sql("role-session-preload",
         "ALTER ROLE volbench_bench SET session_preload_libraries = '{O}/x.so'",
         "permission denied to set parameter"),
    _sql("set-log-statement", "SET log_statement = 'all'", "permission denied"),
    _sql("create-subscription", "CREATE SUBSCRIPTION s CONNECTION 'host=/tmp' PUBLICATION p",
         "must be superuser|permission denied"),
    _sql("dblink", "CREATE EXTENSION dblink", "dblink"),
    _sql("postgres-fdw", "CREATE EXTENSION postgres_fdw", "postgres_fdw"),
    _sql("pg-catalog-function",
         "CREATE FUNCTION pg_catalog.pg_database_size(name) RETURNS bigint LANGUAGE sql "
         "AS 'SELECT 1::bigint'", "permission denied for schema pg_catalog"),
    _sql("alter-database-postgres", "ALTER DATABASE postgres SET search_path = public",
         "must be owner"),
    _sql("alter-database-template1", "ALTER DATABASE template1 SET search_path = public",
         "must be owner"),
    _sql("reassign-owned", "REASSIGN OWNED BY volbench_bench TO postgres",
         "permission denied"),
    _sql("schema-to-postgres", "ALTER SCHEMA public OWNER TO postgres",
         "must be member|must be able to SET ROLE"),
    _sql("switch-wal", "SELECT pg_switch_wal()", "permission denied"),
    _sql("rotate-logfile", "SELECT pg_rotate_logfile()", "permission denied"),
    _sql("do-copy-to-program",
         "DO $$BEGIN COPY (SELECT 1) TO PROGRAM 'touch {O}/do'; END$$", COPY),
]
# What the sandbox probe tries, through \\shell, in one pgbench run whose friendly check
# is switched off (tests/system/test_pg_sandbox.py, bench/chaos.py --vectors): each line
# a vector of its own, each must say "refused". It writes its findings where pgbench's
# logs go (pgbench_txlog.probe), which volbench keeps with the run. Variables: ROOTONLY,
# LOOPDEV, SERVICE, OPEN, PSQL, VOLBENCH_PID, SECRET.
PROBE = r"""
exec > pgbench_txlog.probe 2>&1
say() {
  if why=$("$@" 2>&1 < /dev/null); then echo "$name: DONE"
  else echo "$name: refused ($(echo "$why" | head -n 1))"; fi
}
echo "uid: $(id -u) groups: $(id -G)"
name=rootonly say touch "$ROOTONLY/planted"
name=loopdev say dd if=/dev/zero of="$LOOPDEV" bs=4096 count=1 conv=notrunc
name=devdir say sh -c 'ls /dev | grep -q loop'
name=tmp say touch /tmp/volbench-sandbox-probe
name=devshm say touch /dev/shm/volbench-sandbox-probe
name=vartmp say touch /var/tmp/volbench-sandbox-probe
name=service say touch "$SERVICE/planted"
# The server's socket and port, from pgbench's own command line.
for p in /proc/[0-9]*; do
  case "$(tr '\0' ' ' < $p/cmdline)" in *pgbench\ -h*) set -- $(tr '\0' ' ' < $p/cmdline) ;; esac
done
while [ $# -gt 0 ]; do case "$1" in -h) host=$2 ;; -p) port=$2 ;; esac; shift; done
echo "server: $host $port"
name=superuser say "$PSQL" -X -h "$host" -p "$port" -U postgres -d postgres \
    -c "COPY (SELECT 1) TO PROGRAM 'touch $OPEN/by-postgres'"
name=maintenance say "$PSQL" -X -h "$host" -p "$port" -U volbench_bench -d postgres -c 'SELECT 1'
name=program say "$PSQL" -X -h "$host" -p "$port" -U volbench_bench -d bench_s1 \
    -c "COPY (SELECT 1) TO PROGRAM 'touch $OPEN/by-bench'"
name=killparent say kill -0 "$VOLBENCH_PID"
echo "processes: $(ls /proc | grep -c '^[0-9]')"
name=setuid say su -c id root
name=remount say unshare -Urm sh -c 'mount -o remount,rw / && touch /etc/volbench-probe'
name=shadow say cat /etc/shadow
echo "secret in env: $(env | grep -c "$SECRET")"
ln -s /etc/shadow pgbench_txlog.shadow
mkfifo pgbench_txlog.fifo
setsid sleep 300 < /dev/null > /dev/null 2>&1 &
echo probed
"""


# The shell commands the sandbox probe tries: each a vector of its own, each contained.
SANDBOX = [
    Vector(name, "sandbox", how, "contained", "refused") for name, how in (
        ("rootonly", "touch a file in a root-only folder"),
        ("loopdev", "write a loop device no experiment names"),
        ("devdir", "see any disk in /dev"),
        ("tmp", "write /tmp"), ("devshm", "write /dev/shm"), ("vartmp", "write /var/tmp"),
        ("service", "write the cluster's service folder (its socket's)"),
        ("superuser", "psql -U postgres through the socket: COPY TO PROGRAM"),
        ("maintenance", "connect to the postgres database"),
        ("program", "COPY TO PROGRAM as the benchmark role"),
        ("killparent", "signal volbench's own process"),
        ("setuid", "su to root"), ("remount", "a user namespace remounting / writable"),
        ("shadow", "read /etc/shadow"),
        ("environment", "find the store's password in the environment"),
        ("link-for-root", "a link to /etc/shadow planted for volbench to read as root"),
        ("fifo-for-root", "a FIFO planted for volbench to block on"),
        ("daemon", "a process left running after the run"),
    )]

VECTORS: list[Vector] = [*SCRIPTS, *OPTIONS, *SETTINGS, *SQL, *SANDBOX]


def said(vector: Vector, text: str) -> bool:
    """Does `text` (a refusal, an error) say what `vector` expects?"""
    return any(part in text for part in vector.said.split("|"))
