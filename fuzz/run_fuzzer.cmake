# ctest driver for one libFuzzer target: cmake -DFUZZER=<binary> -DCORPUS=<seed dir>
#   -DWORK=<scratch dir> [-DARGS="-runs=5000;-max_total_time=15"] -P run_fuzzer.cmake
# New inputs go to WORK (libFuzzer writes into the first corpus folder), never into the
# committed seeds; a crash leaves its input in WORK and fails the test.
if(NOT EXISTS "${FUZZER}")
  message(FATAL_ERROR "fuzzer ${FUZZER} was not built (build the dak_fuzzers target)")
endif()
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/corpus")
execute_process(
  COMMAND "${FUZZER}" ${ARGS} -timeout=10 -rss_limit_mb=2048 "-artifact_prefix=${WORK}/"
          "${WORK}/corpus" "${CORPUS}"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(GLOB crashes "${WORK}/crash-*" "${WORK}/leak-*" "${WORK}/timeout-*" "${WORK}/oom-*")
  message(FATAL_ERROR "${FUZZER} failed (exit ${rc}); reproducer(s): ${crashes}")
endif()
