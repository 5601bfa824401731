# cmake/nholo_python.cmake — the Python module nholo._nholo (python/src/module.cpp,
# nanobind) over nholo_host: the same objects as the command (NHOLO_PYTHON,
# defined at the top of CMakeLists.txt, makes the build position-independent),
# so a build with it compiles one more unit. scripts/test.sh turns it on in
# the product build and installs the package from that build folder
# (pip install . -Cbuild-dir=...).
if(NOT NHOLO_PYTHON)
  return()
endif()
find_package(Python 3.9 REQUIRED COMPONENTS Interpreter Development.Module)
execute_process(COMMAND ${Python_EXECUTABLE} -m nanobind --cmake_dir
                OUTPUT_VARIABLE _nholo_nanobind_dir OUTPUT_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE _nholo_nanobind_rc ERROR_QUIET)
if(NOT _nholo_nanobind_rc EQUAL 0)
  message(FATAL_ERROR "NHOLO_PYTHON=ON needs nanobind for ${Python_EXECUTABLE} "
                      "(${Python_EXECUTABLE} -m pip install nanobind), or -DNHOLO_PYTHON=OFF")
endif()
find_package(nanobind CONFIG REQUIRED PATHS ${_nholo_nanobind_dir} NO_DEFAULT_PATH)
nanobind_add_module(_nholo NB_STATIC ${PROJECT_SOURCE_DIR}/python/src/module.cpp)
target_link_libraries(_nholo PRIVATE nholo_host)
# nholo's warnings (errors) for its own code; nanobind's headers as system
# headers (they shadow members, which -Wshadow reports)
target_include_directories(_nholo SYSTEM PRIVATE ${_nholo_nanobind_dir}/../include)
target_compile_options(_nholo PRIVATE ${NHOLO_WARNINGS})
# the module in the source tree's package folder too, so that tests and
# examples import nholo from python/ of a build without installing it
set_target_properties(_nholo PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/python/nholo)
# in a wheel, next to the package's Python files (the install prefix is the
# package's folder, pyproject.toml)
if(DEFINED SKBUILD)
  install(TARGETS _nholo LIBRARY DESTINATION .)
endif()
# the package's Python files next to the module in BUILD/python/nholo, so that
# PYTHONPATH=BUILD/python imports nholo from a build without installing it
add_custom_target(nholo_python_files ALL
  COMMAND ${CMAKE_COMMAND} -E copy_directory ${PROJECT_SOURCE_DIR}/python/nholo
          ${CMAKE_BINARY_DIR}/python/nholo
  COMMENT "nholo's Python files into ${CMAKE_BINARY_DIR}/python/nholo")
add_dependencies(_nholo nholo_python_files)

# its tests against this build folder (scripts/test.sh runs them against the
# installed package instead)
if(NHOLO_BUILD_TESTS)
  nholo_add_pytest(python_api ${Python_EXECUTABLE} test_python_api.py 900
    "PYTHONPATH=${CMAKE_BINARY_DIR}/python;NHOLO_BINARY=$<TARGET_FILE:nholo>;NHOLO_CACHE_DIR=${PROJECT_SOURCE_DIR}/build/test-plugin-cache")
  # nholo.Model.from_sympy (python/nholo/_sympy.py); skipped, saying so, without sympy
  nholo_add_pytest(python_from_sympy ${Python_EXECUTABLE} test_from_sympy.py 900
    "PYTHONPATH=${CMAKE_BINARY_DIR}/python;NHOLO_CACHE_DIR=${PROJECT_SOURCE_DIR}/build/test-plugin-cache"
    -rs)
endif()
