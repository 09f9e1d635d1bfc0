# zc_spirv_from_opencl(<out_var> OUTPUT_DIR <dir> SOURCES <file.cl>...
#                      [CLANG_OPTIONS <option>...] [DEPENDS <file>...])
# OpenCL C -> SPIR-V as an application's build makes it: clang-14 to LLVM
# bitcode, then llvm-spirv-14. Adds one custom command per source, making
# <dir>/<name>.spv, and sets <out_var> to the list of those files.
include_guard(GLOBAL)

function(zc_spirv_from_opencl out_var)
  cmake_parse_arguments(K "" "OUTPUT_DIR" "SOURCES;CLANG_OPTIONS;DEPENDS" ${ARGN})
  find_program(ZC_CLANG14 clang-14 REQUIRED)
  find_program(ZC_LLVM_SPIRV14 llvm-spirv-14 REQUIRED)
  file(MAKE_DIRECTORY ${K_OUTPUT_DIR})
  set(outputs)
  foreach(src ${K_SOURCES})
    get_filename_component(base ${src} NAME_WE)
    set(bc ${K_OUTPUT_DIR}/${base}.bc)
    set(spv ${K_OUTPUT_DIR}/${base}.spv)
    add_custom_command(OUTPUT ${spv}
      COMMAND ${ZC_CLANG14} -cc1 -triple spir64-unknown-unknown -cl-std=CL2.0 -emit-llvm-bc
              -finclude-default-header ${K_CLANG_OPTIONS} -o ${bc} ${src}
      COMMAND ${ZC_LLVM_SPIRV14} ${bc} -o ${spv}
      DEPENDS ${src} ${K_DEPENDS} VERBATIM)
    list(APPEND outputs ${spv})
  endforeach()
  set(${out_var} ${outputs} PARENT_SCOPE)
endfunction()
