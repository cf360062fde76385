# golden-run-sqlite: every golden file of the SQLite store run as it is by
# SQLite (python3's sqlite3 module) in a fresh database file, the ones
# with ?N parameters bound to sample values (run_sqlite.py says how).
add_test(NAME golden-run-sqlite
  COMMAND python3 ${CMAKE_CURRENT_LIST_DIR}/run_sqlite.py
          ${CMAKE_CURRENT_LIST_DIR}/sqlite)
dlock_tier(quick P golden-run-sqlite)
