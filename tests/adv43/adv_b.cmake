# Adversary pass on issue 43's fixes (branch adv-b).

# The list's name set (src/core/names.c) against names chosen so their
# hashes share a slot: DLOCK__LIST_NAMES of them within 3 s of CPU.
add_executable(adv43_names_flood adv43/names_flood.c)
target_link_libraries(adv43_names_flood PRIVATE dlock_internal)
add_test(NAME adv43-names-flood COMMAND adv43_names_flood)
set_tests_properties(adv43-names-flood PROPERTIES TIMEOUT 60)
dlock_tier(quick P adv43-names-flood)
