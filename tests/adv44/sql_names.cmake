# Issue 44's adversary pass (sql_names.sh): names that look like SQL
# ('?', quotes, backslashes, $1, comment openers, {{table}}) round-trip,
# stay exclusive and touch no other row on MariaDB and PostgreSQL, both
# modes; MariaDB also under a global sql_mode with NO_BACKSLASH_ESCAPES
# (set as root, so serial: S), PostgreSQL with
# standard_conforming_strings off.
foreach(store POSTGRES MYSQL)
  string(TOLOWER ${store} lower)
  if(${store}_FOUND)
    add_test(NAME adv44-sql-names-${lower}
      COMMAND sh -c "exec \"$0\" ${lower} \"$1\" \"$2\" \"$DLOCK_TEST_${store}_URL\" \"$DLOCK_TEST_${store}_DIR\""
              ${CMAKE_CURRENT_SOURCE_DIR}/adv44/sql_names.sh
              $<TARGET_FILE:dlock_cli>
              ${PROJECT_SOURCE_DIR}/scripts/server-${lower}.sh)
    set_tests_properties(adv44-sql-names-${lower} PROPERTIES
                         SKIP_RETURN_CODE 77 TIMEOUT 300)
    # About 85 s each: the long tier.  MariaDB's changes the server's
    # globals (S); PostgreSQL's only its own connections' options (P).
    if(lower STREQUAL "mysql")
      dlock_tier(long S adv44-sql-names-${lower})
    else()
      dlock_tier(long P adv44-sql-names-${lower})
    endif()
  endif()
endforeach()
