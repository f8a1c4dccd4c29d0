"""The compute capabilities of the GPUs given, from the CUDA driver, without PyTorch: kbench
learns what to build for in a fraction of a second, while its judges still import torch.

    python3 -I -S gpu_probe.py GPU[,GPU...]

GPU as CUDA_VISIBLE_DEVICES takes it. Prints one capability a line ("9.0"), in the order the
driver lists the devices; exits 1 with the reason on stderr when the driver cannot say.
"""

import ctypes
import os
import sys

ATTRIBUTE_MAJOR = 75  # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
ATTRIBUTE_MINOR = 76  # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR


def fail(what):
    print(what, file=sys.stderr)
    sys.exit(1)


def main(gpus):
    # Before the driver starts: it reads the variable once.
    os.environ["CUDA_VISIBLE_DEVICES"] = gpus
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        fail(f"no CUDA driver: {e}")

    def call(name, *args):
        result = getattr(cuda, name)(*args)
        if result != 0:
            fail(f"{name} failed with CUDA driver error {result}")

    call("cuInit", ctypes.c_uint(0))
    count = ctypes.c_int()
    call("cuDeviceGetCount", ctypes.byref(count))
    if count.value != len(gpus.split(",")):
        fail(f"the driver sees {count.value} device(s) for CUDA_VISIBLE_DEVICES={gpus}")
    for ordinal in range(count.value):
        device = ctypes.c_int()
        call("cuDeviceGet", ctypes.byref(device), ctypes.c_int(ordinal))
        major, minor = ctypes.c_int(), ctypes.c_int()
        call("cuDeviceGetAttribute", ctypes.byref(major), ctypes.c_int(ATTRIBUTE_MAJOR), device)
        call("cuDeviceGetAttribute", ctypes.byref(minor), ctypes.c_int(ATTRIBUTE_MINOR), device)
        print(f"{major.value}.{minor.value}")


if __name__ == "__main__":
    if len(sys.argv) != 2 or not sys.argv[1]:
        fail("usage: gpu_probe.py GPU[,GPU...]")
    main(sys.argv[1])
