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
