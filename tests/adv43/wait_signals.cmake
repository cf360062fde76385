# Issue 43, items 11 and 12: a waiting `dlock run` and its signals, and a
# store frozen while it opens (tests/adv43/wait_signals.py).
#  adv43-wait-signals-STORE (item 11): SIGTERM, SIGHUP, SIGINT to a
#    waiter B (-w 60 --ttl 30) behind holder A exit 128+N, CMD not run,
#    and the next waiter C gets the lock at once when A lets go (on etcd
#    B's queue key held it for B's 30 s lease).
#  adv43-wait-signals-hung-STORE (item 11): the store goes mute while B
#    gives up its wait: a second signal ends B at once, a finite wait's
#    deadline + 1 s ends it with one (the MySQL KILL QUERY of a cancel
#    once waited for the URL's timeout).
#  adv43-open-frozen-STORE (item 12): `run -w 1` on a server that accepts
#    and never answers ends within the wait + 1 s, not the URL's timeout.
set(_ws ${CMAKE_CURRENT_SOURCE_DIR}/adv43/wait_signals.py)
set(_ws_net)
if(REDIS_FOUND)
  list(APPEND _ws_net redis)
endif()
if(POSTGRES_FOUND)
  list(APPEND _ws_net postgres)
endif()
if(MYSQL_FOUND)
  list(APPEND _ws_net mysql)
endif()
if(ETCD_FOUND)
  list(APPEND _ws_net etcd)
endif()
foreach(_s sqlite ${_ws_net})
  add_test(NAME adv43-wait-signals-${_s}
    COMMAND python3 ${_ws} $<TARGET_FILE:dlock_cli> signals ${_s})
  set_tests_properties(adv43-wait-signals-${_s} PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 240)
  dlock_tier(quick T adv43-wait-signals-${_s})
endforeach()
foreach(_s ${_ws_net})
  add_test(NAME adv43-wait-signals-hung-${_s}
    COMMAND python3 ${_ws} $<TARGET_FILE:dlock_cli> hung ${_s})
  set_tests_properties(adv43-wait-signals-hung-${_s} PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 120)
  dlock_tier(long T adv43-wait-signals-hung-${_s})
  add_test(NAME adv43-open-frozen-${_s}
    COMMAND python3 ${_ws} $<TARGET_FILE:dlock_cli> frozen ${_s})
  set_tests_properties(adv43-open-frozen-${_s} PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 180)
  dlock_tier(long T adv43-open-frozen-${_s})
endforeach()
# adv43-wait-signals-begin-redis (item 11): SIGTERM while `run --once`
# records its start (the reply held by tests/adv43/hold_after.py): 143,
# CMD not run, the run recorded as killed by signal 15, the next --once
# runs (B once died holding the lock, its run "running" for its lease).
if(REDIS_FOUND)
  add_test(NAME adv43-wait-signals-begin-redis
    COMMAND python3 ${_ws} $<TARGET_FILE:dlock_cli> begin redis)
  set_tests_properties(adv43-wait-signals-begin-redis PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 120)
  dlock_tier(quick T adv43-wait-signals-begin-redis)
endif()
