# Issue 43, the etcd store's transport and scans (items 7, 8, 14, 15),
# included from tests/CMakeLists.txt (ETCD_FOUND, dlock_tier() in scope;
# CMAKE_CURRENT_SOURCE_DIR is tests/).  Each case failed on e2c3a4f.
#
# Item 7: an encrypted ?key= on etcds:// is refused at once with the Redis
# store's words, on a pty and without a terminal (it prompted "Enter PEM
# pass phrase:" and waited past ?timeout=).  An etcd of its own over TLS.
if(ETCD_FOUND)
  add_test(NAME adv43-etcd-key
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/adv43/etcd_http_key.sh
            $<TARGET_FILE:dlock_cli> ${PROJECT_SOURCE_DIR}/scripts/server-lib.sh)
  set_tests_properties(adv43-etcd-key PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
  dlock_tier(quick P adv43-etcd-key)
endif()
# Item 8: a gateway whose ranges always say "more": true (the same key,
# or new keys without end, or slowly): `dlock list` ends within ?timeout=
# and 100,000 keys, exit 69 with a clear error (it listed for ever).
if(ETCD_FOUND)
  add_test(NAME adv43-etcd-scan
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/adv43/etcd_http_scan.sh
            $<TARGET_FILE:dlock_cli>)
  set_tests_properties(adv43-etcd-scan PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
  dlock_tier(long P adv43-etcd-scan)
endif()
# Item 15: a gateway that answers the login with Unauthenticated: one
# login, the real error at once (it logged in again and again until the
# deadline, then said "Operation timed out").
# Item 14: a gateway that echoes a part of the password (a half, a third,
# reversed, base64) in an error: none of it printed; etcd's own words are.
if(ETCD_FOUND)
  add_test(NAME adv43-etcd-relogin
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/adv43/etcd_http_auth.sh
            $<TARGET_FILE:dlock_cli> relogin)
  set_tests_properties(adv43-etcd-relogin PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
  dlock_tier(quick P adv43-etcd-relogin)
  add_test(NAME adv43-etcd-echo
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/adv43/etcd_http_auth.sh
            $<TARGET_FILE:dlock_cli> echo)
  set_tests_properties(adv43-etcd-echo PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
  dlock_tier(long P adv43-etcd-echo)
endif()
