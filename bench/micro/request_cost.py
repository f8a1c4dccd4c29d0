import time, torch
dev = torch.device("cuda")
def t(f, n=5):
    f(); torch.cuda.synchronize(); s = time.perf_counter()
    for _ in range(n): f()
    torch.cuda.synchronize(); return (time.perf_counter() - s) / n * 1e3
GiB = 1 << 30
x = torch.randn(GiB // 4, device=dev); y = x.clone(); y[::3] += 1e-6
xi = x.view(torch.int32); out = torch.empty_like(x); oi = out.view(torch.int32)
print(f"per GiB fp32: sum(int32->int64) {t(lambda: torch.sum(xi, dtype=torch.int64).item()):.2f} ms; "
      f"sum(int64 view) {t(lambda: torch.sum(x.view(torch.int64)).item()):.2f} ms; "
      f"fill_ {t(lambda: out.view(torch.uint8).fill_(0x5a)):.2f} ms; copy_ {t(lambda: out.copy_(x)):.2f} ms; "
      f"bitwise_or_out {t(lambda: torch.bitwise_or(xi, 0, out=oi)):.2f} ms; equal {t(lambda: torch.equal(x, y)):.2f} ms; "
      f"equal int64 {t(lambda: torch.equal(x.view(torch.int64), x.clone().view(torch.int64))):.2f} ms (incl clone)", flush=True)
def screen(ref, got, atol=1e-4, rtol=1e-4):
    for s in range(0, ref.numel(), 1 << 24):
        r = ref[s:s + (1 << 24)]; g = got[s:s + (1 << 24)]
        d = (g - r).abs_(); ra = r.abs(); h = ra.mul(0.5 * rtol).add_(0.5 * atol)
        torch.le(d, h).all().item(); d.max().item(); d.div_(ra.clamp_min_(atol)).max().item()
print(f"screen per GiB {t(lambda: screen(x, y), 3):.2f} ms", flush=True)
