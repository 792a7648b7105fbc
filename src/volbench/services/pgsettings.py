"""Which PostgreSQL server settings an experiment may give (`settings:` of a pgbench
workload): an allow-list, in this one place.

The throwaway cluster runs as the `postgres` user, started by root. A setting is handed
to the postmaster as `-c name=value`, and several settings are ways out of the cluster:
`config_file` (every line of another file bypasses these checks), `hba_file`,
`include*`, every `*_command` (a shell command run by the server), every library or
provider setting (`shared_preload_libraries`, `jit_provider`: a `.so` whose constructor
runs in the server), `dynamic_library_path`, `data_directory`, paths of logs, keys and
certificates, custom settings of extensions (`plperl.on_init` is Perl code run as
postgres). A list of what to refuse would miss the next such setting; so the cluster
takes only what this module allows, and refuses everything else naming this list.

What is allowed shapes performance and durability: memory, connections, I/O concurrency,
the background writer, WAL and its syncing, checkpoints, the planner's costs and
methods, autovacuum and vacuum's cost, locks, statement timeouts, statistics tracking,
and logging of checkpoints and slow statements (into the server log volbench keeps, in
its private directory outside the target). Every allowed setting takes a number, an
on/off or a word of a fixed list (an enum): none takes a string, so none can name a file,
a library or a command. tests/system/test_pg_settings_walk.py walks pg_settings on every
PostgreSQL major the tests install and fails if an allowed setting is a string, or an
enum whose values are not plain words (docs/workloads/pgbench.md lists them).
"""

from __future__ import annotations

import re

# Set by volbench to keep the cluster private (services/postgres.py FIXED).
FIXED = ("listen_addresses", "unix_socket_directories", "port", "dynamic_shared_memory_type")

