# The adversary's cases against the semaphore window (commit 9a49daf: a
# semaphore of N's waiter wakes only for a DELETE of the N keys before
# its own), included from the end of adv.cmake.
#
# A watch event whose kv.key cannot be read (null, a number, an object)
# must wake the waiter (http.c wakes(): "a key that cannot be read wakes
# it too"), never grant: a gateway on 127.0.0.1, no etcd needed.
if(ETCD_FOUND)
  add_test(NAME etcd-adv-sem-gateway
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/stores/etcd/adv_sem_gateway.py
            $<TARGET_FILE:dlock_cli>)
  set_tests_properties(etcd-adv-sem-gateway PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 180)
  dlock_tier(long P etcd-adv-sem-gateway)
endif()
# Liveness of a window waiter: a waiter of its window gives up or has its
# lease revoked, a shared or foreign (etcdctl lock) holder ahead: each
# release admits within 2 s (a missed wake-up waits for the 5 s slice).
if(ETCD_FOUND)
  add_test(NAME etcd-adv-sem-live
    COMMAND sh -c "exec \"$0\" \"$1\" \"$DLOCK_TEST_ETCD_URL\""
            ${CMAKE_CURRENT_SOURCE_DIR}/stores/etcd/adv_sem_live.sh
            $<TARGET_FILE:dlock_cli>)
  set_tests_properties(etcd-adv-sem-live PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 180)
  dlock_tier(long T etcd-adv-sem-live)  # 14 s: quick has no room
endif()
