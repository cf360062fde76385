# Item 16: DLOCK_STORE_FILE and DLOCK_METRICS_FILE do not reach CMD.
add_test(NAME adv43-child-env
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/adv43/test_child_env.sh $<TARGET_FILE:dlock_cli>)
dlock_tier(quick P adv43-child-env)
