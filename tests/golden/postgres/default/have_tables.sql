SELECT to_regclass('dlock_locks') IS NOT NULL AND
to_regclass('dlock_fences') IS NOT NULL AND
to_regclass('dlock_held') IS NOT NULL AND
to_regclass('dlock_fence_seq') IS NOT NULL AND
to_regproc('dlock_fence_raise_v1') IS NOT NULL AND
to_regproc('dlock_sem_acquire_v2') IS NOT NULL,
current_setting('max_locks_per_transaction')::bigint *
(current_setting('max_connections')::bigint +
current_setting('autovacuum_max_workers')::bigint + 1 +
current_setting('max_worker_processes')::bigint +
current_setting('max_wal_senders')::bigint +
current_setting('max_prepared_transactions')::bigint),
current_setting('max_locks_per_transaction')::bigint
