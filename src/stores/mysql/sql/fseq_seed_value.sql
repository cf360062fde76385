-- The seed: above the sequence's own value (a clean restart), the durable
-- fences (lease mode's, and the seeds recorded in the '' row) and the
-- server's clock in microseconds (what a crash may have taken back of the
-- sequence itself).  {{and_seq}}: dlock 0.2's per-name counters too,
-- where {{seq}} is there (fseq_seed_and_seq.sql), else nothing.
SELECT GREATEST(NEXTVAL({{fseq}}), {{nowus}}, IFNULL((SELECT MAX(fence) FROM {{fences}}), 0) + 1{{and_seq}})