# The allow-list, by PostgreSQL's own groups (pg_settings.category). Settings of one
# major only are listed too: the server of another major refuses an unknown name itself.
ALLOWED: dict[str, tuple[str, ...]] = {
    "memory": (
        "shared_buffers", "huge_pages", "huge_page_size", "shared_memory_type",
        "temp_buffers", "max_prepared_transactions", "work_mem", "hash_mem_multiplier",
        "maintenance_work_mem", "autovacuum_work_mem", "logical_decoding_work_mem",
        "min_dynamic_shared_memory", "vacuum_buffer_usage_limit", "max_stack_depth",
        "temp_file_limit", "commit_timestamp_buffers", "multixact_member_buffers",
        "multixact_offset_buffers", "notify_buffers", "serializable_buffers",
        "subtransaction_buffers", "transaction_buffers", "max_files_per_process",
    ),
    "connections": (
        "max_connections", "superuser_reserved_connections", "reserved_connections",
    ),
    "I/O and workers": (
        "backend_flush_after", "effective_io_concurrency", "maintenance_io_concurrency",
        "io_method", "io_workers", "io_combine_limit", "io_max_combine_limit",
        "io_max_concurrency", "max_worker_processes", "max_parallel_workers",
        "max_parallel_workers_per_gather", "max_parallel_maintenance_workers",
        "parallel_leader_participation", "file_copy_method", "file_extend_method",
        "old_snapshot_threshold",
    ),
    "background writer": (
        "bgwriter_delay", "bgwriter_flush_after", "bgwriter_lru_maxpages",
        "bgwriter_lru_multiplier",
    ),
    "vacuum cost": (
        "vacuum_cost_delay", "vacuum_cost_limit", "vacuum_cost_page_dirty",
        "vacuum_cost_page_hit", "vacuum_cost_page_miss",
    ),
    "WAL": (
        "wal_level", "fsync", "synchronous_commit", "wal_sync_method", "full_page_writes",
        "wal_log_hints", "wal_compression", "wal_init_zero", "wal_recycle", "wal_buffers",
        "wal_writer_delay", "wal_writer_flush_after", "wal_skip_threshold", "commit_delay",
        "commit_siblings", "data_sync_retry", "recovery_init_sync_method",
        "wal_decode_buffer_size", "recovery_prefetch", "track_commit_timestamp",
        # wal_level=minimal needs max_wal_senders=0.
        "max_wal_senders", "max_replication_slots", "wal_keep_size",
    ),
    "checkpoints": (
        "checkpoint_timeout", "checkpoint_completion_target", "checkpoint_flush_after",
        "checkpoint_warning", "max_wal_size", "min_wal_size",
    ),
    "planner": (
        "seq_page_cost", "random_page_cost", "cpu_tuple_cost", "cpu_index_tuple_cost",
        "cpu_operator_cost", "parallel_setup_cost", "parallel_tuple_cost",
        "min_parallel_table_scan_size", "min_parallel_index_scan_size",
        "effective_cache_size", "jit", "jit_above_cost", "jit_inline_above_cost",
        "jit_optimize_above_cost", "default_statistics_target", "constraint_exclusion",
        "cursor_tuple_fraction", "from_collapse_limit", "join_collapse_limit",
        "plan_cache_mode", "recursive_worktable_factor", "geqo", "geqo_threshold",
        "geqo_effort", "geqo_pool_size", "geqo_generations", "geqo_selection_bias",
        "geqo_seed", "enable_async_append", "enable_bitmapscan", "enable_gathermerge",
        "enable_hashagg", "enable_hashjoin", "enable_incremental_sort",
        "enable_indexonlyscan", "enable_indexscan", "enable_material", "enable_memoize",
        "enable_mergejoin", "enable_nestloop", "enable_parallel_append",
        "enable_parallel_hash", "enable_partition_pruning", "enable_partitionwise_join",
        "enable_partitionwise_aggregate", "enable_presorted_aggregate", "enable_seqscan",
        "enable_sort", "enable_tidscan", "enable_group_by_reordering",
        "enable_distinct_reordering", "enable_self_join_elimination",
    ),
    "autovacuum": (
        "autovacuum", "autovacuum_max_workers", "autovacuum_worker_slots",
        "autovacuum_naptime", "autovacuum_vacuum_threshold",
        "autovacuum_vacuum_max_threshold", "autovacuum_vacuum_insert_threshold",
        "autovacuum_analyze_threshold", "autovacuum_vacuum_scale_factor",
        "autovacuum_vacuum_insert_scale_factor", "autovacuum_analyze_scale_factor",
        "autovacuum_freeze_max_age", "autovacuum_multixact_freeze_max_age",
        "autovacuum_vacuum_cost_delay", "autovacuum_vacuum_cost_limit",
        "vacuum_freeze_min_age", "vacuum_freeze_table_age", "vacuum_multixact_freeze_min_age",
        "vacuum_multixact_freeze_table_age", "vacuum_failsafe_age",
        "vacuum_multixact_failsafe_age", "vacuum_truncate",
        "vacuum_max_eager_freeze_failure_rate", "vacuum_cleanup_index_scale_factor",
    ),
    "locks and timeouts": (
        "deadlock_timeout", "max_locks_per_transaction", "max_pred_locks_per_transaction",
        "max_pred_locks_per_relation", "max_pred_locks_per_page", "statement_timeout",
        "lock_timeout", "idle_in_transaction_session_timeout", "idle_session_timeout",
        "transaction_timeout", "default_transaction_isolation",
        "default_transaction_deferrable", "synchronize_seqscans", "default_toast_compression",
    ),
    "statistics and logging": (
        "track_activities", "track_counts", "track_io_timing", "track_wal_io_timing",
        "track_functions", "track_activity_query_size", "track_cost_delay_timing",
        "stats_fetch_consistency", "update_process_title", "log_checkpoints",
        "log_autovacuum_min_duration", "log_lock_waits", "log_temp_files",
        "log_min_duration_statement",
    ),
}
NAMES = frozenset(name for group in ALLOWED.values() for name in group)
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
# A value PostgreSQL reads as a number with a unit, on/off, or a word of an enum. Quotes,
# commas and slashes are never needed by an allowed setting
# (default_transaction_isolation's words have one blank: 'repeatable read').
# fullmatch, not match: `$` lets a trailing newline through ("on\n" passed plan and
# failed the server's start).
_VALUE = re.compile(r"-?[A-Za-z0-9_.+]+( [a-z]+)?")
LISTED = "docs/workloads/pgbench.md, 'Server settings'"


def problem(name: str, value: str | None = None) -> str | None:
    """Why `name` (with `value`) cannot be a setting of the throwaway cluster, or None.
    Everything the allow-list does not name is refused, naming where the list is."""
    if name in FIXED:
        return f"{name} is set by volbench to keep the cluster private"
    if name not in NAMES:
        why = _what_it_is(name)
        return (f"{name!r} is not a setting volbench lets an experiment change{why}; "
                f"settings: accepts the performance and durability settings listed in "
                f"{LISTED} (memory, WAL, checkpoints, fsync, I/O, planner, autovacuum, …)")
    if value is not None and not _VALUE.fullmatch(value):
        return (f"{name}={value!r} is not a number, on/off or one word; give a value "
                "such as 256MB, on, 0.9 or fdatasync")
    return None


def _what_it_is(name: str) -> str:
    """A few words on why a refused name is dangerous, when it is plainly so."""
    if not _NAME.match(name):
        return " (settings of extensions, with a '.', are never taken)" if "." in name \
            else " (not a PostgreSQL setting name)"
    for marks, what in ((("_command",), "it runs a shell command as postgres"),
                        (("librar", "provider"), "it loads code into the server"),
                        (("_file", "_directory", "_dir", "_path", "destdir", "include"),
                         "it names a file or a directory")):
        if any(mark in name for mark in marks):
            return f": {what}"
    return ""
