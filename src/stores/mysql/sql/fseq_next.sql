-- A fence from the sequence (dlock__my_fseq_next()).
SELECT NEXTVAL({{fseq}})
