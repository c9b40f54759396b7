"""Pictures for notebooks: a graph as SVG (Graphviz's when `dot` is on PATH, else a layered drawing of
its own), and the simulator's timeline as one row of bars per stream."""
import html
import json
import shutil
import subprocess

COLOURS = {"kernel": "#a6cee3", "memcpy": "#b2df8a", "memset": "#fdbf6f", "host": "#fb9a99", "graph": "#cab2d6",
           "event_record": "#ffff99", "event_wait": "#ffff99", "mem_alloc": "#d9d9d9", "mem_free": "#d9d9d9",
           "conditional": "#ff7f00", "empty": "#ffffff"}


def graph_svg(graph):
    dot = shutil.which("dot")
    if dot:
        try:
            out = subprocess.run([dot, "-Tsvg"], input=graph.to_dot().encode(), capture_output=True, timeout=30)
            if out.returncode == 0:
                return out.stdout.decode()
        except (OSError, subprocess.SubprocessError):
            pass
    return _layered_svg(graph)


def _layered_svg(graph):
    """Each node in the column of its longest path from a root, in creation order within a column."""
    nodes = graph.nodes
    index = {n: i for i, n in enumerate(nodes)}
    deps = [[index[d] for d in n.dependencies] for n in nodes]
    depth = [0] * len(nodes)
    for i in range(len(nodes)):  # creation order is not topological in general: relax until stable
        for _ in range(len(nodes)):
            new = max([depth[d] + 1 for d in deps[i]], default=0)
            if new == depth[i]:
                break
            depth[i] = new
    for _ in range(len(nodes)):
        changed = False
        for i in range(len(nodes)):
            new = max([depth[d] + 1 for d in deps[i]], default=0)
            if new != depth[i]:
                depth[i], changed = new, True
        if not changed:
            break
    rows = {}
    pos = []
    for i in range(len(nodes)):
        r = rows.get(depth[i], 0)
        rows[depth[i]] = r + 1
        pos.append((20 + 150 * r, 20 + 70 * depth[i]))
    width = 150 * max(rows.values(), default=1) + 20
    height = 70 * (max(depth, default=0) + 1) + 20
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="Helvetica" font-size="12">'
           % (width, height),
           '<defs><marker id="a" markerWidth="8" markerHeight="8" refX="8" refY="4" orient="auto">'
           '<path d="M0,0 L8,4 L0,8 z"/></marker></defs>']
    for i, ds in enumerate(deps):
        for d in ds:
            x1, y1 = pos[d][0] + 60, pos[d][1] + 36
            x2, y2 = pos[i][0] + 60, pos[i][1]
            out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black" marker-end="url(#a)"/>' % (x1, y1, x2, y2))
    for i, n in enumerate(nodes):
        x, y = pos[i]
        t = n.type
        out.append('<rect x="%d" y="%d" width="120" height="36" rx="4" fill="%s" stroke="black"/>'
                   % (x, y, COLOURS.get(t, "#ffffff")))
        out.append('<text x="%d" y="%d" text-anchor="middle">%s</text>' % (x + 60, y + 22, html.escape("%d: %s" % (i, t))))
    out.append("</svg>")
    return "\n".join(out)


class Trace:
    """The simulator's timeline: `events` (name, stream, start and duration in microseconds), shown as bars."""

    def __init__(self, path):
        with open(path) as f:
            text = f.read().rstrip()
        if not text.endswith("}"):
            text = text.rstrip(",") + "\n]}"
        elif not text.endswith("]}"):
            text += "]}"
        try:
            doc = json.loads(text)
        except ValueError:
            doc = json.loads(text[:-2] + "]}") if text.endswith("]}]}") else {"traceEvents": []}
        self.streams = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"] if e.get("name") == "thread_name"}
        self.events = [(e["name"], e["tid"], e["ts"], e["dur"]) for e in doc["traceEvents"] if e.get("ph") == "X"]

    def __repr__(self):
        return "<gcap.Trace: %d events on %d streams>" % (len(self.events), len({e[1] for e in self.events}))

    def _repr_svg_(self):
        if not self.events:
            return None
        tids = sorted({e[1] for e in self.events})
        start = min(e[2] for e in self.events)
        end = max(e[2] + e[3] for e in self.events)
        scale = 800.0 / max(end - start, 1e-9)
        out = ['<svg xmlns="http://www.w3.org/2000/svg" width="960" height="%d" font-family="Helvetica" font-size="11">'
               % (30 * len(tids) + 30)]
        for row, tid in enumerate(tids):
            y = 10 + 30 * row
            out.append('<text x="4" y="%d">%s</text>' % (y + 14, html.escape(self.streams.get(tid, "stream %d" % tid))))
            for name, t, ts, dur in self.events:
                if t != tid:
                    continue
                kind = name.split()[0] if name else "empty"
                out.append('<rect x="%.1f" y="%d" width="%.1f" height="20" fill="%s" stroke="black"><title>%s</title></rect>'
                           % (140 + (ts - start) * scale, y, max(dur * scale, 1.0), COLOURS.get(kind, "#cccccc"),
                              html.escape(name)))
        out.append('<text x="140" y="%d">%.1f us</text></svg>' % (30 * len(tids) + 24, end - start))
        return "\n".join(out)
