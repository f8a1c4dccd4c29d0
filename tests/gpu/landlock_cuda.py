"""Which part of kbench's Landlock ruleset keeps CUDA from starting? Run on a GPU machine
(tests/gpu/run.sh layers). Each line is one ruleset, applied in a fresh process before it imports
torch and touches the GPU: "ok" where CUDA started, else the error. kbench's ruleset
(src/confinement/landlock.cpp): every right handled, reading allowed everywhere, writing only in a
scratch folder and on character devices (null, zero, random, the GPU's), no TCP (ABI 4), no
signals or abstract sockets beyond the process (ABI 6)."""
import ctypes
import os
import struct
import subprocess
import sys
import tempfile

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
NET_BIND, NET_CONNECT = 1 << 0, 1 << 1
SCOPE_ABSTRACT, SCOPE_SIGNAL = 1 << 0, 1 << 1
READ = EXECUTE | READ_FILE | READ_DIR
WRITES = {"write_file": WRITE_FILE, "remove_dir": REMOVE_DIR, "remove_file": REMOVE_FILE,
          "make_char": MAKE_CHAR, "make_dir": MAKE_DIR, "make_reg": MAKE_REG,
          "make_sock": MAKE_SOCK, "make_fifo": MAKE_FIFO, "make_block": MAKE_BLOCK,
          "make_sym": MAKE_SYM, "refer": REFER, "truncate": TRUNCATE}
libc = ctypes.CDLL(None, use_errno=True)


def abi():
    return libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))


def devices():
    out = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"]
    for d in ("/dev", "/dev/nvidia-caps", "/dev/dri"):
        try:
            names = os.listdir(d)
        except OSError:
            continue
        out += [os.path.join(d, n) for n in names
                if (n.startswith("nvidia") or d != "/dev") and not os.path.isdir(os.path.join(d, n))]
    return out


def apply(handled, scoped, net, writable, extra):
    level = abi()
    write_all = sum(WRITES.values()) & handled
    if level < 2:
        handled &= ~REFER
    if level < 3:
        handled &= ~TRUNCATE
    attr = struct.pack("QQQ", handled, (NET_BIND | NET_CONNECT) if net and level >= 4 else 0,
                       scoped if level >= 6 else 0)
    size = 24 if level >= 6 else 16 if level >= 4 else 8
    buf = ctypes.create_string_buffer(attr[:size], size)
    fd = libc.syscall(444, buf, ctypes.c_size_t(size), ctypes.c_uint32(0))
    if fd < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")

    def rule(path, access):
        access &= handled
        if not access:
            return
        try:
            p = os.open(path, os.O_PATH)
        except OSError:
            return
        r = ctypes.create_string_buffer(struct.pack("=Qi", access, p), 12)
        libc.syscall(445, fd, 1, r, 0)
        os.close(p)
    rule("/", READ)
    for d in writable:
        rule(d, READ | write_all)
    for d in devices():
        rule(d, READ_FILE | (WRITE_FILE | TRUNCATE) | (IOCTL_DEV if handled & IOCTL_DEV else 0))
    for path, access in extra:
        rule(path, access)
    libc.prctl(38, 1, 0, 0, 0)
    if libc.syscall(446, fd, 0) != 0:
        raise OSError(ctypes.get_errno(), "landlock_restrict_self")


def child(spec):
    handled, scoped, net, writable, extra = eval(spec)
    writable = ["/proc/%d" % os.getpid() if w == "PROC_SELF" else w for w in writable]
    apply(handled, scoped, net, writable, extra)
    import torch
    try:
        torch.zeros(1, device="cuda").add_(1)
        torch.cuda.synchronize()
        print("ok")
    except Exception as e:  # the CUDA error, one line
        print(str(e).splitlines()[0][:200])


def main():
    scratch = tempfile.mkdtemp()
    full = READ | sum(WRITES.values())
    both = SCOPE_ABSTRACT | SCOPE_SIGNAL
    cases = [("kbench's ruleset", (full, both, True, [scratch], [])),
             ("no scopes", (full, 0, True, [scratch], [])),
             ("no signal scope", (full, SCOPE_ABSTRACT, True, [scratch], [])),
             ("no abstract-socket scope", (full, SCOPE_SIGNAL, True, [scratch], [])),
             ("no TCP rules", (full, both, False, [scratch], [])),
             ("reads only handled", (READ, 0, False, [scratch], []))]
    for name, bit in WRITES.items():
        cases.append(("only %s handled" % name, (READ | bit, 0, False, [scratch], [])))
    for d in ("/dev/shm", "/tmp", "/dev", "/run", "/var", "/proc", "/sys", os.path.expanduser("~")):
        cases.append(("writes also in " + d, (full, both, True, [scratch, d], [])))
    # What kbench grants GPU sandboxes where CUDA needs it (LockdownSpec::proc_writes "own").
    cases.append(("writes also in its own /proc/PID", (full, both, True, [scratch, "PROC_SELF"], [])))
    print("landlock abi", abi())
    for name, spec in cases:
        r = subprocess.run([sys.executable, __file__, "child", repr(spec)], capture_output=True,
                           text=True, timeout=120)
        last = (r.stdout.strip().splitlines() or [r.stderr.strip()[-200:] or "rc %d" % r.returncode])[-1]
        print("%-34s %s" % (name, last))


if __name__ == "__main__":
    child(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[1] == "child" else main()
