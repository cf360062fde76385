#!/usr/bin/env python3
"""texts.py DLOCK_DIR SOURCE_DIR: texts that drifted out of step with the
command (issue 47, trap 7), each checked against what it describes:

- `dlock --help`'s exit codes name every code dlock(1)'s EXIT STATUS
  lists (126 and 127 were left out);
- no doubled word in the man pages as they read ("CMD's CMD's");
- docs/cli.md's synopsis has a line for every command `dlock --help`
  lists, and its run line the options of --once, --once-per and
  --metrics-file;
- no text says `list --json` lists "every held lock" (it also lists
  the free names with recorded runs).
Prints a line per check; exit 1 if one fails."""
import os
import re
import subprocess
import sys

exe = os.path.join(sys.argv[1], "dlock")
src = sys.argv[2]
fails = 0


def say(ok, what):
    global fails
    print(("ok   " if ok else "FAIL ") + what)
    fails += not ok


def read(path):
    with open(os.path.join(src, path)) as f:
        return f.read()


def run(*args):
    p = subprocess.run([exe] + list(args), capture_output=True, text=True)
    return p.stdout + p.stderr


def man_sections(text):
    out, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"\.SH\s+\"?([^\"]+)\"?", line)
        if m:
            cur = m.group(1).strip()
            out[cur] = []
        elif cur is not None:
            out[cur].append(line)
    return out


def man_text(lines):
    """roff source as it reads: a font macro's arguments (.BR a b reads
    "ab", .B a b "a b"), text lines; any other request (.TP, .PP,
    .SS...) is a break, across which no word is doubled."""
    out = []
    for line in lines:
        if line.startswith((".", "'")):
            m = re.match(r"[.'](B|I|SM|BR|RB|IR|RI|BI|IB)(?:\s+(.*))?$", line)
            if not m:
                out.append("\n\n")
                continue
            args = re.findall(r'"([^"]*)"|(\S+)', m.group(2) or "")
            args = [x or y for x, y in args]
            line = (" " if len(m.group(1)) == 1 or m.group(1) == "SM"
                    else "").join(args)
        line = re.sub(r"\\f[BIRP]|\\\(..|\\[&e]", "", line)
        out.append(line.replace("\\-", "-").replace("\\ ", " ") + "\n")
    return "".join(out)


helptext = run("--help")
m = re.search(r"exit codes:(.*)", helptext, re.S)
codes = set(re.findall(r"\b(\d+)\b", m.group(1))) if m else set()
sections = man_sections(read("docs/man/dlock.1"))
man_codes = set()
for line in sections.get("EXIT STATUS", []):
    if re.match(r"\.B\s+\d", line):
        man_codes.update(re.findall(r"\d+", line))
for c in sorted(man_codes, key=int):
    say(c in codes, "dlock --help's exit codes name %s (dlock(1) EXIT STATUS)"
        % c)

for page in ("docs/man/dlock.1", "docs/man/libdlock.3"):
    text = man_text(read(page).splitlines())
    doubled = [m.group(0).replace("\n", " ") for m in re.finditer(
        r"(?<![\w'-])([A-Za-z][\w'-]*)[ \t]*\n?[ \t]*\1(?![\w'-])", text,
        re.I) if not m.group(1).isdigit() and m.group(1) != "long"]  # C's long long
    say(not doubled, "%s has no doubled word%s" %
        (page, (": " + ", ".join(doubled)) if doubled else ""))

cli = read("docs/cli.md")
m = re.search(r"```\n(.*?)```", cli, re.S)
synopsis = m.group(1) if m else ""
cmds = re.search(r"commands:\n(.*?)\n\n", helptext, re.S)
for cmd in re.findall(r"^  ([a-z]+) ", cmds.group(1) if cmds else "", re.M):
    say(re.search(r"^dlock .*\] %s\b" % cmd, synopsis, re.M) is not None,
        "docs/cli.md's synopsis has `%s` (dlock --help lists it)" % cmd)
runline = next((l for l in synopsis.splitlines() if "] run " in l), "")
for opt in ("--once", "--once-per", "--metrics-file"):
    say(re.search(r"(?<![\w-])%s(?![\w-])" % opt, runline) is not None,
        "docs/cli.md's synopsis of run has %s" % opt)

for path in ("README.md", "docs/getting-started.md", "docs/cli.md"):
    bad = [l for l in read(path).splitlines()
           if "list --json" in l and "every held lock" in l]
    say(not bad, "%s: `list --json` is not said to list only held locks%s" %
        (path, (": " + bad[0].strip()) if bad else ""))
sys.exit(1 if fails else 0)
