# cmake --install [--prefix P]: what an embedder or operator gets.
#   lib/librawstore.so.0 (+ .so, .a)   lib/pkgconfig/rawstore.pc
#   lib/cmake/rawstore/ (find_package(rawstore): rawstore::rawstore,
#                        rawstore::rawstore_static)
#   include/rawstore/*.h   bin/rawstore   bin/rawstore-bench
#   share/man/man{1,3,7}   share/doc/rawstore/ (API, design, examples)
# tests/pack/install.sh installs into a temporary prefix and builds
# programs against the result.
include(CMakePackageConfigHelpers)

set(RAWSTORE_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/rawstore)

install(TARGETS rawstore_shared rawstore EXPORT rawstoreTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
)
install(TARGETS rawstore-cli rawstore-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/rawstore
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h"
)

install(EXPORT rawstoreTargets NAMESPACE rawstore:: DESTINATION ${RAWSTORE_CMAKEDIR}
  FILE rawstoreTargets.cmake)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/rawstoreConfig.cmake.in
  ${PROJECT_BINARY_DIR}/rawstoreConfig.cmake INSTALL_DESTINATION ${RAWSTORE_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/rawstoreConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/rawstoreConfig.cmake
  ${PROJECT_BINARY_DIR}/rawstoreConfigVersion.cmake DESTINATION ${RAWSTORE_CMAKEDIR})

# rawstore.pc is written at install time so that it names the prefix given
# to cmake --install --prefix, not the one known when configuring.
install(CODE "
  set(PROJECT_VERSION \"${PROJECT_VERSION}\")
  set(prefix \"\${CMAKE_INSTALL_PREFIX}\")
  foreach(pair \"libdir=${CMAKE_INSTALL_LIBDIR}\" \"includedir=${CMAKE_INSTALL_INCLUDEDIR}\")
    string(REGEX REPLACE \"=.*\" \"\" var \"\${pair}\")
    string(REGEX REPLACE \"^[^=]*=\" \"\" dir \"\${pair}\")
    if(IS_ABSOLUTE \"\${dir}\")
      set(\${var} \"\${dir}\")
    else()
      set(\${var} \"\\\${prefix}/\${dir}\")
    endif()
  endforeach()
  configure_file(\"${PROJECT_SOURCE_DIR}/cmake/rawstore.pc.in\"
    \"${PROJECT_BINARY_DIR}/rawstore.pc\" @ONLY)
")
install(FILES ${PROJECT_BINARY_DIR}/rawstore.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

file(GLOB rawstore_docs ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES ${rawstore_docs} ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${PROJECT_SOURCE_DIR}/examples/embed.c ${PROJECT_SOURCE_DIR}/examples/server.c
  DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
