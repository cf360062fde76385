-- Release a held lock: its row (the GET_LOCK after it, release_getlock.sql).
DELETE FROM {{table}} {{own}}
