# Issue 47's adversary pass (tests/adv47/*.sh): the CLI's traps, --json
# and log lines.
# long_shebang.sh: a '#!' path too long for the kernel runs with /bin/sh
# (as execvp does), not refused as a missing interpreter before the lock.
add_test(NAME adv47-shebang-long-sqlite
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/adv47/long_shebang.sh $<TARGET_FILE:dlock_cli>
          sqlite://${CMAKE_CURRENT_BINARY_DIR}/adv47-shebang-long.db)
set_tests_properties(adv47-shebang-long-sqlite PROPERTIES
                     SKIP_RETURN_CODE 77 TIMEOUT 60)
dlock_tier(quick P adv47-shebang-long-sqlite)
# other_client_json.sh: -w's "still held by another client" line is an
# error as the others are (--json's object, --log-format json's line).
if(POSTGRES_FOUND)
  add_test(NAME adv47-other-client-json-postgres
    COMMAND sh -c "exec \"$0\" \"$1\" \"$DLOCK_TEST_POSTGRES_URL\""
            ${CMAKE_CURRENT_SOURCE_DIR}/adv47/other_client_json.sh $<TARGET_FILE:dlock_cli>)
  set_tests_properties(adv47-other-client-json-postgres PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 90)
  dlock_tier(quick P adv47-other-client-json-postgres)
endif()
# retry_json.sh: -v's retry lines are warnings: a run whose store came up
# has no "error" for them.
if(REDIS_FOUND)
  add_test(NAME adv47-retry-json-redis
    COMMAND sh -c "exec \"$0\" \"$1\" \"$DLOCK_TEST_REDIS_URL\""
            ${CMAKE_CURRENT_SOURCE_DIR}/adv47/retry_json.sh $<TARGET_FILE:dlock_cli>)
  set_tests_properties(adv47-retry-json-redis PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 90)
  dlock_tier(quick P adv47-retry-json-redis)
endif()
# output_full.sh: stdout that cannot be written (/dev/full, closed) is
# an error, never exit 0 with nothing written.
add_test(NAME adv47-output-full-sqlite
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/adv47/output_full.sh $<TARGET_FILE:dlock_cli>
          sqlite://${CMAKE_CURRENT_BINARY_DIR}/adv47-output-full.db)
set_tests_properties(adv47-output-full-sqlite PROPERTIES
                     SKIP_RETURN_CODE 77 TIMEOUT 60)
dlock_tier(quick P adv47-output-full-sqlite)
# check_time.sh: dlock check against a Redis whose TIME is any int64
# (time_proxy.py answers it): no overflow, the check ends.
if(REDIS_FOUND)
  add_test(NAME adv47-check-time-redis
    COMMAND sh -c "exec \"$0\" \"$1\" \"$DLOCK_TEST_REDIS_URL\""
            ${CMAKE_CURRENT_SOURCE_DIR}/adv47/check_time.sh $<TARGET_FILE:dlock_cli>)
  set_tests_properties(adv47-check-time-redis PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 90)
  dlock_tier(quick P adv47-check-time-redis)
endif()
