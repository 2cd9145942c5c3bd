#!/usr/bin/env bash
# Every peer table of BENCHMARKS.md in one go, on this host, each with the host and tool
# versions above it (about 15 minutes on 2 cores, 892 s on host B, plus installing missing peers once):
#   1. closed loop, 50 connections, every peer, nginx and vload-origin   (run.sh)
#   2. closed loop against wrk at 10, 50, 1,000 and 10,000 connections   (scaling.sh)
#   3. open loop against vegeta at 20k, 60k and 100k/s                    (open-loop.sh)
#   4. HTTP/2 against h2load (h2c, TLS), HTTP/1.1 TLS against wrk         (protocols.sh)
#      and vload's two HTTP/2 clients beside h2load                       (h2-clients.sh)
#   5. memory against run length, open loop                              (memory.sh)
#   6. the floor: wrk and vload beside a minimal epoll and io_uring client (floor.sh;
#      skipped with a line saying why when gcc or liburing-dev is missing)
#   bash benches/peers/all.sh > tables.md
# Paste the output into BENCHMARKS.md under a heading naming the host: tables from several
# hosts side by side show the spread, not one lucky number.
set -euo pipefail
here=$(dirname "$0")
section() { echo; echo "### $1"; echo; echo '```'; echo "bash benches/peers/$2"; echo '```'; echo; }
started=$(date +%s)
section "Closed loop, 50 connections, every peer" "run.sh 3 5 50"
bash "$here/run.sh" 3 5 50
section "Closed loop against wrk, by connections (nginx)" "scaling.sh '10 50 1000 10000' 5 3"
bash "$here/scaling.sh" "10 50 1000 10000" 5 3
section "Open loop against vegeta (nginx)" "open-loop.sh '20000 60000 100000' 10 1000"
bash "$here/open-loop.sh" "20000 60000 100000" 10 1000
section "HTTP/2 against h2load, HTTP/1.1 TLS against wrk" "protocols.sh 3 5"
bash "$here/protocols.sh" 3 5
section "HTTP/2: vload's lean and hyper clients beside h2load" "h2-clients.sh 3 4"
bash "$here/h2-clients.sh" 3 4
section "Memory against run length (open loop)" "memory.sh 20000 10 60"
bash "$here/memory.sh" 20000 10 60
section "The floor: wrk and vload beside a minimal epoll and io_uring client (nginx)" "floor.sh '10 50 1000' 4 3"
bash "$here/floor.sh" "10 50 1000" 4 3 || echo "(floor.sh did not run: it needs gcc and liburing-dev, apt-get install -y gcc liburing-dev)"
echo
echo "all.sh: $(( $(date +%s) - started )) s"
