"""x2: robot-manipulation training data from a MuJoCo green-booth twin."""

import os

# Control and worker processes run one BLAS/OpenMP thread: on 2 cores a 2-thread OpenBLAS
# turned a 0.3 ms matmul into 21 ms (measured). Set before numpy is imported anywhere in x2.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("MUJOCO_GL", "egl")

__version__ = "0.1.0"
