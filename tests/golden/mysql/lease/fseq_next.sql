SELECT NEXTVAL(`shared_locks_fseq`)
