# dlock_embed_texts(STORE FILE...): a store's statement and script files
# (src/stores/STORE/sql/*.sql, .../lua/*.lua) become C strings at build
# time, `dlock__text_STORE_BASE[]`, declared in the generated header
# "STORE_text.h" (cmake/embed.cmake says how).  Appends the generated .c
# to dlock_sources and the files to dlock_text_files (for the golden test)
# in the caller's scope.  Files a FILE pulls in with `-- @include` are
# listed too, so that editing one rebuilds what includes it.
set(DLOCK_TEXT_DIR ${CMAKE_CURRENT_BINARY_DIR}/text)
function(dlock_embed_texts store)
  set(files)
  foreach(f IN LISTS ARGN)
    list(APPEND files ${CMAKE_CURRENT_SOURCE_DIR}/${f})
  endforeach()
  set(out_c ${DLOCK_TEXT_DIR}/${store}_text.c)
  set(out_h ${DLOCK_TEXT_DIR}/${store}_text.h)
  # Everything in the store's sql/ and lua/ folders can be included.
  file(GLOB deps CONFIGURE_DEPENDS
       ${CMAKE_CURRENT_SOURCE_DIR}/src/stores/${store}/sql/*.sql
       ${CMAKE_CURRENT_SOURCE_DIR}/src/stores/${store}/lua/*.lua)
  add_custom_command(OUTPUT ${out_c} ${out_h}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${DLOCK_TEXT_DIR}
    COMMAND ${CMAKE_COMMAND} -DSTORE=${store} -DOUT_C=${out_c}
            -DOUT_H=${out_h} "-DFILES=${files}"
            -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed.cmake
    DEPENDS ${files} ${deps} ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed.cmake
    COMMENT "Embedding the ${store} store's SQL/Lua"
    VERBATIM)
  set(dlock_sources ${dlock_sources} ${out_c} PARENT_SCOPE)
endfunction()
