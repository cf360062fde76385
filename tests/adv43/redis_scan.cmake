# Item 8 on Redis: a SCAN cursor that never returns to 0 (a fake Redis,
# tests/bounds/fake_redis_hint.py): `dlock list` ends with a clear error.
add_test(NAME adv43-redis-scan
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/adv43/test_redis_scan.sh $<TARGET_FILE:dlock_cli>)
set_tests_properties(adv43-redis-scan PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
dlock_tier(long T adv43-redis-scan)
