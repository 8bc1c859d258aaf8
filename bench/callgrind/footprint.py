#!/usr/bin/env python3
"""The code a callgrind profile (recorded with --dump-instr=yes --compress-pos=no) executed.

usage: footprint.py PROFILE                 prints "LINES PAGES": the distinct 64-byte lines and
                                            4 KiB pages of machine code executed, every object
                                            (the binary and the shared libraries) together
       footprint.py --order BINARY PROFILE...  prints BINARY's own symbols that the profiles
                                            executed, the most instructions first: a symbol
                                            ordering file for lld (-Wl,--symbol-ordering-file)

Every request of a benchmark case takes the same path, so a profile of N requests of one case
executes one request's code: its footprint. A core that idles between requests (c=1) finds
little of it still cached or mapped in its TLBs, and pays per line and per page touched.
"""
import bisect
import re
import subprocess
import sys
from collections import Counter

OBJ = re.compile(r"c?ob=\((\d+)\)(?: (.*))?")


def executed(path):
    """(object, address) -> instructions, for every instruction the profile executed."""
    names, cur, cost = {}, None, Counter()
    with open(path) as f:
        for line in f:
            if line.startswith(("ob=", "cob=")):
                m = OBJ.match(line.strip())
                if m.group(2):
                    names[m.group(1)] = m.group(2)
                if line.startswith("ob="):
                    cur = names.get(m.group(1))
            elif line.startswith("0x"):
                fields = line.split()
                # A cost line is "address line instructions"; a call's cost line repeats the
                # call site's address, which executed too.
                cost[(cur, int(fields[0], 16))] += int(fields[-1]) if len(fields) > 2 else 0
    return cost


def symbols(binary):
    """The binary's code symbols, by address."""
    out = subprocess.run(
        ["nm", "-n", "--defined-only", binary], capture_output=True, text=True, check=True
    ).stdout
    syms = []
    for line in out.splitlines():
        parts = line.split(maxsplit=2)
        if len(parts) == 3 and parts[1] in "tTwW":
            syms.append((int(parts[0], 16), parts[2]))
    return syms


def main(argv):
    if len(argv) >= 3 and argv[0] == "--order":
        binary, profiles = argv[1], argv[2:]
        syms = symbols(binary)
        starts = [a for a, _ in syms]
        per = Counter()
        for path in profiles:
            for (obj, addr), ir in executed(path).items():
                if obj != binary:
                    continue
                i = bisect.bisect_right(starts, addr) - 1
                if i >= 0:
                    per[syms[i][1]] += ir + 1
        if not per:
            sys.exit(f"no code of {binary} in {profiles} (a profile of another build?)")
        for name, _ in sorted(per.items(), key=lambda kv: (-kv[1], kv[0])):
            print(name)
    elif len(argv) == 1:
        cost = executed(argv[0])
        lines = {(o, a >> 6) for o, a in cost}
        pages = {(o, a >> 12) for o, a in cost}
        print(len(lines), len(pages))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
