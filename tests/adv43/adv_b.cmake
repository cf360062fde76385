# Adversary pass on issue 43's fixes (branch adv-b).

# The list's name set (src/core/names.c) against names chosen so their
# hashes share a slot: DLOCK__LIST_NAMES of them within 3 s of CPU.
add_executable(adv43_names_flood adv43/names_flood.c)
target_link_libraries(adv43_names_flood PRIVATE dlock_internal)
add_test(NAME adv43-names-flood COMMAND adv43_names_flood)
set_tests_properties(adv43-names-flood PROPERTIES TIMEOUT 60)
dlock_tier(quick P adv43-names-flood)

if(ETCD_FOUND)
  # An earlier layout's start record on another holder's lease: the
  # migration revoked it, deleting that holder's key (two holders).
  add_test(NAME adv43-etcd-old-start-lease
    COMMAND sh -c "exec \"$0\" \"$1\" \"$DLOCK_TEST_ETCD_URL\""
            ${CMAKE_CURRENT_SOURCE_DIR}/adv43/adv_b_etcd_revoke.sh
            $<TARGET_FILE:dlock_cli>)
  set_tests_properties(adv43-etcd-old-start-lease PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 120)
  dlock_tier(quick P adv43-etcd-old-start-lease)
  # Run records of names with leading, trailing and doubled '/': each
  # its own, none in a parent's queue range.
  add_test(NAME adv43-etcd-record-names
    COMMAND sh -c "exec \"$0\" \"$1\" \"$DLOCK_TEST_ETCD_URL\""
            ${CMAKE_CURRENT_SOURCE_DIR}/adv43/adv_b_etcd_names.sh
            $<TARGET_FILE:dlock_cli>)
  set_tests_properties(adv43-etcd-record-names PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 120)
  dlock_tier(quick P adv43-etcd-record-names)
  # A role on `app/` (the names under app/): its user's run records.
  add_test(NAME adv43-etcd-role-parent
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/adv43/adv_b_etcd_role.sh
            $<TARGET_FILE:dlock_cli> ${PROJECT_SOURCE_DIR}/scripts)
  set_tests_properties(adv43-etcd-role-parent PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 120)
  dlock_tier(quick P adv43-etcd-role-parent)
endif()
