import time, torch, subprocess, sys
dev = torch.device("cuda")
def t(f, n=5):
    torch.cuda.synchronize(); s = time.perf_counter()
    for _ in range(n): f()
    torch.cuda.synchronize(); return (time.perf_counter() - s) / n * 1e3

def accumulate(ref, got, atol=1e-4, rtol=1e-4):
    ref_finite = torch.isfinite(ref)
    both = ref_finite & torch.isfinite(got)
    diff = (got - ref).abs()
    fd = torch.where(both, diff, torch.zeros((), dtype=diff.dtype, device=diff.device))
    a = fd.max().item()
    r = (fd / ref.abs().clamp_min(atol)).max().item()
    close = (diff <= atol + rtol * ref.abs()) | (got == ref)
    close = close | (torch.isnan(ref) & torch.isnan(got))
    bad = ref_finite & ~both
    nf = bad.sum().item()
    mm = (~close).sum().item()
    return a, r, nf, mm

def compare(ref, got, chunk=1 << 24):
    ref = ref.reshape(-1); got = got.reshape(-1)
    for s in range(0, ref.numel(), chunk):
        n = min(chunk, ref.numel() - s)
        accumulate(ref.narrow(0, s, n).double(), got.narrow(0, s, n).double())

for numel in (1 << 23, 1 << 26, 1 << 28):
    ref = torch.randn(numel, device=dev); got = ref.clone(); got[0] += 1e-6
    warm = t(lambda: compare(ref, got), 3)
    def cold():
        torch.cuda.empty_cache(); compare(ref, got)
    c = t(cold, 3)
    eq = t(lambda: torch.equal(ref.view(torch.uint8), got.view(torch.uint8)))
    eqf = t(lambda: torch.equal(ref, got))
    cl = t(lambda: ref.clone())
    def f32():
        d = (got - ref).abs(); close = d <= 1e-4 + 1e-4 * ref.abs(); (~close).sum().item(); d.max().item()
    f = t(f32)
    print(f"{numel*4/2**20:.0f} MiB fp32: compare as written warm {warm:.1f} ms, after empty_cache {c:.1f} ms; equal(bytes) {eq:.2f} ms, equal {eqf:.2f} ms, clone {cl:.2f} ms, fp32 4-op {f:.2f} ms", flush=True)

# A fresh process's CUDA start.
code = "import time; s=time.perf_counter(); import torch; a=time.perf_counter(); torch.cuda.init(); torch.zeros(1, device='cuda'); b=time.perf_counter(); print(f'import torch {a-s:.2f} s, CUDA start {b-a:.2f} s')"
for _ in range(2):
    print(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip())
