-- Is {{fseq}} seeded since the server started?  (schema.c,
-- dlock__my_fseq_seed(): a row in the MEMORY table {{boot}}.)
SELECT COUNT(*) FROM {{boot}}
