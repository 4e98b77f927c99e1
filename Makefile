# `make demo` and `make test` each create .venv with pip when it is missing, then run.
# x2 needs Python >= 3.12 (LeRobot 0.6); scripts/find-python.sh picks one (pyenv's on these machines).
PYTHON ?= $(shell scripts/find-python.sh)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# A separate small environment with zarr 2.x, the reader diffusion_policy and UMI use: the zarr
# export's round-trip test opens our output with it (x2 itself writes with zarr 3).
ZARR2 := $(VENV)/zarr2
ZARR2_STAMP := $(ZARR2)/.installed
# openpi's own client (it pins numpy < 2, so never in x2's environment): the policy wire's tests talk to
# x2's server with it and unpack its messages (tests/test_policy_wire.py).
OPENPI := $(VENV)/openpi
OPENPI_STAMP := $(OPENPI)/.installed
# Robot parts from vendor files (pinned PyPI wheels, unpacked into the venv's share/x2-vendor; x2/envspec/vendor.py)
VENDOR := $(VENV)/share/x2-vendor
VENDOR_STAMP := $(VENDOR)/.fetched
# LeRobot's plugin for x2's tasks (`lerobot-eval --env.type=x2`, docs/gymnasium.md): a distribution of its own, since
# LeRobot imports plugins by their distribution's name (lerobot_env_*); editable, after x2, which it imports.
PLUGIN := plugins/lerobot_env_x2
PLUGIN_STAMP := $(VENV)/.lerobot_env_x2-installed
export X2_ZARR2_PYTHON := $(abspath $(ZARR2))/bin/python
export X2_OPENPI_PYTHON := $(abspath $(OPENPI))/bin/python
export HF_HUB_OFFLINE ?= 1

# Python caches compiled modules (__pycache__) unless told not to; a machine that says PYTHONDONTWRITEBYTECODE=1
# would have every test's subprocess compile numpy, MuJoCo, h5py and x2 again from source (minutes over a run).
unexport PYTHONDONTWRITEBYTECODE

export MUJOCO_GL ?= egl
export OMP_NUM_THREADS ?= 1
export OPENBLAS_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1

.PHONY: venv system-deps test lint demo bench clean

$(STAMP): pyproject.toml
	@test -n "$(PYTHON)" || { echo "make: no Python >= 3.12 (see scripts/find-python.sh)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# --no-compile: pip would byte-compile every installed module (torch's thousands among them) up front;
	# Python compiles the few that are imported, on first import, and caches them (see unexport above).
	$(BIN)/python -m pip install --quiet --no-compile -e '.[dev]'
	touch $(STAMP)

# (--no-deps: what it needs, x2, LeRobot and Gymnasium, x2's dev install has just put there)
$(PLUGIN_STAMP): $(STAMP) $(PLUGIN)/pyproject.toml
	$(BIN)/python -m pip install --quiet --no-compile --no-deps -e $(PLUGIN)
	touch $(PLUGIN_STAMP)

$(ZARR2_STAMP): $(STAMP)
	test -x $(ZARR2)/bin/python || $(BIN)/python -m venv $(ZARR2)
	$(ZARR2)/bin/python -m pip install --quiet --no-compile 'zarr>=2.18,<3' 'numcodecs<0.16'
	touch $(ZARR2_STAMP)

# (openpi-client 0.1.2 imports typing_extensions without declaring it)
$(OPENPI_STAMP): $(STAMP)
	test -x $(OPENPI)/bin/python || $(BIN)/python -m venv $(OPENPI)
	$(OPENPI)/bin/python -m pip install --quiet --no-compile openpi-client==0.1.2 'numpy<2' typing_extensions \
	  websockets msgpack
	touch $(OPENPI_STAMP)

$(VENDOR_STAMP): $(STAMP) x2/envspec/vendor.py
	$(BIN)/python -m x2 robots fetch >/dev/null
	touch $(VENDOR_STAMP)

venv: $(STAMP) $(PLUGIN_STAMP) $(ZARR2_STAMP) $(OPENPI_STAMP) $(VENDOR_STAMP)

lint: $(STAMP)
	$(BIN)/ruff check x2 tests bench plugins
	$(BIN)/lint-imports
	$(BIN)/mypy

# Xvfb and xdotool: the keyboard tests type on a virtual X server (Debian packages).
system-deps:
	@command -v Xvfb >/dev/null && command -v xdotool >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq xvfb xdotool >/dev/null; }

# Two worker processes, one test file each at a time (module fixtures and kill tests stay in one process):
# half the wall time on two cores. Tests paced by the wall clock (a teleop session replaying a recorded
# device stream at 30 Hz) run afterwards on their own, with no other test competing for the cores.
# The set-up's steps after the install run side by side: the type check works the CPU while the zarr 2 and
# openpi environments and the vendor packages download.
test: $(STAMP)
	$(MAKE) --no-print-directory -j3 lint system-deps $(PLUGIN_STAMP) $(ZARR2_STAMP) $(OPENPI_STAMP) $(VENDOR_STAMP)
	$(BIN)/python -m pytest -q -n 2 --dist loadfile -m "not realtime" --durations=25
	$(BIN)/python -m pytest -q -m realtime

demo: $(STAMP) $(VENDOR_STAMP)
	bash scripts/demo.sh

bench: $(STAMP) $(PLUGIN_STAMP) $(VENDOR_STAMP)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info
