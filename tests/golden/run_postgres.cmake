# golden-run-postgres: every golden file of the PostgreSQL store, every
# variant, run (or, with $n parameters, prepared) as it is by the
# throwaway server of DLOCK_TEST_POSTGRES_URL, in a fresh schema
# (tests/golden/run_postgres.py; it first checks that a broken golden
# fails).  Included by tests/CMakeLists.txt.
find_program(DLOCK_PSQL psql)
if(DLOCK_PSQL AND ";${dlock_stores};" MATCHES ";postgres;")
  add_test(NAME golden-run-postgres
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/golden/run_postgres.py
            ${CMAKE_CURRENT_SOURCE_DIR}/golden ${DLOCK_PSQL})
  set_tests_properties(golden-run-postgres PROPERTIES SKIP_RETURN_CODE 77)
  dlock_tier(quick P golden-run-postgres)
endif()
