SELECT NEXTVAL("app_locks_fseq")
