# Issue 45's adversary pass on the election CLI (tests/adv45/*.sh).
# watch_pipe.sh: `dlock leader --watch | head -1` ends with head.
add_test(NAME adv45-watch-pipe-sqlite
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/adv45/watch_pipe.sh $<TARGET_FILE:dlock_cli>
          sqlite://${CMAKE_CURRENT_BINARY_DIR}/adv45-watch-pipe.db)
set_tests_properties(adv45-watch-pipe-sqlite PROPERTIES TIMEOUT 60)
dlock_tier(quick T adv45-watch-pipe-sqlite)
# health_tree.sh: an overrun --health-cmd is killed with its children.
add_test(NAME adv45-health-tree-sqlite
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/adv45/health_tree.sh $<TARGET_FILE:dlock_cli>
          sqlite://${CMAKE_CURRENT_BINARY_DIR}/adv45-health-tree.db)
set_tests_properties(adv45-health-tree-sqlite PROPERTIES TIMEOUT 60)
dlock_tier(quick T adv45-health-tree-sqlite)
# watch_backoff.sh: a watch's back-off starts again after a good read.
if(REDIS_FOUND)
  add_test(NAME adv45-watch-backoff-redis
    COMMAND sh -c "exec \"$0\" \"$1\" \"$DLOCK_TEST_REDIS_URL\""
            ${CMAKE_CURRENT_SOURCE_DIR}/adv45/watch_backoff.sh $<TARGET_FILE:dlock_cli>)
  set_tests_properties(adv45-watch-backoff-redis PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 120)
  dlock_tier(quick T adv45-watch-backoff-redis)
endif()
