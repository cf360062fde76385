SELECT GREATEST(NEXTVAL(`shared_locks_fseq`), CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS UNSIGNED), IFNULL((SELECT MAX(fence) FROM `shared_locks_fences`), 0) + 1)
