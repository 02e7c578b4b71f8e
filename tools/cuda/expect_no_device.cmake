# ctest helper: runs TOOL with ARGS where no GPU is visible and checks that it stops cleanly with
# exit code 2 and the one-line "no CUDA device" message (not a crash, not a hang).
#   cmake -DTOOL=path -DARGS="a;b" -P expect_no_device.cmake
execute_process(COMMAND ${TOOL} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                TIMEOUT 60)
get_filename_component(name ${TOOL} NAME)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "${name}: expected exit code 2 without a GPU, got '${rc}'\nstdout: ${out}\nstderr: ${err}")
endif()
if(NOT err MATCHES "^${name}: no CUDA device found \\(")
  message(FATAL_ERROR "${name}: unexpected message without a GPU: '${err}'")
endif()
string(STRIP "${err}" err_line)
if(err_line MATCHES "\n")
  message(FATAL_ERROR "${name}: expected one line on stderr, got: '${err}'")
endif()
if(NOT out STREQUAL "")
  message(FATAL_ERROR "${name}: expected nothing on stdout, got: '${out}'")
endif()
message(STATUS "${name}: ${err_line}")
