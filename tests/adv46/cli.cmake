# Issue 46's adversary pass on dlock run --replace / --max-runtime
# (tests/adv46/*.sh), over SQLite: the logic is the CLI's.
# replace_maxrt.sh: --replace -n is a usage error; a replace request
# during a --max-runtime grace keeps the SIGKILL where it was.
add_test(NAME adv46-replace-maxrt-sqlite
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/adv46/replace_maxrt.sh $<TARGET_FILE:dlock_cli>
          sqlite://${CMAKE_CURRENT_BINARY_DIR}/adv46-replace-maxrt.db)
set_tests_properties(adv46-replace-maxrt-sqlite PROPERTIES TIMEOUT 90)
dlock_tier(quick T adv46-replace-maxrt-sqlite)
# replace_gave_up.sh: a replacer whose -w ends before the holder has let
# go still runs (-w bounds the wait for the request only).
add_test(NAME adv46-replace-gave-up-sqlite
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/adv46/replace_gave_up.sh $<TARGET_FILE:dlock_cli>
          sqlite://${CMAKE_CURRENT_BINARY_DIR}/adv46-replace-gave-up.db)
set_tests_properties(adv46-replace-gave-up-sqlite PROPERTIES TIMEOUT 90)
dlock_tier(quick T adv46-replace-gave-up-sqlite)
# replace_own_request.sh: a new holder whose request's release failed
# does not step down for its own leftover request.
if(REDIS_FOUND)
  add_test(NAME adv46-replace-own-request-redis
    COMMAND sh -c "exec \"$0\" \"$1\" \"$DLOCK_TEST_REDIS_URL\""
            ${CMAKE_CURRENT_SOURCE_DIR}/adv46/replace_own_request.sh $<TARGET_FILE:dlock_cli>)
  set_tests_properties(adv46-replace-own-request-redis PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 90)
  dlock_tier(quick T adv46-replace-own-request-redis)
endif()
# replace_frozen_store.sh: a --replace holder's looks for requests never
# keep it from stopping CMD before the lease end (a frozen store).
if(REDIS_FOUND)
  add_test(NAME adv46-replace-frozen-store-redis
    COMMAND sh -c "exec \"$0\" \"$1\" \"$DLOCK_TEST_REDIS_URL\""
            ${CMAKE_CURRENT_SOURCE_DIR}/adv46/replace_frozen_store.sh $<TARGET_FILE:dlock_cli>)
  set_tests_properties(adv46-replace-frozen-store-redis PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 90)
  dlock_tier(long T adv46-replace-frozen-store-redis)
endif()
# elect_frozen_store.sh: a leader's looks for a candidate of higher
# priority never keep it from stopping CMD before the lease end.
if(REDIS_FOUND)
  add_test(NAME adv46-elect-frozen-store-redis
    COMMAND sh -c "exec \"$0\" \"$1\" \"$DLOCK_TEST_REDIS_URL\""
            ${CMAKE_CURRENT_SOURCE_DIR}/adv46/elect_frozen_store.sh $<TARGET_FILE:dlock_cli>)
  set_tests_properties(adv46-elect-frozen-store-redis PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 90)
  dlock_tier(long T adv46-elect-frozen-store-redis)
endif()
