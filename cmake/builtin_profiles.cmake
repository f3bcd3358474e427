# dak_generate_builtin_profiles(<source dir> <out file>): writes <out file>, the compiled-in hardware
# profiles: each shipped profiles/<name>.json pasted verbatim into src/core/hardware_profile_builtin.cc.in
# (HardwareProfile::h200_default_json() etc.), re-generated when a file changes. Used by the main build
# (CMakeLists.txt) and the fuzzers' nested build (fuzz/project). A file that is not valid JSON, whose
# "name" is not its slot's, or that holds the raw-string delimiter fails the configure step naming it.
function(dak_generate_builtin_profiles source_dir out_file)
  foreach(profile h200-default h100-default h100-fast-link)
    set(profile_file "${source_dir}/profiles/${profile}.json")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${profile_file}")
    file(READ "${profile_file}" profile_text)
    string(FIND "${profile_text}" ")dakprofile\"" clash)
    if(NOT clash EQUAL -1)
      message(FATAL_ERROR
              "${profile_file} contains the raw-string delimiter )dakprofile\" of hardware_profile_builtin.cc.in")
    endif()
    # Valid JSON whose "name" is the slot's: a broken file fails here, naming itself, not at first use.
    string(JSON profile_name ERROR_VARIABLE json_error GET "${profile_text}" name)
    if(json_error)
      message(FATAL_ERROR "${profile_file} is not a valid hardware profile (it is compiled in as '${profile}'): "
                          "${json_error}. Fix the file (compare it with git's copy) and build again.")
    endif()
    if(NOT profile_name STREQUAL profile)
      message(FATAL_ERROR "${profile_file} is compiled in as '${profile}' but its \"name\" is '${profile_name}': "
                          "plans record the name, so the two must agree. Fix the file's \"name\".")
    endif()
    string(TOUPPER "${profile}" var)
    string(REPLACE "-" "_" var "DAK_PROFILE_${var}")
    set(${var} "${profile_text}")
  endforeach()
  configure_file("${source_dir}/src/core/hardware_profile_builtin.cc.in" "${out_file}" @ONLY)
endfunction()
