# Run by cpack (CPACK_PROJECT_CONFIG_FILE): adds to the Debian package's
# Depends what dpkg-shlibdeps finds the built programs and layers need.
# CPackDeb's own CPACK_DEBIAN_PACKAGE_SHLIBDEPS needs the `file` program,
# which minimal roots (the current-driver root) do not have.
if(NOT CPACK_GENERATOR STREQUAL "DEB")
  return()
endif()
include(${CPACK_ZC_ELF_FILES_LIST}) # ZC_PACKAGE_ELF_FILES
set(zc_shlibdeps_args)
foreach(file ${ZC_PACKAGE_ELF_FILES})
  if(NOT EXISTS ${file})
    message(FATAL_ERROR "${file} is missing: build before running cpack")
  endif()
  list(APPEND zc_shlibdeps_args -e ${file})
endforeach()
# dpkg-shlibdeps reads the package's name from debian/control.
file(MAKE_DIRECTORY ${CPACK_ZC_SHLIBDEPS_DIR}/debian)
file(TOUCH ${CPACK_ZC_SHLIBDEPS_DIR}/debian/control)
execute_process(COMMAND dpkg-shlibdeps -O ${zc_shlibdeps_args}
                WORKING_DIRECTORY ${CPACK_ZC_SHLIBDEPS_DIR}
                OUTPUT_VARIABLE zc_shlibdeps ERROR_VARIABLE zc_shlibdeps_errors
                RESULT_VARIABLE zc_shlibdeps_failed)
string(REGEX MATCH "shlibs:Depends=[^\n]*" zc_shlibdeps "${zc_shlibdeps}")
if(zc_shlibdeps_failed OR NOT zc_shlibdeps)
  message(FATAL_ERROR "dpkg-shlibdeps failed: ${zc_shlibdeps_errors}")
endif()
string(REPLACE "shlibs:Depends=" "" zc_shlibdeps "${zc_shlibdeps}")
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${CPACK_DEBIAN_PACKAGE_DEPENDS}, ${zc_shlibdeps}")
