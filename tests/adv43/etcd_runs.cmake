# The etcd store's run records (issue 43, items 2 and 13;
# tests/adv43/etcd_runs.sh).  Each failed on e2c3a4f.
if(ETCD_FOUND)
  # Run records under a parent name's queue range (etcdctl lock NAME
  # waited forever behind NAME/x's), the previous layout's records read
  # and moved, an unreadable ok record (--once skipped), history times
  # from the host's clock (libfaketime 400 days back).
  add_test(NAME etcd-runs-records
    COMMAND sh -c "exec \"$0\" \"$1\" records \"$DLOCK_TEST_ETCD_URL\""
            ${CMAKE_CURRENT_SOURCE_DIR}/adv43/etcd_runs.sh
            $<TARGET_FILE:dlock_cli>)
  set_tests_properties(etcd-runs-records PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 120)
  dlock_tier(quick P etcd-runs-records)
  # A user with no role keeps dlock's start lease alive (etcd 3.4 checks
  # no permission on LeaseLeases and LeaseKeepAlive): --once-per never
  # ran again.  A throwaway etcd with auth on.
  add_test(NAME etcd-runs-keepalive
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/adv43/etcd_runs.sh
            $<TARGET_FILE:dlock_cli> auth ${PROJECT_SOURCE_DIR}/scripts)
  set_tests_properties(etcd-runs-keepalive PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 120)
  dlock_tier(quick P etcd-runs-keepalive)
  # Leader changes on a 3-member cluster restarted the period (a lease's
  # countdown): the run after the period was skipped.
  add_test(NAME etcd-runs-leader
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/adv43/etcd_runs.sh
            $<TARGET_FILE:dlock_cli> leader ${PROJECT_SOURCE_DIR}/scripts)
  set_tests_properties(etcd-runs-leader PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 300)
  dlock_tier(long T etcd-runs-leader)
endif()
