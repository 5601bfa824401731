# cmake/nholo_h5.cmake — the HDF5 layer (host/io/h5.hpp, host/io/h5.cpp,
# host/io/h5_shapes.cpp, host/io/h5_copy.cpp, host/io/h5_chunk_index.cpp,
# host/io/h5_read_budget.cpp, host/io/h5_library_faults.cpp) and its
# tests.
#
# Include from the top-level CMakeLists.txt AFTER the tests' glob loop (so
# that the target test_h5 exists) and after nholo_cxx_target() is defined:
#   include(cmake/nholo_h5.cmake)
#
# Defines
#   nholo_h5          STATIC library: host/io/h5.cpp; PUBLIC HDF5 C (the header
#                     includes hdf5.h) and HL (H5DS dimension scales; test_h5
#                     calls H5DS directly to check them)
#   h5_layout_writer  tests/h5_layout_writer.cpp: writes the output layout of
#                     docs/usage.md ("Output (HDF5)") to the path given as argv[1]
#   python_h5_layout  ctest: pytest tests/python/test_h5_layout.py, which runs
#                     h5_layout_writer (path in NHOLO_H5_LAYOUT_WRITER) and
#                     reads the file with h5py and xarray (engine="h5netcdf")
# and links test_h5 (from the tests' glob) against nholo_h5.

# FindHDF5's C component try-compiles a .c file: it needs the C language.
get_property(_nholo_langs GLOBAL PROPERTY ENABLED_LANGUAGES)
if(NOT "C" IN_LIST _nholo_langs)
  enable_language(C)
endif()
find_package(HDF5 REQUIRED COMPONENTS C HL)

add_library(nholo_h5 STATIC ${PROJECT_SOURCE_DIR}/host/io/h5.cpp ${PROJECT_SOURCE_DIR}/host/io/h5_shapes.cpp
            ${PROJECT_SOURCE_DIR}/host/io/h5_copy.cpp
            ${PROJECT_SOURCE_DIR}/host/io/h5_chunk_index.cpp
            ${PROJECT_SOURCE_DIR}/host/io/h5_read_budget.cpp
            ${PROJECT_SOURCE_DIR}/host/io/h5_library_faults.cpp)
target_include_directories(nholo_h5 PUBLIC ${PROJECT_SOURCE_DIR})
if(TARGET hdf5::hdf5 AND TARGET hdf5::hdf5_hl)
  target_link_libraries(nholo_h5 PUBLIC hdf5::hdf5_hl hdf5::hdf5)
else()
  target_include_directories(nholo_h5 SYSTEM PUBLIC ${HDF5_INCLUDE_DIRS})
  target_compile_definitions(nholo_h5 PUBLIC ${HDF5_DEFINITIONS})
  target_link_libraries(nholo_h5 PUBLIC ${HDF5_HL_LIBRARIES} ${HDF5_C_LIBRARIES})
endif()
nholo_cxx_target(nholo_h5)

if(NHOLO_BUILD_TESTS)
  if(TARGET test_h5)
    target_link_libraries(test_h5 PRIVATE nholo_h5)
  endif()

  add_executable(h5_layout_writer ${PROJECT_SOURCE_DIR}/tests/h5_layout_writer.cpp)
  target_link_libraries(h5_layout_writer PRIVATE nholo_h5)
  target_compile_definitions(h5_layout_writer PRIVATE NHOLO_VERSION="${PROJECT_VERSION}")
  nholo_cxx_target(h5_layout_writer)

  # The python3 on PATH (the one scripts/setup.sh installs packages into).
  find_program(NHOLO_PYTHON3 NAMES python3 REQUIRED)
  execute_process(
    COMMAND ${NHOLO_PYTHON3} -c "import pytest, numpy, h5py, xarray, h5netcdf, matplotlib"
    RESULT_VARIABLE _nholo_py_ok OUTPUT_QUIET ERROR_QUIET)
  if(NOT _nholo_py_ok EQUAL 0)
    message(WARNING "${NHOLO_PYTHON3} lacks one of pytest, numpy, h5py, xarray, h5netcdf: "
                    "the test python_h5_layout will fail (run scripts/setup.sh)")
  endif()
  nholo_add_pytest(python_h5_layout ${NHOLO_PYTHON3} test_h5_layout.py 300
    "NHOLO_H5_LAYOUT_WRITER=$<TARGET_FILE:h5_layout_writer>;PYTHONDONTWRITEBYTECODE=1")
endif()
