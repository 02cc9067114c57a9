"""docs/operations.md lists every zoo.cfg key Warden reads: the keys are taken from the parser's
table itself (server/config/keys.cpp, each `{"key", ...}` line; the ssl.* names of
server/config/tls_settings.cpp, the warden.log.* names of server/base/logging.cpp), so a key added
without its line in the docs fails here. A `zookeeper.`-prefixed spelling counts as its plain
key. Where the docs give a key its own row, its Warden default is the one the server reports
(`warden-server config-keys`, read from Config's initialisers): the docs cannot drift from the
code's number.

The README stays a newcomer's page (the two commands, connecting, an ensemble, the client and
command line, then pointers), every relative link of the README and docs/ names a file that
exists, and operations.md covers what an operator looks for there."""
import glob
import os
import re
import subprocess

import support

c = support.Checks("docs")
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def source(path):
    return open(os.path.join(ROOT, path)).read()


doc = source("docs/operations.md")
table = re.findall(r'^\s+\{"([^"]+)", ', source("server/config/keys.cpp"), re.M)
keys = {k for k in table if not k.endswith(".")}  # the prefixes' keys are named below
c.check(len(keys) > 40, f"the parser's keys were found ({len(keys)})")
tls_names = set(re.findall(r'\bk == "([^"]+)"', source("server/config/tls_settings.cpp")))
c.check(len(tls_names) >= 8, f"the TLS keys were found ({sorted(tls_names)})")
keys |= {"ssl." + n for n in tls_names}
log_names = set(re.findall(r'name == "([^"]+)"', source("server/base/logging.cpp")))
c.check(log_names >= {"level", "file", "format"}, f"the log keys were found ({sorted(log_names)})")
keys |= {"warden.log." + n for n in log_names}
for key in sorted(keys):
    # `ssl.keyStore.password` may be listed as `ssl.keyStore.location`, `.password`, `.type`.
    head, _, tail = key.rpartition(".")
    listed = f"`{key}`" in doc or (head and f"`{head}." in doc and f"`.{tail}`" in doc)
    c.check(listed, f"docs/operations.md lists {key}")


# Warden's default in the docs is the server's own, for each key with a row of its own.
reference = subprocess.run([os.environ["WARDEN_SERVER"], "config-keys"], capture_output=True, text=True, timeout=60)
c.equal(reference.returncode, 0, "warden-server config-keys runs")
rows = re.findall(r"^\| `([^`]+)`[^|]* \| ([^|]*) \|", reference.stdout, re.M)
c.check(len(rows) == len(table), f"config-keys prints a row for each of the table's {len(table)} keys ({len(rows)})")
doc_rows = dict(re.findall(r"^\| `([^`]+)` \| ([^|]*) \|", doc, re.M))
compared = 0
for key, default in rows:
    default = default.strip().strip("`")
    if default in ("-", "") or key not in doc_rows:
        continue
    said = doc_rows[key].strip().split(" ")[0].rstrip(",:")
    c.equal(said, default, f"docs/operations.md gives {key} Warden's default, {default}")
    compared += 1
c.check(compared >= 40, f"the docs' defaults were compared with the server's ({compared})")
extra = subprocess.run([os.environ["WARDEN_SERVER"], "config-keys", "garbage\x1b"], capture_output=True, text=True,
                       timeout=60)
c.check(extra.returncode != 0 and "config-keys takes no argument" in extra.stderr,
        f"config-keys with an argument is refused ({extra.returncode}, {extra.stderr.strip()!r})")

readme = source("README.md")
sections = re.findall(r"^## (.+)$", readme, re.M)
c.equal(sections, ["Set-up (fresh Debian 12)", "Connecting", "An ensemble",
                   "The C++ client library and the `warden` command line", "Read on"], "the README's sections")
c.check(len(readme.splitlines()) <= 120, f"the README is short ({len(readme.splitlines())} lines)")
c.check("scripts/run " in readme and "scripts/test " in readme, "the README's two commands")
docs = ["README.md", "CHANGELOG.md"] + [os.path.join("docs", f) for f in os.listdir(os.path.join(ROOT, "docs"))
                                         if f.endswith(".md")]
for path in docs:
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", source(path)):
        resolved = os.path.normpath(os.path.join(ROOT, os.path.dirname(path), target))
        c.check(os.path.exists(resolved), f"{path}: the link to {target} names a file")
# A source file or folder the docs name in backticks exists (the map and the write path name files
# by path: a move without its doc fails here). `name.*` and a name without its extension match
# any file so named.
named = 0
for path in docs + ["consensus/README.md"]:
    for target in re.findall(r"`((?:server|consensus|storage|wire|recipes|tests|scripts)/[A-Za-z0-9_./-]*)`",
                             source(path)):
        base = os.path.join(ROOT, target.rstrip("*").rstrip("."))
        c.check(os.path.exists(base) or bool(glob.glob(base + ".*")), f"{path}: `{target}` names a file or folder")
        named += 1
c.check(named >= 50, f"the docs' source paths were found ({named})")
for doc_name in ("operations.md", "security.md", "features.md", "benchmarks.md", "architecture.md", "client.md",
                 "testing.md"):
    c.check(f"(docs/{doc_name})" in readme, f"the README points to docs/{doc_name}")
for title in ("## Ports", "## Logs", "## Installing as a service", "## Backups and restores", "## Upgrades",
              "### The AdminServer", "### Prometheus metrics"):
    c.check(title in doc, f"docs/operations.md has {title!r}")
c.finish()
