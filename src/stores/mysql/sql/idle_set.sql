-- The assignments of a SET that bounds the session's idle transactions
-- to {{secs}} seconds (threat model R13).  The /*M!100300 */ comment runs
-- on MariaDB 10.3 and later only (keep it byte for byte: it is the
-- setting); the user variable keeps the statement valid everywhere.
@dl_idle = 0 /*M!100300 , SESSION idle_transaction_timeout = {{secs}} */
