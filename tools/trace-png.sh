#!/bin/sh
# Draws a simulator timeline (Chrome trace-event JSON, GCAP_SIM_TRACE or gcap_sim_options.trace)
# as a PNG with gnuplot: one row per stream, one bar per executed node or stream operation.
#   sh tools/trace-png.sh trace.json timeline.png [first_us last_us]
set -e
in=${1:?usage: trace-png.sh trace.json out.png [first_us last_us]}
out=${2:?usage: trace-png.sh trace.json out.png [first_us last_us]}
# Drawing needs more than building does: say what is missing before doing any work.
missing=""
command -v python3 >/dev/null 2>&1 || missing="$missing python3"
command -v gnuplot >/dev/null 2>&1 || missing="$missing gnuplot-nox"
if [ -n "$missing" ]; then
  echo "trace-png.sh: missing (Debian packages):$missing; as root, run: apt-get install -y$missing" >&2
  exit 1
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 - "$in" "$dir" "${3:-}" "${4:-}" <<'PY'
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
lo = float(sys.argv[3]) if sys.argv[3] else None
hi = float(sys.argv[4]) if sys.argv[4] else None
names = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M"}
bars = [e for e in events if e.get("ph") == "X"
        and (lo is None or e["ts"] >= lo) and (hi is None or e["ts"] <= hi)]
rows = sorted({e["tid"] for e in bars})
span = max((e["ts"] + e["dur"] for e in bars), default=1) - min((e["ts"] for e in bars), default=0)
files = {c: open(f"{sys.argv[2]}/{c}.dat", "w") for c in ("graph", "stream")}
with open(sys.argv[2] + "/labels.dat", "w") as labels:
    for e in bars:
        y = rows.index(e["tid"])
        files["graph" if e.get("cat") == "graph" else "stream"].write(
            f'{e["ts"]} {e["ts"] + max(e["dur"], span / 400)} {y - 0.35} {y + 0.35}\n')
        if e["dur"] > span / 25:
            labels.write(f'{e["ts"] + e["dur"] / 2} {y} "{e["name"]}"\n')
for f in files.values():
    f.write("nan nan nan nan\n")
    f.close()
with open(sys.argv[2] + "/rows.gp", "w") as f:
    tics = ", ".join(f'"{names.get(t, "stream %d" % t)}" {i}' for i, t in enumerate(rows))
    f.write(f"set ytics ({tics})\nset yrange [-0.6:{len(rows) - 0.4}]\n")
PY
gnuplot <<GP
set terminal pngcairo size 1000,360 font "sans,10"
set output '$out'
load '$dir/rows.gp'
set xlabel 'time since the context was created (µs)'
set title 'simulator timeline: graph nodes (blue) and stream work (orange)'
set style fill solid 0.8 border lc rgb '#333333'
set grid x
plot '$dir/graph.dat' using 1:3:1:2:3:4 with boxxyerror lc rgb '#4a7ebb' notitle, \
     '$dir/stream.dat' using 1:3:1:2:3:4 with boxxyerror lc rgb '#e8913a' notitle, \
     '$dir/labels.dat' using 1:2:3 with labels font "sans,9" notitle
GP
echo "wrote $out"
