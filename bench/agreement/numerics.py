"""Who is right where kbench and the reference harness disagree on a candidate's values: runs the
reference (float32, TF32 off), the candidate (three times on the same inputs) and the reference
in float64 on the same inputs and weights, and prints, per seed, how far each is from the others
and how many values each tolerance fails (kbench strict: 1e-4; the harness: atol = rtol = 1e-2).

  python3 bench/agreement/numerics.py PROBLEMS.jsonl LEVEL PROBLEM CANDIDATE.py [...]
"""
import importlib.util
import json
import sys
import types

import torch


def load(code, name):
    module = types.ModuleType(name)
    exec(compile(code, name, "exec"), module.__dict__)
    return module


def fails(a, b, tol):
    return int((~torch.isclose(a, b, atol=tol, rtol=tol)).sum())


def main(problems, level, problem, candidates):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    ref = next(p for p in map(json.loads, open(problems))
               if p["level"] == int(level) and p["problem_id"] == int(problem))
    reference = load(ref["code"], "reference")
    for path in candidates:
        spec = importlib.util.spec_from_file_location("candidate", path)
        candidate = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(candidate)
        print("==", path)
        for seed in range(5):
            torch.manual_seed(seed)
            inputs = [x.cuda() if torch.is_tensor(x) else x for x in reference.get_inputs()]
            init = reference.get_init_inputs()
            torch.manual_seed(1000 + seed)
            model = reference.Model(*init).cuda()
            torch.manual_seed(1000 + seed)
            new = candidate.ModelNew(*init).cuda()
            with torch.no_grad():
                r32 = model(*inputs)
                runs = [new(*inputs) for _ in range(3)]
                r64 = model.double()(*[x.double() if torch.is_tensor(x) and x.is_floating_point()
                                        else x for x in inputs])
                model.float()
            torch.cuda.synchronize()
            c = runs[0]
            d = (c - r32).abs()
            worst = int(d.argmax())
            print("seed %d: |cand-ref32| max %.3g at %d (cand %.6g ref32 %.6g ref64 %.6g); "
                  "|cand-ref64| max %.3g; |ref32-ref64| max %.3g; runs differ by %.3g; "
                  "fail 1e-4: %d, fail 1e-2: %d of %d"
                  % (seed, d.max(), worst, c.flatten()[worst], r32.flatten()[worst],
                     r64.flatten()[worst], (c.double() - r64).abs().max(),
                     (r32.double() - r64).abs().max(),
                     max(float((x - c).abs().max()) for x in runs[1:]),
                     fails(c, r32, 1e-4), fails(c, r32, 1e-2), c.numel()))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:])
