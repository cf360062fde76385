# The adversary pass on issue 44, item 4: libcrypto refusing SHA1
# (EVP_Digest fails) is an error from the MySQL and Redis stores, not an
# abort() of the host process (tests/adv44/sha1_fail.c).
if(MYSQL_FOUND OR REDIS_FOUND)
  add_executable(adv44_sha1_fail adv44/sha1_fail.c)
  target_link_libraries(adv44_sha1_fail PRIVATE dlock ${CMAKE_DL_LIBS})
  # Its EVP_Digest in the dynamic symbol table, where libdlock's calls
  # find it before libcrypto's.
  set_target_properties(adv44_sha1_fail PROPERTIES ENABLE_EXPORTS ON)
endif()
foreach(store mysql redis)
  string(TOUPPER ${store} macro)
  if(${macro}_FOUND)
    add_test(NAME adv44-sha1-fail-${store}
      COMMAND sh -c "exec \"$0\" ${store} \"$DLOCK_TEST_${macro}_URL\""
              $<TARGET_FILE:adv44_sha1_fail>)
    set_tests_properties(adv44-sha1-fail-${store} PROPERTIES
                         SKIP_RETURN_CODE 77 TIMEOUT 120)
    dlock_tier(quick P adv44-sha1-fail-${store})
  endif()
endforeach()
