# Shared by fuzz/CMakeLists.txt (ctest entries) and fuzz/project/CMakeLists.txt (clang build):
# which libFuzzer targets exist and what each one compiles.
#
# Every fuzz/fuzz_<name>.cc is a target. It lists the src/ files it needs, beyond
# kDakFuzzCommonSources, on lines of the form
#   // dak-fuzz-sources: core/gguf.cc core/gguf_config.cc
# and optionally the system libraries it links ("// dak-fuzz-libs: pcre2-8 sentencepiece").
# A target whose sources are not all present yet (another engineer's file) is skipped with a
# notice, so adding fuzz/fuzz_tokenizer.cc is all it takes to add a fuzzer.

set(DAK_FUZZ_COMMON_SOURCES core/error.cc core/dtype.cc core/mapped_file.cc)

# dak_fuzz_targets(<fuzz dir> <src dir> <out var>): sets <out var> to the usable target names
# and, for each name N, DAK_FUZZ_SOURCES_N (absolute paths) and DAK_FUZZ_LIBS_N in the caller.
function(dak_fuzz_targets fuzz_dir src_dir out_names)
  file(GLOB files CONFIGURE_DEPENDS "${fuzz_dir}/fuzz_*.cc")
  list(SORT files)
  set(names)
  foreach(f IN LISTS files)
    get_filename_component(name "${f}" NAME_WE)
    # Its source lines are read here: in the build that compiles them (fuzz/project sets
    # DAK_FUZZ_TRACK_SOURCES), an edit of the file re-runs that configure step.
    if(DAK_FUZZ_TRACK_SOURCES)
      set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${f}")
    endif()
    file(STRINGS "${f}" src_lines REGEX "^// dak-fuzz-sources:")
    file(STRINGS "${f}" lib_lines REGEX "^// dak-fuzz-libs:")
    set(rel ${DAK_FUZZ_COMMON_SOURCES})
    foreach(line IN LISTS src_lines)
      string(REPLACE "// dak-fuzz-sources:" "" line "${line}")
      separate_arguments(items UNIX_COMMAND "${line}")
      list(APPEND rel ${items})
    endforeach()
    set(libs)
    foreach(line IN LISTS lib_lines)
      string(REPLACE "// dak-fuzz-libs:" "" line "${line}")
      separate_arguments(items UNIX_COMMAND "${line}")
      list(APPEND libs ${items})
    endforeach()
    set(abs)
    set(ok TRUE)
    foreach(s IN LISTS rel)
      if(NOT EXISTS "${src_dir}/${s}")
        message(STATUS "dak fuzz: skipping ${name}: ${src_dir}/${s} does not exist yet")
        set(ok FALSE)
      endif()
      list(APPEND abs "${src_dir}/${s}")
    endforeach()
    if(ok)
      list(REMOVE_DUPLICATES abs)
      list(APPEND names ${name})
      set(DAK_FUZZ_SOURCES_${name} ${abs} PARENT_SCOPE)
      set(DAK_FUZZ_LIBS_${name} ${libs} PARENT_SCOPE)
    endif()
  endforeach()
  set(${out_names} ${names} PARENT_SCOPE)
endfunction()
