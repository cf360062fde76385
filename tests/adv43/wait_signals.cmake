# Issue 43, items 11 and 12: a waiting `dlock run` and its signals, and a
# store frozen while it opens (tests/adv43/wait_signals.py).
#  item 11, per store: SIGTERM, SIGHUP, SIGINT to a waiter B (-w 60
#    --ttl 30) behind holder A exit 128+N, CMD not run, and the next
#    waiter C gets the lock at once when A lets go (on etcd B's queue key
#    held it for B's 30 s lease).
set(_ws ${CMAKE_CURRENT_SOURCE_DIR}/adv43/wait_signals.py)
set(_ws_stores sqlite)
if(REDIS_FOUND)
  list(APPEND _ws_stores redis)
endif()
if(POSTGRES_FOUND)
  list(APPEND _ws_stores postgres)
endif()
if(MYSQL_FOUND)
  list(APPEND _ws_stores mysql)
endif()
if(ETCD_FOUND)
  list(APPEND _ws_stores etcd)
endif()
foreach(_s ${_ws_stores})
  add_test(NAME adv43-wait-signals-${_s}
    COMMAND python3 ${_ws} $<TARGET_FILE:dlock_cli> signals ${_s})
  set_tests_properties(adv43-wait-signals-${_s} PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 240)
  dlock_tier(quick T adv43-wait-signals-${_s})
endforeach()
