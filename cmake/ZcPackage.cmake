# The Debian package (cpack -G DEB) and what it installs beside the layers
# and the tool: the man page zecache(1), bash completion, README and
# licence. Configure with -DCMAKE_INSTALL_PREFIX=/usr for a Debian package:
# it installs under the configured prefix, which the man page names, and
# the tool finds the layers relative to itself (tools/CMakeLists.txt).

set(ZC_LAYER_FULL_DIR ${CMAKE_INSTALL_FULL_LIBDIR}/zecache)
set(ZC_BIN_FULL_DIR ${CMAKE_INSTALL_FULL_BINDIR})
set(ZC_DOC_FULL_DIR ${CMAKE_INSTALL_FULL_DOCDIR})

if(ZC_BUILD_TOOLS)
  # Debian installs man pages compressed; -n keeps the bytes reproducible.
  set(ZC_MAN_PAGE ${CMAKE_BINARY_DIR}/docs/zecache.1)
  configure_file(${PROJECT_SOURCE_DIR}/docs/zecache.1.in ${ZC_MAN_PAGE} @ONLY)
  add_custom_command(OUTPUT ${ZC_MAN_PAGE}.gz
    COMMAND gzip -9nf -k ${ZC_MAN_PAGE}
    DEPENDS ${ZC_MAN_PAGE}
    VERBATIM)
  add_custom_target(zc_man_page ALL DEPENDS ${ZC_MAN_PAGE}.gz)
  install(FILES ${ZC_MAN_PAGE}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
  install(FILES ${PROJECT_SOURCE_DIR}/docs/zecache.bash-completion
          DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME zecache)
endif()
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME copyright)

# The Debian package of the library a layer opens with dlopen (SONAME), as
# this machine has it: its name differs between releases (libcurl4 on 12,
# libcurl4t64 on 13). Empty when no package holds it.
function(zc_debian_package_of soname out)
  execute_process(COMMAND dpkg-query -S "*/${CMAKE_LIBRARY_ARCHITECTURE}/${soname}"
                  OUTPUT_VARIABLE owner ERROR_QUIET RESULT_VARIABLE failed)
  string(REGEX MATCH "^[^:,]+" owner "${owner}")
  if(failed)
    set(owner "")
  endif()
  set(${out} "${owner}" PARENT_SCOPE)
endfunction()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME zecache)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "The zecache authors <zecache@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "persistent compiler cache for Level Zero and OpenCL")
set(CPACK_PACKAGE_DESCRIPTION
    "A Level Zero layer and an OpenCL layer that keep the native binaries GPU\n"
    "drivers compile from SPIR-V and OpenCL C, on disk and in remote storages,\n"
    "and the zecache tool: 'zecache exec -- PROGRAM' runs a program with both\n"
    "layers enabled. Nothing is enabled for other programs.")
string(CONCAT CPACK_PACKAGE_DESCRIPTION ${CPACK_PACKAGE_DESCRIPTION})
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # zecache_VERSION_ARCH.deb
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# The OpenCL layer links no loader, so the one that reads OPENCL_LAYERS is
# named; the libraries linked are added when cpack runs, as dpkg-shlibdeps
# finds them (cmake/ZcPackageDepends.cmake): libc6, libstdc++6, libzstd1,
# libze1 (zecache-build) and the release's hiredis (libhiredis0.14 on 12,
# libhiredis1.1.0 on 13), each at the version the build needs.
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "ocl-icd-libopencl1 (>= 2.3.0) | khronos-opencl-icd-libopencl1")
set(ZC_PACKAGE_ELF_TARGETS)
foreach(target zecache_tool zecache_build ze_cache_layer zecache_opencl_layer)
  if(TARGET ${target})
    list(APPEND ZC_PACKAGE_ELF_TARGETS "$<TARGET_FILE:${target}>")
  endif()
endforeach()
set(CPACK_ZC_ELF_FILES_LIST ${CMAKE_BINARY_DIR}/package_elf_files.cmake)
file(GENERATE OUTPUT ${CPACK_ZC_ELF_FILES_LIST}
     CONTENT "set(ZC_PACKAGE_ELF_FILES \"${ZC_PACKAGE_ELF_TARGETS}\")\n")
set(CPACK_ZC_SHLIBDEPS_DIR ${CMAKE_BINARY_DIR}/package_shlibdeps)
set(CPACK_PROJECT_CONFIG_FILE ${PROJECT_SOURCE_DIR}/cmake/ZcPackageDepends.cmake)
# A driver to cache for: Intel's (Debian 12's intel-opencl-icd holds both
# APIs; newer releases split Level Zero into libze-intel-gpu1) or PoCL.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "intel-opencl-icd | libze-intel-gpu1 | pocl-opencl-icd")
# Opened with dlopen only by https://, http:// and rediss:// storages.
zc_debian_package_of(libcurl.so.4 ZC_CURL_PACKAGE)
zc_debian_package_of(libssl.so.3 ZC_SSL_PACKAGE)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS ${ZC_CURL_PACKAGE} ${ZC_SSL_PACKAGE})
list(JOIN CPACK_DEBIAN_PACKAGE_SUGGESTS ", " CPACK_DEBIAN_PACKAGE_SUGGESTS)
include(CPack)
