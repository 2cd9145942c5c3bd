#!/usr/bin/env python3
"""The newcomer's walk (#48): every command block of README.md and docs/*.md, run as written.

    python3 benches/docs-walk.py [--list] [--only TEXT] [--timeout SECONDS]

A command block is a fenced block (no language, or sh/bash/shell) whose first command line
starts with a command (cargo, vload, target/release/vload, vcl/run.sh, servers/run.sh, ...),
not with output (`vload:`, `$ `, a table). Each file's blocks run in order in one scratch
directory that links the repository's top-level entries (so `vcl/run.sh`,
`target/release/vload` and files an earlier block wrote are there, as in a newcomer's shell),
each block with `bash -e` (a list of commands whose exit codes are what it shows, such as
`history check`'s, without `-e`, judged by its last), in a process group of its own that is ended afterwards (a server
a block starts with `&` goes with it). Blocks that need what this machine cannot be (your
own generators, an install into ~/.cargo) are listed with the reason and not run. A block
that names a server the docs leave to the reader gets one: Varnish on 127.0.0.1:6081
(vcl/run.sh, hello.vcl; the block's own vcl/run.sh then takes a free port), vload's origin
on 127.0.0.1:8080.

Prints a table: block, exit code, seconds, the last line of its output; exits 1 when a
block failed. Takes about 20 minutes as written (the docs' loops run 4 rounds of 25 s).
Needs what `.ci/run` installs (varnish, caddy, haproxy, nginx, ansible, chromium); run as
root for the namespace lab of docs/distributed.md.
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOP = Path(__file__).resolve().parent.parent
COMMANDS = (
    "cargo ", "vload ", "target/release/vload", "vcl/run.sh", "servers/run.sh", "VARNISH",
    "ORIGIN_ARGS=", "for ", "python3 ", "mkdir ", "cp ", "sudo ", "hosts=", "at=",
    "chromium ", "deploy/", "PATH=", "seq ", "NGINX_", "EDGE_MALLOC=", "vcl/run-tiers.sh", "EDGE=",
)
# Blocks that cannot run here as written, by a line they contain: why.
SKIP = {
    "cargo install --locked --path crates/cli": "installs into ~/.cargo/bin (the build tree is walked instead)",
    'ssh "${hosts[$i]}"': "your own generators (gen1..gen4) over ssh",
    "pdsh -w gen[1-4]": "your own generators (gen1..gen4) over pdsh",
    "vload report -o a.json a-shard-*.json": "the shards of your own generators",
    "cp deploy/ansible/inventory.example.yml": "your own generators' inventory (the namespace lab below runs instead)",
    "vload history add runs/*.json": "your own runs/ directory",
    "vload compare   A = varnish": "output, not a command",
}
# Blocks that run here as written but end as the docs say they must on one machine, by a
# line they contain: (exit code, why). Counted as walked, with the reason.
EXPECTED = {
    "# gather the files on one machine, then:": (
        2, "the runs of the other architecture are missing here: compare says it needs two labels"),
}


def blocks(path: Path):
    """(line, text) of each command block of `path`."""
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^```(\w*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        lang, start, body = m.group(1), i + 1, []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        i += 1
        if lang not in ("", "sh", "bash", "shell"):
            continue
        first = next((l.strip() for l in body if l.strip() and not l.strip().startswith("#")), "")
        if first.startswith(COMMANDS):
            yield start + 1, "\n".join(body)


def scratch() -> Path:
    """A directory with the repository's top-level entries linked in."""
    d = Path(tempfile.mkdtemp(prefix="vload-walk-"))
    for entry in TOP.iterdir():
        if entry.name not in (".git",):
            (d / entry.name).symlink_to(entry)
    return d


# A server started in the foreground (`vload origin ...` with no `&`): the reader starts it,
# sees it listen and stops it with Ctrl-C; the walk gives it 3 s, then SIGINT.
FOREGROUND = re.compile(r"^\s*((target/release/)?vload origin\b[^&#]*?)\s*(#.*)?$", re.M)


def foreground_servers(text: str) -> str:
    """`text` with each foreground server line run for 3 s, ended as Ctrl-C ends it, and
    judged by its exit: 124 is timeout's word that it was still serving when stopped."""
    return FOREGROUND.sub(
        lambda m: f"{{ timeout -s INT 3 {m.group(1)} && rc=0 || rc=$?; [ $rc = 0 ] || [ $rc = 124 ]; }}",
        text)


