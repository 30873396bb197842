"""Without CUDA, run the Triton kernels of this package under the Triton interpreter on CPU.

``TRITON_INTERPRET`` is read when a ``@triton.jit`` function is defined, i.e. when
``bigbird_dna.attention.triton_*`` is first imported; conftest modules load before the test
modules of their directory, so setting it here is early enough. An explicit setting wins.
"""
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
