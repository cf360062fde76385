# golden-run-mysql: every golden file of the MySQL store run (the DDL) or
# prepared (the rest) as it is on the throwaway MariaDB (run_mysql.py);
# golden-run-mysql-self: a broken golden file makes it fail.  Serial (S):
# the DDL creates what dlock would (tables, sequence, procedures) in the
# database the other entries share.
add_test(NAME golden-run-mysql
  COMMAND sh -c "exec python3 \"$0\" \"$1\" \"$DLOCK_TEST_MYSQL_URL\""
          ${CMAKE_CURRENT_SOURCE_DIR}/golden/run_mysql.py
          ${CMAKE_CURRENT_SOURCE_DIR}/golden/mysql)
dlock_tier(quick S golden-run-mysql)
set_tests_properties(golden-run-mysql PROPERTIES SKIP_RETURN_CODE 77)
add_test(NAME golden-run-mysql-self
  COMMAND sh -c "exec python3 \"$0\" --self-test \"$1\" \"$DLOCK_TEST_MYSQL_URL\""
          ${CMAKE_CURRENT_SOURCE_DIR}/golden/run_mysql.py
          ${CMAKE_CURRENT_SOURCE_DIR}/golden/mysql)
dlock_tier(quick S golden-run-mysql-self)
set_tests_properties(golden-run-mysql-self PROPERTIES SKIP_RETURN_CODE 77)
