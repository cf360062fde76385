# etcd under faults (issue 38), included from tests/CMakeLists.txt after
# the torture section (ETCD_FOUND, dlock_server_torture(), dlock-torture in
# scope; CMAKE_CURRENT_SOURCE_DIR is tests/).  Long tier only.
if(ETCD_FOUND)
  # Holder faults (kill -9, SIGSTOP past the lease) on the single member,
  # as torture-redis: every workload, and the control that must fail.
  add_test(NAME torture-etcd
    COMMAND sh -c "exec \"$0\" \"$1\" \"$DLOCK_TEST_ETCD_URL\" 4"
            ${CMAKE_CURRENT_SOURCE_DIR}/torture/run.sh
            $<TARGET_FILE:dlock-torture>)
  dlock_tier(long C torture-etcd)
endif()
