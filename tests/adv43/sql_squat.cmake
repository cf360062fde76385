# Issue 43 items 3 and 17 (sql_squat.sh): a login with no rights on
# dlock's database or table holds a name's key on MariaDB and PostgreSQL
# (GET_LOCK, an advisory lock): status, the -v wait message and the
# --once-per skip line name its session as the server reports it, and
# name ?mode=lease, which it cannot block.  MariaDB: an its-mieger row is
# another client with its connection, created and ttl; a dlock of another
# database of the server shows as another client.
foreach(store POSTGRES MYSQL)
  string(TOLOWER ${store} lower)
  if(${store}_FOUND)
    add_test(NAME adv43-sql-squat-${lower}
      COMMAND sh -c "exec \"$0\" ${lower} \"$1\" \"$2\" \"$DLOCK_TEST_${store}_URL\" \"$DLOCK_TEST_${store}_DIR\""
              ${CMAKE_CURRENT_SOURCE_DIR}/adv43/sql_squat.sh
              $<TARGET_FILE:dlock_cli>
              ${PROJECT_SOURCE_DIR}/scripts/server-${lower}.sh)
    set_tests_properties(adv43-sql-squat-${lower} PROPERTIES
                         SKIP_RETURN_CODE 77 TIMEOUT 90)
    dlock_tier(quick P adv43-sql-squat-${lower})
  endif()
endforeach()
# Issue 43 item 18 (redis_handoff_calls.sh): the lock calls (EVAL +
# EVALSHA, INFO commandstats) per waiting `dlock run` on Redis, at 10 and
# at 30 waiters: flat in the number of waiters (docs/performance.md gives
# the figure).  Server-wide counts: serial.
if(REDIS_FOUND)
  add_test(NAME adv43-redis-handoff-calls
    COMMAND sh -c "exec \"$0\" \"$1\" \"$2\" \"$DLOCK_TEST_REDIS_URL\" \"$DLOCK_TEST_REDIS_DIR\""
            ${CMAKE_CURRENT_SOURCE_DIR}/adv43/redis_handoff_calls.sh
            $<TARGET_FILE:dlock_cli>
            ${PROJECT_SOURCE_DIR}/scripts/server-redis.sh)
  set_tests_properties(adv43-redis-handoff-calls PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 120)
  dlock_tier(quick S adv43-redis-handoff-calls)
endif()
