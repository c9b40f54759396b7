#!/bin/sh
# ns/node against N for each phase, from bench_gcap's JSON lines:
#   build/bench/bench_gcap > bench.json && sh bench/plot.sh bench.json docs/images/performance.png
set -e
in=${1:?usage: plot.sh bench.json out.png}
out=${2:?usage: plot.sh bench.json out.png}
# Plotting needs more than building does: say what is missing before doing any work.
missing=""
command -v python3 >/dev/null 2>&1 || missing="$missing python3"
command -v gnuplot >/dev/null 2>&1 || missing="$missing gnuplot-nox"
if [ -n "$missing" ]; then
  echo "plot.sh: missing (Debian packages):$missing; as root, run: apt-get install -y$missing" >&2
  exit 1
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 - "$in" "$dir" <<'PY'
import json, sys
series = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    m, shape = r.get("metric"), r.get("shape")
    name = {"record": "record", "instantiate": "instantiate", "replay_fills": "replay of fills", "add": "explicit add",
            "destroy": "destroy", "races": "race analysis", "peer_build": "build", "peer_run": "run"}.get(m)
    if not name or r.get("unit") != "ns/node":
        continue
    if m.startswith("peer_"):  # gcap's own figure and the peer's, measured side by side
        series.setdefault(f"gcap {name}, fills ({shape})", []).append((r["n"], r["value"]))
        series.setdefault(f"{r['baseline']} {name} ({shape})", []).append((r["n"], r["baseline_value"]))
    else:
        series.setdefault(f"{name} ({shape})", []).append((r["n"], r["value"]))
for i, (name, points) in enumerate(sorted(series.items())):
    with open(f"{sys.argv[2]}/{i}.dat", "w") as f:
        f.write(f"# {name}\n")
        for n, v in sorted(points): f.write(f"{n} {v}\n")
    open(f"{sys.argv[2]}/{i}.name", "w").write(name)
PY
plots=""
for dat in "$dir"/*.dat; do
  name=$(cat "${dat%.dat}.name")
  plots="$plots${plots:+, }'$dat' using 1:2 with linespoints title '$name'"
done
gnuplot <<GP
set terminal pngcairo size 1100,640 font "sans,11"
set output '$out'
set logscale xy
set xrange [700:1.4e6]
set format x '10^{%L}'
set xlabel 'nodes in the graph (N)'
set ylabel 'ns per node'
set title 'gcap on the simulator: cost per node by phase'
set grid
set key outside right
plot $plots
GP
echo "wrote $out"