# Blocks that list commands whose exit codes are part of what they show (`history check`'s
# 1 and 2), by a line they contain: run without `-e`, judged by the last command.
LISTS = ("vload history check --fail-if-regressed 5%",)


def setting(text: str):
    """The command running `text`, with the servers the docs assume beside it: a block that
    names Varnish's own port (127.0.0.1:6081, "your cache") without starting one gets
    Varnish there (vcl/run.sh, hello.vcl), its own vcl/run.sh calls then taking free ports;
    one that names 127.0.0.1:8080 gets the origin there."""
    command = foreground_servers(text)
    if "127.0.0.1:8080" in text:
        command = "vload origin --listen 127.0.0.1:8080 >/dev/null & sleep 0.5\n" + command
    bash = ["bash", "-c"] if any(k in text for k in LISTS) else ["bash", "-e", "-c"]
    if "127.0.0.1:6081" in text:
        inner = "export VARNISH_LISTEN=127.0.0.1:0\n" + command
        return ["vcl/run.sh", "vcl/hello.vcl", *bash, inner]
    return [*bash, command]


def run(text: str, cwd: Path, log: Path, timeout: float):
    """Runs a block, its output into `log` (a file, not a pipe: a server the block left in
    the background would hold a pipe open); its exit code (or "timeout") and seconds."""
    began = time.monotonic()
    path = f"{TOP / 'target/release'}:{os.environ['PATH']}"
    if os.geteuid() == 0 and not shutil.which("sudo"):
        # Root needs no sudo, and a minimal system has none: `sudo VAR=x cmd` is `env`'s.
        shim = cwd / ".walk-bin"
        shim.mkdir(exist_ok=True)
        (shim / "sudo").write_text('#!/bin/sh\nexec env "$@"\n')
        (shim / "sudo").chmod(0o755)
        path = f"{shim}:{path}"
    env = dict(os.environ, PATH=path)
    with open(log, "w") as out:
        p = subprocess.Popen(setting(text), cwd=cwd, env=env, start_new_session=True,
                             stdout=out, stderr=subprocess.STDOUT)
        try:
            code = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = "timeout"
    try:
        os.killpg(p.pid, signal.SIGTERM)  # the block, or what it left in the background
    except ProcessLookupError:
        pass
    p.wait()
    return code, time.monotonic() - began


def main():
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a.add_argument("--list", action="store_true", help="list the blocks, run nothing")
    a.add_argument("--only", help="run only blocks whose file:line or text contains this")
    a.add_argument("--timeout", type=float, default=900, help="seconds a block (900)")
    a.add_argument("--skip", action="append", default=[],
                   help="skip the block FILE:LINE, or blocks whose text contains this (repeatable)")
    args = a.parse_args()
    files = [TOP / "README.md"] + sorted((TOP / "docs").glob("*.md"))
    failed, rows = 0, []
    for f in files:
        cwd = None
        for line, text in blocks(f):
            name = f"{f.relative_to(TOP)}:{line}"
            if args.only and args.only not in name and args.only not in text:
                continue
            why = next((w for k, w in SKIP.items() if k in text), None)
            if any(k == name or k in text for k in args.skip):
                why = "skipped as asked (--skip)"
            if args.list or why:
                rows.append((name, "skip" if why else "-", "", why or text.splitlines()[0][:70]))
                continue
            cwd = cwd or scratch()
            log = cwd / f"walk-{line}.log"
            code, took = run(text, cwd, log, args.timeout)
            last = (log.read_text(errors="replace").strip().splitlines() or [""])[-1][:90]
            expected = next((e for k, e in EXPECTED.items() if k in text), (0, ""))
            ok = code == expected[0]
            rows.append((name, str(code), f"{took:.0f}", expected[1] if ok else last))
            failed += not ok
            print(f"{name}: exit {code} in {took:.0f} s", file=sys.stderr, flush=True)
        if cwd:
            print(f"{f.relative_to(TOP)}: logs in {cwd}", file=sys.stderr)
    print("| block | exit | s | note |\n| --- | --- | ---: | --- |")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
