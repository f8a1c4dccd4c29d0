"""kbench worker processes; the work itself is done by the C++ extension _kbench_worker."""
import torch  # noqa: F401  libtorch must be loaded before the extension

from ._kbench_worker import built_with_cuda, main  # noqa: F401
