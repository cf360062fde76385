# The adversary pass on issue 44, the watch threads (src/core/watch.c,
# cancel.c): a pipe made while another thread execs reaches no program.
add_executable(adv44_cancel_cloexec adv44/cancel_cloexec.c)
target_link_libraries(adv44_cancel_cloexec PRIVATE dlock Threads::Threads)
add_test(NAME adv44-cancel-cloexec COMMAND adv44_cancel_cloexec)
set_tests_properties(adv44-cancel-cloexec PROPERTIES TIMEOUT 120)
dlock_tier(long P adv44-cancel-cloexec)  # 16 s: quick has no room
