"""Makes a run store (kbench.db) from a verdicts file, for runs whose store is gone (the GPU
machine keeps nothing between sessions) but whose verdicts were kept in bench/.

    python3 bench/report/store_from_verdicts.py VERDICTS.jsonl RUN_FOLDER

The store has kbench's layout (version 2): a row a verdict under a key of its problem's and
candidate's hashes, and the run's selection (its problems and items), so that `kbench score` and
`kbench report --run RUN_FOLDER` read it as they read a store `kbench eval` wrote.
"""

import hashlib
import json
import os
import sqlite3
import sys


def main():
    verdicts_path, folder = sys.argv[1:3]
    os.makedirs(folder, exist_ok=True)
    db = sqlite3.connect(os.path.join(folder, "kbench.db"))
    db.executescript("""
        CREATE TABLE IF NOT EXISTS verdicts (key TEXT PRIMARY KEY, level INTEGER NOT NULL,
          problem_id INTEGER NOT NULL, sample_id INTEGER NOT NULL, status TEXT NOT NULL,
          verdict TEXT NOT NULL,
          stored_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')));
        CREATE TABLE IF NOT EXISTS attempts (key TEXT PRIMARY KEY, count INTEGER NOT NULL,
          last_started_at TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
        PRAGMA user_version = 2;
    """)
    problems, items, config = {}, [], None
    for line in open(verdicts_path):
        v = json.loads(line)
        p, c = v["problem"], v["candidate"]
        level, pid = p["level"], p["id"]
        sample = c.get("sample_id") or 0
        key = hashlib.sha256((p.get("sha256", "") + c.get("sha256", "") +
                              json.dumps(v.get("config", {}), sort_keys=True)).encode()).hexdigest()
        db.execute("INSERT OR REPLACE INTO verdicts (key, level, problem_id, sample_id, status, "
                   "verdict) VALUES (?, ?, ?, ?, ?, ?)",
                   (key, level, pid, sample, v["status"], json.dumps(v)))
        problems[(level, pid)] = {"level": level, "id": pid, "name": p["name"]}
        items.append({"key": key, "level": level, "id": pid, "sample_id": sample,
                      "path": c.get("path", "")})
        config = config or v.get("config")
    selection = {"problems": [problems[k] for k in sorted(problems)], "items": items,
                 "unanswered": []}
    db.execute("INSERT OR REPLACE INTO meta VALUES ('selection', ?)", (json.dumps(selection),))
    if config:
        db.execute("INSERT OR REPLACE INTO meta VALUES ('config', ?)", (json.dumps(config),))
    db.commit()
    print(f"{len(items)} verdicts of {len(problems)} problems in {folder}/kbench.db")


if __name__ == "__main__":
    main()
