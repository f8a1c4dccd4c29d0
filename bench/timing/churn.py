"""Candidates that try to leave the timing core: each is its reference (true speedup 1) whose
ModelNew, when made, starts chains of threads (each thread starts the next and ends, faster than
a listing of /proc can follow) and, with sample 1, threads that spin on the CPU as well. Pinned
whole, every thread they start runs on the timing core under SCHED_IDLE: the verdicts keep
config.timing_core and carry no timing_core_left finding.

    python3 bench/timing/churn.py PROBLEMS.jsonl OUT.jsonl [L/P ...]

Run them with --policy permissive, as the identity candidates.
"""

import sys

from identity import write_candidates

CHURN = '''

import threading as _threading


def _chain():
    _threading.Thread(target=_chain, daemon=True).start()


def _spin():
    while True:
        pass


class ModelNew(Model):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for _ in range(2):
            _threading.Thread(target=_chain, daemon=True).start()
        for _ in range(SPINNERS):
            _threading.Thread(target=_spin, daemon=True).start()
'''


def main(problems, out, wanted):
    write_candidates(problems, out, wanted, lambda p: [
        (sample, p["code"].rstrip() + "\n" + CHURN.replace("SPINNERS", str(spinners)))
        for sample, spinners in ((0, 0), (1, 4))])
    print(f"{2 * len(wanted)} churning candidates in {out}")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3:] or ["1/88", "2/30"])
