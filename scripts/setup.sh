#!/usr/bin/env bash
# Installs what nholo needs on a fresh Debian machine (idempotent):
#   Debian packages: compilers (g++, and clang++: CI compiles model plugins
#                    with both), CMake, Eigen, HDF5, toml++, CLI11, Boost,
#                    GoogleTest, Google Benchmark, Open MPI (mpirun -n N nholo run),
#                    SLEEF (the vector math of the CPU's SIMD lanes, kernels/lanes.hpp)
#   Python (the `python3` on PATH, via pip): numpy, scipy, h5py, matplotlib,
#                    xarray, h5netcdf, tqdm, pytest, sympy (nholo.Model.from_sympy
#                    and its tests), and what `pip install .`
#                    builds the Python package with (scikit-build-core, nanobind)
# The CUDA toolkit (nvcc, CCCL) is expected under /usr/local/cuda.
set -euo pipefail

need_apt=()
for pkg in build-essential clang cmake libeigen3-dev libhdf5-dev hdf5-tools libtomlplusplus-dev \
           libcli11-dev libboost-dev libgtest-dev libbenchmark-dev libopenmpi-dev openmpi-bin gdb libsleef-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "[setup] installing Debian packages: ${need_apt[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if [ ! -d /usr/local/cuda/include/cccl ] && [ ! -f /usr/local/cuda/include/thrust/for_each.h ]; then
  echo "[setup] error: Thrust/CCCL not found under /usr/local/cuda; install the CUDA toolkit" >&2
  exit 1
fi

PY=${PYTHON:-python3}
if ! "$PY" -c "import numpy, scipy, h5py, matplotlib, xarray, h5netcdf, pytest, tqdm, sympy, nanobind, scikit_build_core" >/dev/null 2>&1; then
  echo "[setup] installing Python packages into $("$PY" -c 'import sys; print(sys.executable)')"
  "$PY" -m pip install --quiet --disable-pip-version-check numpy scipy h5py matplotlib "xarray>=2024.10" \
    h5netcdf pytest tqdm "sympy>=1.12" "nanobind>=2.0" "scikit-build-core>=0.10"
fi
echo "[setup] ok"
