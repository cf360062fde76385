-- insert_row()'s transaction (acquire.c).
START TRANSACTION
