# issue 43, etcd grants and leases (items 10 and 4), included from
# tests/CMakeLists.txt (ETCD_FOUND, dlock_tier() in scope;
# CMAKE_CURRENT_SOURCE_DIR is tests/).
if(ETCD_FOUND)
  # A waiter granted late in its wait slice (a release, a kill -9 of the
  # holder): a whole lease from the refresh that covers the grant, and
  # `dlock run` runs its command to its end (it exited 75 at once).
  add_test(NAME etcd-grant-late-slice
    COMMAND sh -c "exec \"$0\" \"$1\" \"$DLOCK_TEST_ETCD_URL\""
            ${CMAKE_CURRENT_SOURCE_DIR}/adv43/etcd_grant.sh
            $<TARGET_FILE:dlock_cli>)
  set_tests_properties(etcd-grant-late-slice PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 120)
  dlock_tier(long T etcd-grant-late-slice)
endif()
# A documented limit and its remedy: an etcd user with no role keeps a
# dead holder's lease alive (etcd checks no permission on keepalives);
# `release --force` by a writer of the prefix breaks the lock while that
# keepalive runs, and a waiting contender gets it at once.  Starts its
# own etcd with auth enabled.
if(ETCD_FOUND)
  add_test(NAME etcd-keepalive-force
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/adv43/etcd_keepalive.sh
            $<TARGET_FILE:dlock_cli>)
  set_tests_properties(etcd-keepalive-force PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 90)
  dlock_tier(long P etcd-keepalive-force)
endif()
