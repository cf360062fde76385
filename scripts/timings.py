#!/usr/bin/env python3
"""timings.py BUILD_DIR [--write]: the per-entry time table of the tests.

ctest keeps what each entry took in BUILD_DIR/Testing/Temporary/
CTestCostData.txt.  This prints, per tier, the entries' count, the sum of
their times and the slowest ones with their class (P parallel, T timing,
C CPU-heavy, S serial: tests/CMakeLists.txt, dlock_tier), as the Markdown
table docs/testing.md shows under "Where the time goes".  With --write it
also writes tests/costs.txt (the same CostData, for the entries that
exist now), which scripts/test.sh copies into a build that has none, so
that ctest starts the slowest entries first on a fresh clone too (without
it ctest starts them in the order they are defined, and a long entry
started last runs alone at the end)."""
import json
import os
import subprocess
import sys

SLOWEST = 15


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    build = argv[1]
    here = os.path.dirname(os.path.abspath(__file__))
    data = os.path.join(build, "Testing", "Temporary", "CTestCostData.txt")
    cost, runs = {}, {}
    with open(data) as f:
        for line in f:
            w = line.split()
            if w and w[0] == "---":
                break
            if len(w) == 3:
                runs[w[0]], cost[w[0]] = int(w[1]), float(w[2])
    tests = json.loads(subprocess.run(
        ["ctest", "--test-dir", build, "--show-only=json-v1"],
        check=True, capture_output=True, text=True).stdout)["tests"]
    tiers = {}
    for t in tests:
        labels = []
        for p in t.get("properties", []):
            if p["name"] == "LABELS":
                labels = p["value"]
        tier = next((l for l in labels if l in ("quick", "long")), "?")
        par = next((l for l in labels if l in ("P", "T", "C", "S")), "?")
        tiers.setdefault(tier, []).append((cost.get(t["name"]), t["name"], par))
    out = []
    for tier in ("quick", "long"):
        rows = tiers.get(tier, [])
        known = [r for r in rows if r[0] is not None]
        known.sort(key=lambda r: -r[0])
        by = {}
        for c, _, par in known:
            by[par] = by.get(par, 0) + c
        out.append("%s tier: %d entries, %.0f s of entry time (%s); %d not "
                   "timed yet" % (tier, len(rows), sum(r[0] for r in known),
                                  ", ".join("%s %.0f s" % (k, by[k])
                                            for k in sorted(by)),
                                  len(rows) - len(known)))
        out.append("")
        out.append("| entry | class | s |")
        out.append("|---|---|---:|")
        for c, name, par in known[:SLOWEST]:
            out.append("| `%s` | %s | %.0f |" % (name, par, c))
        out.append("")
    print("\n".join(out))
    if "--write" in argv[2:]:
        names = {t["name"] for t in tests}
        with open(os.path.join(here, "..", "tests", "costs.txt"), "w") as f:
            for n in sorted(names):
                if n in cost:
                    f.write("%s %d %.4f\n" % (n, runs[n], cost[n]))
            f.write("---\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
