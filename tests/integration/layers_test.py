"""The code's rooms and their layers, as docs/architecture.md's map draws them.

A room is a folder of the server (server/X/, and server/'s own files), or one of the other top
folders (wire/, storage/, consensus/, recipes/) with everything under it. The map's table
("## Modules") lists the rooms as layers, the lowest first: a file may include its own room's
headers and those of rooms in rows before its own, never those of a room in a later row. So the map
is the layer order, an include that runs upward fails here naming the file and line, and a room
the map does not name (or a row naming a folder that is gone) fails too. Files over 800 lines
say at their top why they are one file ("One file: ...").

The checker is first run on a made-up tree with an upward include, a room missing from the map
and a long file without its reason, and must find each: a checker that finds nothing fails."""
import os
import re

import support

c = support.Checks("layers")
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
TOPS = ("wire", "storage", "consensus", "recipes", "server")
LONG = 800


def room_of(path):
    """The room of a file's path relative to the root ("server/state/txn.hpp" -> "server/state/")."""
    parts = path.split("/")
    if parts[0] not in TOPS:
        return None
    if parts[0] == "server" and len(parts) > 2:
        return f"server/{parts[1]}/"
    return parts[0] + "/"


def map_rows(architecture):
    """The first column of the map's table, in order: each row's folder."""
    section = architecture.split("## Modules", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([a-z_/]+/)` \|", section, re.M)


def problems(files, rows):
    """files: {relative path: text}. rows: the map's folders, bottom first. Returns the problems."""
    out = []
    order = {}
    for i, row in enumerate(rows):
        room = room_of(row + "x")
        if room is not None:
            order.setdefault(room, i)
    rooms = {room_of(p) for p in files if room_of(p)}
    for room in sorted(rooms - set(order)):
        out.append(f"the map names no row for {room}")
    for row in rows:
        if row.split("/")[0] in TOPS and not any(p.startswith(row) for p in files):
            out.append(f"the map's row {row} names no file")
    for path, text in sorted(files.items()):
        src = room_of(path)
        if src is None or src not in order:
            continue
        for n, line in enumerate(text.split("\n"), 1):
            m = re.match(r'#include "([^"]+)"', line)
            if not m:
                continue
            dst = room_of(m.group(1))
            if dst is None or dst == src or dst not in order:
                continue
            if order[dst] > order[src]:
                out.append(f"{path}:{n} includes {m.group(1)}: {dst} is in a later row of the map than {src}")
        lines = text.count("\n")
        if lines > LONG and "One file:" not in "\n".join(text.split("\n")[:20]):
            out.append(f"{path} has {lines} lines and does not say at its top why it is one file")
    return out


# The checker on a made-up tree: each fault found, and a sound tree passes.
made_up_rows = ["wire/", "server/state/", "server/pipeline/"]
sound = {"wire/a.hpp": "", "server/state/t.hpp": '#include "wire/a.hpp"\n',
         "server/pipeline/p.cpp": '#include "server/state/t.hpp"\n#include "server/pipeline/q.hpp"\n'}
c.equal(problems(sound, made_up_rows), [], "a sound made-up tree passes")
upward = dict(sound, **{"server/state/u.cpp": 'x\n#include "server/pipeline/p.hpp"\n'})
found = problems(upward, made_up_rows)
c.check(any("server/state/u.cpp:2 includes server/pipeline/p.hpp" in p for p in found),
        f"an upward include is found with its file and line ({found})")
unmapped = dict(sound, **{"server/node/n.cpp": "", "storage/s.cpp": ""})
found = problems(unmapped, made_up_rows)
c.check(any("server/node/" in p for p in found) and any("storage/" in p for p in found),
        f"rooms missing from the map are found ({found})")
found = problems(sound, made_up_rows + ["server/gone/"])
c.check(any("server/gone/" in p for p in found), f"a row naming no file is found ({found})")
long_file = dict(sound, **{"server/state/big.cpp": "x\n" * (LONG + 5)})
found = problems(long_file, made_up_rows)
c.check(any("big.cpp" in p for p in found), f"a long file without its reason is found ({found})")
reasoned = dict(sound, **{"server/state/big.cpp": "// One file: because.\n" + "x\n" * (LONG + 5)})
c.equal(problems(reasoned, made_up_rows), [], "a long file that says why passes")
garbage = dict(sound, **{"server/state/g.cpp": '#include "\x00\xff"\n#include ""\n#include "../../etc/passwd"\n'})
c.equal(problems(garbage, made_up_rows), [], "garbage includes are not rooms")

# The real tree.
files = {}
for top in TOPS:
    for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
        for name in names:
            if name.endswith((".cpp", ".hpp", ".h", ".c")):
                full = os.path.join(dirpath, name)
                files[os.path.relpath(full, ROOT)] = open(full, errors="replace").read()
c.check(len(files) > 150, f"the tree's sources were read ({len(files)})")
rows = map_rows(open(os.path.join(ROOT, "docs", "architecture.md")).read())
c.check(len(rows) >= 15, f"the map's rows were read ({rows})")
for p in problems(files, rows):
    c.check(False, p)
c.finish()
