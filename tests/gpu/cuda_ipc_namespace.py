"""Does CUDA IPC (cudaIpcGetMemHandle/OpenMemHandle, as kbench's shared tensors use) work from a
process in an IPC namespace of its own (and a PID namespace)? Run as root on a GPU machine
(tests/gpu/run.sh ipc). Each line says whether the child read the parent's tensor and wrote it:
"parent sees 136" where it did. kbench's own shared tensors do not need it (they travel as file
descriptors, cuMemExportToShareableHandle); this checks what a CUDA IPC handle would do."""
import base64
import pickle
import subprocess
import sys

import torch
from torch.multiprocessing.reductions import reduce_tensor
CHILD = r'''
import sys, pickle, base64, torch
fn, args = pickle.loads(base64.b64decode(sys.argv[1]))
t = fn(*args)
t.add_(1)
torch.cuda.synchronize()
print("child sum", t.sum().item())
'''
t = torch.arange(16, device="cuda", dtype=torch.float32)
fn, args = reduce_tensor(t)
payload = base64.b64encode(pickle.dumps((fn, args))).decode()
for prefix in ([], ["unshare", "--ipc"], ["unshare", "--ipc", "--pid", "--fork", "--mount-proc"],
               ["unshare", "--ipc", "--pid", "--net", "--mount", "--fork"]):
    t.copy_(torch.arange(16, device="cuda", dtype=torch.float32))
    r = subprocess.run(prefix + [sys.executable, "-c", CHILD, payload], capture_output=True,
                       text=True, timeout=120)
    torch.cuda.synchronize()
    print(prefix or ["(none)"], "rc", r.returncode, r.stdout.strip(), "| parent sees", t.sum().item(),
          "(120 expected; 136 if the child wrote)", r.stderr.strip()[-400:])
