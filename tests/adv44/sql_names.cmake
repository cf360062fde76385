# Issue 44's adversary pass (sql_names.sh): names that look like SQL
# ('?', quotes, backslashes, $1, comment openers, {{table}}) round-trip,
# stay exclusive and touch no other row on MariaDB and PostgreSQL, both
# modes; MariaDB also under a global sql_mode with NO_BACKSLASH_ESCAPES
# (set as root, on a server of its own), PostgreSQL with
# standard_conforming_strings off.
foreach(store POSTGRES MYSQL)
  string(TOLOWER ${store} lower)
  if(${store}_FOUND)
    # MariaDB's on a server of its own: it changes the server's globals.
    if(lower STREQUAL "mysql")
      set(own ${DLOCK_OWN_SERVER} ${DLOCK_SERVERS}/server-mysql.sh start MYSQL)
    else()
      set(own)
    endif()
    add_test(NAME adv44-sql-names-${lower}
      COMMAND ${own} sh -c "exec \"$0\" ${lower} \"$1\" \"$2\" \"$DLOCK_TEST_${store}_URL\" \"$DLOCK_TEST_${store}_DIR\""
              ${CMAKE_CURRENT_SOURCE_DIR}/adv44/sql_names.sh
              $<TARGET_FILE:dlock_cli>
              ${PROJECT_SOURCE_DIR}/scripts/server-${lower}.sh)
    set_tests_properties(adv44-sql-names-${lower} PROPERTIES
                         SKIP_RETURN_CODE 77 TIMEOUT 300)
    # About 85 s each: the long tier.  MariaDB's changes its own server's
    # globals, PostgreSQL's only its own connections' options: P.
    dlock_tier(long P adv44-sql-names-${lower})
  endif()
endforeach()
