# Adversary pass on the fixes of issue 43 (branch adv-a).
# Item 11: nohup's SIGHUP, ignored when dlock started, stays so for CMD.
add_test(NAME adv43-adv-a-nohup-cmd
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/adv43/adv_a_nohup.sh $<TARGET_FILE:dlock_cli>)
set_tests_properties(adv43-adv-a-nohup-cmd PROPERTIES TIMEOUT 120)
dlock_tier(quick P adv43-adv-a-nohup-cmd)
# Item 12: a finite wait's open of a Redis Sentinel URL whose sentinels
# accept and never answer ends by the wait + 1 s (no server needed).
add_test(NAME adv43-adv-a-open-sentinel
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/adv43/adv_a_open_sentinel.py
          $<TARGET_FILE:dlock_cli>)
set_tests_properties(adv43-adv-a-open-sentinel PROPERTIES TIMEOUT 300)
dlock_tier(long T adv43-adv-a-open-sentinel)
# Item 1 on Redis (a private redis-server, CLIENT PAUSE as the blink):
# --once through a blink as CMD ends; a lock broken while CMD ran, then
# the blink, is not said held to the end.
if(REDIS_FOUND)
  add_test(NAME adv43-adv-a-end-blink-redis
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/adv43/adv_a_end_blink.sh
            $<TARGET_FILE:dlock_cli>)
  set_tests_properties(adv43-adv-a-end-blink-redis PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 120)
  dlock_tier(quick P adv43-adv-a-end-blink-redis)
endif()
