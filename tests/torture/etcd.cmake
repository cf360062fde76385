# etcd under faults (issue 38), included from tests/CMakeLists.txt after
# the torture section (ETCD_FOUND, dlock_server_torture(), dlock-torture in
# scope; CMAKE_CURRENT_SOURCE_DIR is tests/).  Long tier only.
if(ETCD_FOUND)
  # Holder faults (kill -9, SIGSTOP past the lease) on the single member,
  # as torture-redis: every workload, and the control that must fail.
  add_test(NAME torture-etcd
    COMMAND sh -c "exec \"$0\" \"$1\" \"$DLOCK_TEST_ETCD_URL\" 12"
            ${CMAKE_CURRENT_SOURCE_DIR}/torture/run.sh
            $<TARGET_FILE:dlock-torture>)
  dlock_tier(long C torture-etcd)
  # The same holder faults on the 3-member cluster.
  add_test(NAME torture-etcd-cluster
    COMMAND sh -c "exec \"$0\" \"$1\" \"$DLOCK_TEST_ETCD_CLUSTER_URL\" 12"
            ${CMAKE_CURRENT_SOURCE_DIR}/torture/run.sh
            $<TARGET_FILE:dlock-torture>)
  dlock_tier(long C torture-etcd-cluster)
  # The command line on the cluster.
  add_test(NAME cli-etcd-cluster
    COMMAND sh -c "exec \"$0\" \"$1\" \"$DLOCK_TEST_ETCD_CLUSTER_URL\""
            ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_cli.sh $<TARGET_FILE:dlock_cli>)
  dlock_tier(long T cli-etcd-cluster)
endif()
# Server faults on a 3-member cluster of its own (tests/own_server.sh,
# start-cluster): kill -9 of the leader, a member's
# restart, the leader paused past an election.  etcd keeps the keys and
# their leases through each (a leader change refreshes the leases): no
# holder may overlap another, no fenced update may be lost.  DLOCK_CLI:
# etcd-nemesis.sh measures how soon a new holder had a lock after the
# leader was lost (INFO lines, for the README table).
if(ETCD_FOUND)
  add_test(NAME torture-etcd-cluster-faults
    COMMAND ${DLOCK_OWN_SERVER} ${DLOCK_SERVERS}/server-etcd.sh start-cluster ETCD_CLUSTER
            sh -c "exec \"$0\" \"$1\" \"$DLOCK_TEST_ETCD_CLUSTER_URL\" 16 server \"$2\" \"$DLOCK_TEST_ETCD_CLUSTER_DIR\" kill-leader:keeps restart-member:keeps pause-leader:keeps"
            ${CMAKE_CURRENT_SOURCE_DIR}/torture/run.sh
            $<TARGET_FILE:dlock-torture>
            ${PROJECT_SOURCE_DIR}/scripts/server-etcd.sh)
  set_tests_properties(torture-etcd-cluster-faults PROPERTIES
    TIMEOUT 300 SKIP_RETURN_CODE 77 ENVIRONMENT "DLOCK_CLI=$<TARGET_FILE:dlock_cli>")
  dlock_tier(long C torture-etcd-cluster-faults)  # a cluster of its own
endif()
# The cluster in network namespaces (tests/partition/lib.sh: members on
# srv and two hosts of their own, six workers on client hosts), under the
# random nemesis: a client cut off from every member (holder, waiter,
# flap) and the leader cut off from the majority (leader).  0 overlaps,
# 0 lost fenced updates.  Root only; 77 (skipped) where the machine
# cannot, 1 with CI=true.
if(ETCD_FOUND)
  add_test(NAME partition-torture-etcd
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/partition/test_torture_partition.sh
            $<TARGET_FILE:dlock-torture> $<TARGET_FILE:dlock_cli> etcd)
  set_tests_properties(partition-torture-etcd PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 300)
  dlock_tier(long T partition-torture-etcd)
endif()
