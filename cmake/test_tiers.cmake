# Test tiers as CTest labels, declared in this one file:
#   quick   unit tests and fast CLI checks (scripts/test.sh --quick)
#   slow    every other test: longer end-to-end runs
#   isa     tests whose results depend on the CPU's instruction set (the
#           folders in SWAN_ISA_FOLDERS): scripts/test.sh runs them again with
#           oneDNN and Highway capped to AVX2
#   memory  tests run under AddressSanitizer + UBSan: all but those listed
#           in SWAN_UNSANITIZED_TESTS
# A test matches a list when its name matches one of the list's regular
# expressions (anchored at both ends; quote one with parentheses).
# GoogleTest names are Suite.Case.

set(SWAN_ISA_FOLDERS util ops attention kv model train python)

# End-to-end runs longer than about 3 s on 2 cores in a Release build (a
# browser, a load generator, MPI ranks, real tokenizers' vocabularies);
# kernels' unit tests stay quick. docs/performance.md, "The test suite",
# has the times.
set(SWAN_SLOW_TESTS
  serve_load_test_short
  serve_soak_test
  cli_train_data_parallel
  cli_train_other_families
  cli_weights_resident_once
  lab_report_pages
  RealTokenizers/.*
  ChunkedQ8_0[.].*
  SlowClients[.]DoNotStopANormalClient
  python_tests
  python_example_compare_plans
)

# Not under the sanitizers: slow there (40-50 s each), and their code runs
# under them in quicker tests: the same tokenizers from tokenizer.json
# (HfAgreement) and smaller ones from GGUF files.
set(SWAN_UNSANITIZED_TESTS
  "RealTokenizers/GgufRealTokenizer[.]AgreesWithHuggingFace/(gemma3|gptoss)"
)

# swan_tier_labels(OUT NAME FOLDER): the labels of test NAME from FOLDER.
function(swan_tier_labels out name folder)
  set(labels quick)
  foreach(pattern IN LISTS SWAN_SLOW_TESTS)
    if(name MATCHES "^(${pattern})$")
      set(labels slow)
    endif()
  endforeach()
  list(FIND SWAN_ISA_FOLDERS "${folder}" isa_folder)
  if(NOT isa_folder EQUAL -1)
    list(APPEND labels isa)
  endif()
  set(sanitized TRUE)
  foreach(pattern IN LISTS SWAN_UNSANITIZED_TESTS)
    if(name MATCHES "^(${pattern})$")
      set(sanitized FALSE)
    endif()
  endforeach()
  if(sanitized)
    list(APPEND labels memory)
  endif()
  set(${out} "${labels}" PARENT_SCOPE)
endfunction()

# swan_label_gtests(TARGET): labels the tests GoogleTest discovers in TARGET
# when CTest reads them (their names are known only after the build).
function(swan_label_gtests target)
  get_filename_component(folder ${CMAKE_CURRENT_SOURCE_DIR} NAME)
  set(file ${CMAKE_CURRENT_BINARY_DIR}/${target}_labels.cmake)
  # CTest reads this file, and through it this one, after the test list.
  file(WRITE ${file} "# Written by cmake/test_tiers.cmake: the labels of ${target}'s tests.\n"
                     "include(${CMAKE_CURRENT_FUNCTION_LIST_FILE})\n"
                     "foreach(test IN LISTS ${target}_TESTS)\n"
                     "  # A parameterized test's name ends in '  # GetParam() = ...'.\n"
                     "  string(REGEX REPLACE \"  #.*\" \"\" name \"\${test}\")\n"
                     "  swan_tier_labels(labels \"\${name}\" ${folder})\n"
                     "  set_tests_properties(\"\${test}\" PROPERTIES LABELS \"\${labels}\")\n"
                     "endforeach()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${file})
  get_property(deferred DIRECTORY PROPERTY SWAN_TESTS_LABELLED)
  if(NOT deferred)
    set_property(DIRECTORY PROPERTY SWAN_TESTS_LABELLED TRUE)
    cmake_language(DEFER CALL swan_label_directory_tests)
  endif()
endfunction()

# swan_label_directory_tests(): labels the add_test() tests of the current
# folder; swan_add_test defers a call to the end of each folder that has a
# GoogleTest binary, other folders call it last.
function(swan_label_directory_tests)
  get_property(tests DIRECTORY PROPERTY TESTS)
  get_filename_component(folder ${CMAKE_CURRENT_SOURCE_DIR} NAME)
  foreach(test IN LISTS tests)
    swan_tier_labels(labels ${test} ${folder})
    set_property(TEST ${test} PROPERTY LABELS ${labels})
  endforeach()
endfunction()
