# zc_spirv_from_opencl(<out_var> OUTPUT_DIR <dir> SOURCES <file.cl>...
#                      [CLANG_OPTIONS <option>...] [DEPENDS <file>...])
# OpenCL C -> SPIR-V as an application's build makes it: clang to LLVM
# bitcode, then llvm-spirv of the same LLVM version (14 on Debian 12, 19 in
# the current-driver root of scripts/current-driver.sh). Adds one custom command per source, making
# <dir>/<name>.spv, and sets <out_var> to the list of those files.
include_guard(GLOBAL)

function(zc_spirv_from_opencl out_var)
  cmake_parse_arguments(K "" "OUTPUT_DIR" "SOURCES;CLANG_OPTIONS;DEPENDS" ${ARGN})
  # One pair, never clang of one version with llvm-spirv of another.
  foreach(version 14 19)
    find_program(ZC_CLANG_${version} clang-${version})
    find_program(ZC_LLVM_SPIRV_${version} llvm-spirv-${version})
    if(ZC_CLANG_${version} AND ZC_LLVM_SPIRV_${version})
      set(ZC_KERNEL_CLANG ${ZC_CLANG_${version}})
      set(ZC_KERNEL_LLVM_SPIRV ${ZC_LLVM_SPIRV_${version}})
      break()
    endif()
  endforeach()
  if(NOT ZC_KERNEL_CLANG)
    message(FATAL_ERROR "OpenCL C kernels need clang-14 with llvm-spirv-14, or clang-19 with llvm-spirv-19")
  endif()
  file(MAKE_DIRECTORY ${K_OUTPUT_DIR})
  set(outputs)
  foreach(src ${K_SOURCES})
    get_filename_component(base ${src} NAME_WE)
    set(bc ${K_OUTPUT_DIR}/${base}.bc)
    set(spv ${K_OUTPUT_DIR}/${base}.spv)
    add_custom_command(OUTPUT ${spv}
      COMMAND ${ZC_KERNEL_CLANG} -cc1 -triple spir64-unknown-unknown -cl-std=CL2.0 -emit-llvm-bc
              -finclude-default-header ${K_CLANG_OPTIONS} -o ${bc} ${src}
      COMMAND ${ZC_KERNEL_LLVM_SPIRV} ${bc} -o ${spv}
      DEPENDS ${src} ${K_DEPENDS} VERBATIM)
    list(APPEND outputs ${spv})
  endforeach()
  set(${out_var} ${outputs} PARENT_SCOPE)
endfunction()
