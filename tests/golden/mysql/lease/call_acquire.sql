CALL `shared_locks_acq2`(%s, %s, '%s', %lld, %s, %lld)
