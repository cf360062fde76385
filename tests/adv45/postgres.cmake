# Issue 45's adversary pass on PostgreSQL's leader values
# (pg_value_race.sh): a deposed leader's value statement that reaches
# the record after its successor's never writes over it.  About 6 s; it
# adds a trigger of its own (one value's) to dlock_leaders: P.
if(POSTGRES_FOUND)
  add_test(NAME adv45-pg-value-race
    COMMAND sh -c "exec \"$0\" \"$1\" \"$2\" \"$DLOCK_TEST_POSTGRES_URL\" \"$DLOCK_TEST_POSTGRES_DIR\""
            ${CMAKE_CURRENT_SOURCE_DIR}/adv45/pg_value_race.sh
            $<TARGET_FILE:dlock_cli>
            ${PROJECT_SOURCE_DIR}/scripts/server-postgres.sh)
  set_tests_properties(adv45-pg-value-race PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 120)
  dlock_tier(quick P adv45-pg-value-race)
endif()
