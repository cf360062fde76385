# golden-run-redis: every golden script of the Redis store compiled by the
# server of $DLOCK_TEST_REDIS_URL (SCRIPT LOAD) and run on sample keys
# under a key prefix of its own (redis-cli --eval; run_redis.py says
# how).  Without the URL it skips (77), with CI=true it fails.
add_test(NAME golden-run-redis
  COMMAND python3 ${CMAKE_CURRENT_LIST_DIR}/run_redis.py
          ${CMAKE_CURRENT_LIST_DIR}/redis)
dlock_tier(quick P golden-run-redis)
set_tests_properties(golden-run-redis PROPERTIES SKIP_RETURN_CODE 77)
