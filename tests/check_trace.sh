#!/bin/sh
# Runs a program with GCAP_SIM_TRACE set and checks that the timeline it leaves is JSON in
# Chrome's trace-event format: complete events with name, ts, dur, pid, tid, and node and
# launch numbers for graph nodes.   check_trace.sh PROGRAM WORKDIR
set -u
program=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") dir=$2
mkdir -p "$dir"
trace="$dir/trace.json"
rm -f "$trace"
(cd "$dir" && GCAP_SIM_TRACE="$trace" "$program" > /dev/null)
rc=$?
[ $rc -eq 77 ] && { echo "skipped: $program runs on another backend here"; exit 77; }
[ $rc -eq 0 ] || { echo "FAIL: $program exited $rc"; exit 1; }
python3 - "$trace" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
events = [e for e in doc["traceEvents"] if e["ph"] == "X"]
graph = [e for e in events if e["cat"] == "graph"]
stream = [e for e in events if e["cat"] == "stream"]
assert graph and stream, (len(graph), len(stream))
for e in events:
    assert {"name", "ts", "dur", "pid", "tid", "args"} <= e.keys(), e
    assert e["dur"] >= 0 and e["ts"] >= 0, e
for e in graph:
    assert e["args"]["launch"] >= 1 and e["args"]["node"] >= 0, e
launches = max(e["args"]["launch"] for e in graph)
ts = [e["ts"] for e in events]
assert ts == sorted(ts), "events are written as they finish, in time order"
names = {e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M"}
print(f"{len(events)} events ({len(graph)} graph nodes over {launches} launches, {len(stream)} stream ops); threads: {sorted(names)}")
PY
