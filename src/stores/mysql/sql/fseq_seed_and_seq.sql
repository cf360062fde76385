-- A fragment of fseq_seed_value.sql (its line's newline is not sent).
, IFNULL((SELECT MAX(fence) FROM {{seq}}), 0) + 1
