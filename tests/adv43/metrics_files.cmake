# dlock run --metrics-file in a directory other users can write (issue 43,
# items 5 and 6), included from tests/CMakeLists.txt (dlock_tier() in
# scope; CMAKE_CURRENT_SOURCE_DIR is tests/).  User nobody plants PATH
# (a link to its 6777 file, its own 6777 file, a link to a file of root's,
# a FIFO), PATH.lock (its own, flock'ed; a link; a FIFO) and the old
# PATH.tmp: root's file never gets a mode nobody chose, no file elsewhere
# changes, no run hangs or waits 10 s, the exit status stays CMD's.  Root
# only (setpriv); 77 otherwise, a failure with CI=true.
add_test(NAME adv43-metrics-files
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/adv43/metrics_files.sh
          $<TARGET_FILE:dlock-metrics-driver> $<TARGET_FILE:dlock_cli>)
set_tests_properties(adv43-metrics-files PROPERTIES
                     SKIP_RETURN_CODE 77 TIMEOUT 120)
dlock_tier(quick P adv43-metrics-files)
