# Issue 45's adversary pass (adv45b), etcd: a hostile gateway
# (tests/stores/etcd/adv_gateway.py rev-max) whose every header says
# revision 9223372036854775807.  An observer's watch (dlock leader
# --watch) and a waiter's watch start from the revision after it: that
# was a signed overflow (UBSan's "runtime error", an abort in the test
# build) in elect.c and acquire.c.
if(ETCD_FOUND)
  add_test(NAME adv45b-etcd-rev-max
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/adv45/adv45b_rev_max.sh
            $<TARGET_FILE:dlock_cli>
            ${CMAKE_CURRENT_SOURCE_DIR}/stores/etcd/adv_gateway.py)
  set_tests_properties(adv45b-etcd-rev-max PROPERTIES TIMEOUT 60)
  dlock_tier(quick P adv45b-etcd-rev-max)
endif()
# An `etcdctl elect` peer whose proposal reads as a semaphore's holder
# record: a dlock candidate behind it waits (it once failed at once,
# "held with limit 3"), and leads once the peer resigns.
if(ETCD_FOUND)
  add_test(NAME adv45b-etcd-record-peer
    COMMAND sh -c "exec \"$0\" \"$1\" \"$DLOCK_TEST_ETCD_URL\""
            ${CMAKE_CURRENT_SOURCE_DIR}/adv45/adv45b_record_peer.sh
            $<TARGET_FILE:dlock_cli>)
  set_tests_properties(adv45b-etcd-record-peer PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 60)
  dlock_tier(quick P adv45b-etcd-record-peer)
endif()
