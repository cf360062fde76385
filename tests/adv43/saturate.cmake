# Item 9: run records at the ends of int64 (planted in a SQLite store):
# history, status, list and --metrics-file compute nothing that overflows.
add_test(NAME adv43-saturate-sqlite
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/adv43/test_saturate.sh $<TARGET_FILE:dlock_cli>)
set_tests_properties(adv43-saturate-sqlite PROPERTIES SKIP_RETURN_CODE 77)
dlock_tier(quick P adv43-saturate-sqlite)
