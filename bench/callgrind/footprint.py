#!/usr/bin/env python3
"""The code a callgrind profile (recorded with --dump-instr=yes --compress-pos=no) executed.

usage: footprint.py PROFILE [N]             prints "LINES PAGES": the distinct 64-byte lines and
                                            4 KiB pages of machine code executed, every object
                                            (the binary and the shared libraries) together; with
                                            N (the requests the profile counted) also "EVERY
                                            EVERY_PAGES": the lines and pages some instruction of
                                            which ran at least N times, i.e. on every request
       footprint.py --by-symbol N PROFILE [BASE]  the lines run on every request, per symbol
                                            (most first), beside those of a BASE profile of N
                                            requests too (e.g. the floor's), and the totals
       footprint.py --by-file N PROFILE [BASE]  the same per source file: the innermost file each
                                            line's most run instruction was written in (an
                                            inlined function's own file), paths shortened
       footprint.py --order BINARY PROFILE...  prints BINARY's own symbols that the profiles
                                            executed, the most instructions first: a symbol
                                            ordering file for lld (-Wl,--symbol-ordering-file)

Every request of a benchmark case takes the same path, so a profile of N requests of one case
executes one request's code: its footprint. A core that idles between requests (c=1) finds
little of it still cached or mapped in its TLBs, and pays per line and per page touched.

All lines executed include work that does not run per request (the HTTP date renewed once a
second, the accept loop, timers): N separates it out. A line counts as run on every request
when its most executed instruction ran at least N times.
"""
import bisect
import re
import subprocess
import sys
from collections import Counter

OBJ = re.compile(r"c?ob=\((\d+)\)(?: (.*))?")


FILE = re.compile(r"(fl|fi|fe)=\((\d+)\)(?: (.*))?")
NAMED = re.compile(r"c(?:fl|fi)=\((\d+)\) (.*)")


def read_profile(path):
    """One pass over a profile: (object, address) -> instructions, for every instruction it
    executed, and (object, address) -> the source file the instruction came from (inlined
    code by the file it was inlined from, callgrind's fi=/fe= records; else its function's,
    fl=)."""
    objs, files, obj, fl, inlined = {}, {}, None, None, None
    cost, where = Counter(), {}
    with open(path) as f:
        for line in f:
            if line.startswith(("ob=", "cob=")):
                m = OBJ.match(line.strip())
                if m.group(2):
                    objs[m.group(1)] = m.group(2)
                if line.startswith("ob="):
                    obj = objs.get(m.group(1))
            elif line.startswith(("fl=", "fi=", "fe=")):
                m = FILE.match(line.strip())
                if m.group(3):
                    files[m.group(2)] = m.group(3)
                name = files.get(m.group(2))
                if m.group(1) == "fl":
                    fl, inlined = name, None
                else:
                    inlined = None if name == fl else name
            elif line.startswith(("cfl=", "cfi=")):
                # A callee's file, named here first: only its name is recorded.
                m = NAMED.match(line.strip())
                if m:
                    files[m.group(1)] = m.group(2)
            elif line.startswith("fn="):
                inlined = None
            elif line.startswith("0x"):
                fields = line.split()
                key = (obj, int(fields[0], 16))
                # A cost line is "address line instructions"; a call's cost line repeats the
                # call site's address, which executed too.
                cost[key] += int(fields[-1]) if len(fields) > 2 else 0
                where.setdefault(key, inlined or fl or "?")
    return cost, where


def executed(path):
    """(object, address) -> instructions, for every instruction the profile executed."""
    return read_profile(path)[0]


def short_path(path):
    """A source path without the registry's, the toolchain's or the checkout's prefix."""
    path = re.sub(r".*/registry/src/[^/]+/", "", path)
    path = re.sub(r".*/rustc/[0-9a-f]+/library/", "std: ", path)
    return re.sub(r"^.*?/(mcp-runtime|mcp-types|mcp-macros|bench|notes-example)/", r"\1/", path)


def per_file(path, n):
    """Lines run on every request, counted per source file (see read_profile): each line under
    the file of its most run instruction."""
    cost, where = read_profile(path)
    per = Counter()
    for addr in hottest(cost, n).values():
        per[short_path(where.get(addr, "?"))] += 1
    return per


def symbols(binary, demangle=False):
    """The binary's code symbols, by address."""
    out = subprocess.run(
        ["nm", "-n", "--defined-only"] + (["-C"] if demangle else []) + [binary],
        capture_output=True, text=True, check=True,
    ).stdout
    syms = []
    for line in out.splitlines():
        parts = line.split(maxsplit=2)
        if len(parts) == 3 and parts[1] in "tTwW":
            syms.append((int(parts[0], 16), parts[2]))
    return syms


def hottest(cost, n):
    """(object, line) -> the (object, address) of its most run instruction, for the lines some
    instruction of which ran at least n times (the last such address on a tie)."""
    top = {}
    for (obj, addr), ir in cost.items():
        key = (obj, addr >> 6)
        if ir >= top.get(key, (-1, None))[0]:
            top[key] = (ir, (obj, addr))
    return {k: at for k, (ir, at) in top.items() if ir >= n}


def every_request(cost, n):
    """The (object, line) pairs some instruction of which ran at least n times."""
    return set(hottest(cost, n))


def per_symbol(path, n):
    """Lines run on every request, counted per symbol (demangled; other objects by name)."""
    cache = {}
    per = Counter()
    for obj, line in every_request(executed(path), n):
        if obj not in cache:
            try:
                syms = symbols(obj, demangle=True)
            except (subprocess.CalledProcessError, FileNotFoundError, TypeError):
                syms = []
            cache[obj] = (syms, [a for a, _ in syms])
        syms, starts = cache[obj]
        i = bisect.bisect_right(starts, line << 6) - 1
        per[syms[i][1] if i >= 0 else str(obj)] += 1
    return per


def main(argv):
    if len(argv) >= 3 and argv[0] in ("--by-symbol", "--by-file"):
        n = int(argv[1])
        count = per_symbol if argv[0] == "--by-symbol" else per_file
        case = count(argv[2], n)
        base = count(argv[3], n) if len(argv) > 3 else Counter()
        for name in sorted(set(case) | set(base), key=lambda k: (base[k] - case[k], k)):
            print(f"{case[name]:6d} {base[name]:6d} {case[name] - base[name]:+6d}  {name}")
        print(f"{sum(case.values()):6d} {sum(base.values()):6d}  lines run on every request")
    elif len(argv) >= 3 and argv[0] == "--order":
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
    elif len(argv) in (1, 2):
        cost = executed(argv[0])
        lines = {(o, a >> 6) for o, a in cost}
        pages = {(o, a >> 12) for o, a in cost}
        if len(argv) == 1:
            print(len(lines), len(pages))
        else:
            every = every_request(cost, int(argv[1]))
            print(len(lines), len(pages), len(every), len({(o, l >> 6) for o, l in every}))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
