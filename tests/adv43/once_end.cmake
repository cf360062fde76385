# Issue 43, item 1: `dlock run --once` ran a job again that had succeeded
# when the store blinked as the run ended (the end record was tried once).
# Each case starts its own server (it stops or kills it) in a temporary
# directory: long tier.  tests/adv43/once_end.sh says what each asserts.
if(ETCD_FOUND)
  add_test(NAME adv43-once-end-etcd
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/adv43/once_end.sh
            $<TARGET_FILE:dlock_cli> etcd 6)
  set_tests_properties(adv43-once-end-etcd PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 300)
  dlock_tier(long T adv43-once-end-etcd)
endif()
if(POSTGRES_FOUND)
  add_test(NAME adv43-once-end-postgres-lease
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/adv43/once_end.sh
            $<TARGET_FILE:dlock_cli> postgres-lease 4)
  set_tests_properties(adv43-once-end-postgres-lease PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 300)
  dlock_tier(long T adv43-once-end-postgres-lease)
endif()
if(MYSQL_FOUND)
  add_test(NAME adv43-once-end-mysql-lease
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/adv43/once_end.sh
            $<TARGET_FILE:dlock_cli> mysql-lease 4)
  set_tests_properties(adv43-once-end-mysql-lease PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 300)
  dlock_tier(long T adv43-once-end-mysql-lease)
endif()
# What --once does when the end really cannot be written (the server back
# only after dlock exits): exit with the command's status within the
# lease, warn, and the next --once runs the job (the run ABANDONED).
if(POSTGRES_FOUND)
  add_test(NAME adv43-once-end-postgres-lease-gone
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/adv43/once_end.sh
            $<TARGET_FILE:dlock_cli> postgres-lease-gone)
  set_tests_properties(adv43-once-end-postgres-lease-gone PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 180)
  dlock_tier(long T adv43-once-end-postgres-lease-gone)
endif()
