/*
 * gcap-inspect: reads a graph saved with gcap_graph_save and prints a summary (nodes by type,
 * edges, depth, widest level) and the race report; writes DOT or SVG on request, with the
 * nodes of every reported race outlined in red and joined by a dashed red line.
 *
 *   gcap-inspect [--dot FILE] [--svg FILE] [--verbose] [--quiet] GRAPH.json
 *   gcap-inspect --help
 *
 * Exit status: 0 no races, 1 races found, 2 usage or load error, 3 --svg without Graphviz's dot
 * on PATH (checked before anything is read, printed or written). Kernels are taken from the
 * file's "kernels" table (name, parameter sizes and access declarations), so no module of the
 * program that saved the graph is needed; their CPU implementations are stubs.
 */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include <gcap/gcap.h>
#include <gcap/sim.h>

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Exit status of --svg when Graphviz's dot is not on PATH. */
#define EXIT_NO_DOT 3
#define NO_DOT_MESSAGE                                                                                                 \
  "gcap-inspect: --svg needs Graphviz's dot, which is not installed (Debian: apt-get install "                         \
  "graphviz); --dot writes the DOT text without it\n"

struct options {
  const char *input, *dot, *svg;
  bool verbose, quiet, help;
};

static void print_usage(FILE *out, const char *argv0) {
  fprintf(out, "usage: %s [--dot FILE] [--svg FILE] [--verbose] [--quiet] GRAPH.json\n", argv0);
}

static int usage_error(const char *argv0) {
  print_usage(stderr, argv0);
  fprintf(stderr, "Try '%s --help' for more information.\n", argv0);
  return 2;
}

static int help(const char *argv0) {
  print_usage(stdout, argv0);
  fputs("\n"
        "Reads a graph saved with gcap_graph_save, prints its shape (nodes by type, edges, depth,\n"
        "widest level) and the races the simulator's analysis finds in it.\n"
        "\n"
        "  --dot FILE   write the graph as Graphviz DOT, races marked in red\n"
        "  --svg FILE   write the graph as SVG, races marked in red (runs Graphviz's dot)\n"
        "  --verbose    node parameters in the DOT/SVG labels\n"
        "  --quiet      print the race count without the list\n"
        "  --help       print this text and exit\n"
        "\n"
        "Exit status: 0 no races, 1 races found, 2 usage or load error, 3 --svg without Graphviz's dot.\n",
        stdout);
  return 0;
}

static int parse_args(int argc, char **argv, struct options *o) {
  memset(o, 0, sizeof *o);
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--dot") == 0 && i + 1 < argc) o->dot = argv[++i];
    else if (strcmp(argv[i], "--svg") == 0 && i + 1 < argc) o->svg = argv[++i];
    else if (strcmp(argv[i], "--verbose") == 0) o->verbose = true;
    else if (strcmp(argv[i], "--quiet") == 0) o->quiet = true;
    else if (strcmp(argv[i], "--help") == 0) o->help = true;
    else if (argv[i][0] == '-' || o->input) return -1;
    else o->input = argv[i];
  }
  return o->input || o->help ? 0 : -1;
}

/* ------------------------------------------------------------- kernels from the file */

struct kernel_table {
  gcap_kernel_def *defs;
  size_t count;
  size_t **sizes;
  gcap_param_access **access;
};

static gcap_param_access access_named(const char *s) {
  if (!s) return GCAP_ACCESS_UNKNOWN;
  if (strcmp(s, "none") == 0) return GCAP_ACCESS_NONE;
  if (strcmp(s, "read") == 0) return GCAP_ACCESS_READ;
  if (strcmp(s, "write") == 0) return GCAP_ACCESS_WRITE;
  if (strcmp(s, "read_write") == 0) return GCAP_ACCESS_READ_WRITE;
  return GCAP_ACCESS_UNKNOWN;
}

static void kernel_table_free(struct kernel_table *t) {
  for (size_t i = 0; i < t->count; i++) {
    free((char *)t->defs[i].name);
    free(t->sizes[i]);
    free(t->access[i]);
  }
  free(t->defs);
  free(t->sizes);
  free(t->access);
}

/* One kernel entry; false when it is not the shape docs/format.md gives (the loader says why). */
static bool read_kernel(json_t *k, struct kernel_table *t, size_t i) {
  json_t *params = json_object_get(k, "param_sizes"), *access = json_object_get(k, "param_access");
  const char *name = json_string_value(json_object_get(k, "name"));
  if (!name || !json_is_array(params)) return false;
  size_t n = json_array_size(params);
  t->sizes[i] = calloc(n ? n : 1, sizeof **t->sizes);
  t->access[i] = calloc(n ? n : 1, sizeof **t->access);
  t->defs[i].name = strdup(name);
  if (!t->sizes[i] || !t->access[i] || !t->defs[i].name) return false;
  for (size_t p = 0; p < n; p++) {
    json_t *size = json_array_get(params, p);
    if (!json_is_integer(size) || json_integer_value(size) <= 0) return false;
    t->sizes[i][p] = (size_t)json_integer_value(size);
    t->access[i][p] = access_named(json_string_value(json_array_get(access, p)));
  }
  t->defs[i].num_params = n;
  t->defs[i].param_sizes = t->sizes[i];
  t->defs[i].param_access = t->access[i];
  return true;
}

/* The file's kernel table, read ahead of gcap_graph_load so that its kernels can be found. */
static int read_kernels(const char *path, struct kernel_table *t) {
  memset(t, 0, sizeof *t);
  json_error_t err;
  json_t *root = json_load_file(path, 0, &err);
  if (!root) return 0; /* the loader reports the error with its status */
  json_t *kernels = json_object_get(root, "kernels");
  size_t n = json_is_array(kernels) ? json_array_size(kernels) : 0;
  t->defs = calloc(n ? n : 1, sizeof *t->defs);
  t->sizes = calloc(n ? n : 1, sizeof *t->sizes);
  t->access = calloc(n ? n : 1, sizeof *t->access);
  int rc = t->defs && t->sizes && t->access ? 0 : -1;
  for (size_t i = 0; rc == 0 && i < n; i++) {
    t->count++; /* so that a half-read entry is freed too */
    if (!read_kernel(json_array_get(kernels, i), t, i)) rc = -1;
  }
  json_decref(root);
  if (rc != 0) fprintf(stderr, "gcap-inspect: %s: the \"kernels\" table is malformed\n", path);
  return rc;
}

/* ------------------------------------------------------------- node names */

struct named {
  const gcap_node *node;
  char path[64]; /* "3", or "1.0" for node 0 of the child graph in node 1 */
  size_t top;    /* index of the top-level node it is, or is inside of */
};

struct names {
  struct named *items;
  size_t count, cap;
};

static int name_inner_nodes(const gcap_node *n, const char *path, size_t top, struct names *out);

/* top: the top-level index of the child-graph node g belongs to; SIZE_MAX for the top level. */
static int name_nodes(const gcap_graph *g, const char *prefix, size_t top, struct names *out) {
  size_t n = 0;
  if (gcap_graph_get_nodes(g, NULL, &n) != GCAP_SUCCESS) return -1;
  gcap_node **nodes = calloc(n ? n : 1, sizeof *nodes);
  if (!nodes || gcap_graph_get_nodes(g, nodes, &n) != GCAP_SUCCESS) return free(nodes), -1;
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < n; i++) {
    if (out->count == out->cap) {
      size_t cap = out->cap ? 2 * out->cap : 64;
      struct named *grown = realloc(out->items, cap * sizeof *grown);
      if (!grown) {
        rc = -1;
        break;
      }
      out->items = grown, out->cap = cap;
    }
    struct named *e = &out->items[out->count++];
    e->node = nodes[i];
    e->top = top == SIZE_MAX ? i : top;
    snprintf(e->path, sizeof e->path, "%s%zu", prefix, i);
    rc = name_inner_nodes(nodes[i], e->path, e->top, out);
  }
  free(nodes);
  return rc;
}

/* The nodes of a child graph ("3.0") or of a conditional node's bodies ("3.b1.0"), named under n's path. */
static int name_inner_nodes(const gcap_node *n, const char *path, size_t top, struct names *out) {
  char inner[sizeof out->items->path + 8];
  gcap_graph *child = NULL;
  if (gcap_node_get_type(n) == GCAP_NODE_GRAPH && gcap_node_get_child_graph(n, &child) == GCAP_SUCCESS) {
    if (snprintf(inner, sizeof inner, "%s.", path) >= (int)sizeof inner) return -1;
    return name_nodes(child, inner, top, out);
  }
  gcap_conditional_node_params p = {0};
  if (gcap_node_get_type(n) != GCAP_NODE_CONDITIONAL || gcap_node_get_conditional_params(n, &p) != GCAP_SUCCESS)
    return 0;
  gcap_graph **bodies = calloc(p.size ? p.size : 1, sizeof *bodies);
  p.body_out = bodies;
  int rc = bodies && gcap_node_get_conditional_params(n, &p) == GCAP_SUCCESS ? 0 : -1;
  for (unsigned b = 0; rc == 0 && b < p.size; b++) {
    if (snprintf(inner, sizeof inner, "%s.b%u.", path, b) >= (int)sizeof inner) rc = -1;
    else rc = name_nodes(bodies[b], inner, top, out);
  }
  free(bodies);
  return rc;
}

static int by_node(const void *a, const void *b) {
  uintptr_t x = (uintptr_t)((const struct named *)a)->node, y = (uintptr_t)((const struct named *)b)->node;
  return x < y ? -1 : x > y;
}

/* After name_nodes: sorted by node, so that lookups are binary searches. */
static void index_names(struct names *names) { qsort(names->items, names->count, sizeof *names->items, by_node); }

static const struct named *lookup(const struct names *names, const gcap_node *n) {
  struct named key = {.node = n};
  return bsearch(&key, names->items, names->count, sizeof *names->items, by_node);
}

static const char *type_name(gcap_node_type t) {
  switch (t) {
  case GCAP_NODE_KERNEL: return "kernel";
  case GCAP_NODE_MEMCPY: return "memcpy";
  case GCAP_NODE_MEMSET: return "memset";
  case GCAP_NODE_HOST: return "host";
  case GCAP_NODE_GRAPH: return "graph";
  case GCAP_NODE_EMPTY: return "empty";
  case GCAP_NODE_EVENT_RECORD: return "event_record";
  case GCAP_NODE_EVENT_WAIT: return "event_wait";
  case GCAP_NODE_MEM_ALLOC: return "mem_alloc";
  case GCAP_NODE_MEM_FREE: return "mem_free";
  case GCAP_NODE_CONDITIONAL: return "conditional";
  default: return "unknown";
  }
}

static void describe(const struct names *names, const gcap_node *n, char *buf, size_t size) {
  const struct named *named = lookup(names, n);
  const char *path = named ? named->path : "?";
  gcap_kernel_node_params kp;
  if (gcap_node_get_type(n) == GCAP_NODE_KERNEL && gcap_node_get_kernel_params(n, &kp) == GCAP_SUCCESS)
    snprintf(buf, size, "node %s (kernel \"%s\")", path, gcap_kernel_name(kp.kernel));
  else snprintf(buf, size, "node %s (%s)", path, type_name(gcap_node_get_type(n)));
}

/* ------------------------------------------------------------- summary */

struct shape {
  size_t by_type[16];
  size_t nodes, edges, depth, widest, widest_level;
};

/* Index of n among the top-level nodes, found through the sorted names. */
static size_t top_index(const struct names *names, const gcap_node *n) { return lookup(names, n)->top; }

/* Levels of the top-level graph (longest path from a root), in one topological pass. */
static int measure_levels(size_t n, size_t e, const size_t *from, const size_t *to, struct shape *s) {
  size_t *level = calloc(n + 1, sizeof *level), *width = calloc(n + 1, sizeof *width);
  size_t *indeg = calloc(n + 1, sizeof *indeg), *first = calloc(n + 2, sizeof *first),
         *out = calloc(e + 1, sizeof *out);
  size_t *queue = calloc(n + 1, sizeof *queue);
  int rc = level && width && indeg && first && out && queue ? 0 : -1;
  for (size_t i = 0; rc == 0 && i < e; i++) indeg[to[i]]++, first[from[i] + 2]++;
  for (size_t v = 0; rc == 0 && v < n; v++) first[v + 2] += first[v + 1];
  for (size_t i = 0; rc == 0 && i < e; i++) out[first[from[i] + 1]++] = to[i];
  size_t head = 0, tail = 0;
  for (size_t v = 0; rc == 0 && v < n; v++)
    if (indeg[v] == 0) queue[tail++] = v;
  while (rc == 0 && head < tail) {
    size_t v = queue[head++];
    width[level[v]]++;
    if (level[v] + 1 > s->depth) s->depth = level[v] + 1;
    for (size_t k = first[v]; k < first[v + 1]; k++) {
      size_t w = out[k];
      if (level[w] < level[v] + 1) level[w] = level[v] + 1;
      if (--indeg[w] == 0) queue[tail++] = w;
    }
  }
  for (size_t l = 0; rc == 0 && l < s->depth; l++)
    if (width[l] > s->widest) s->widest = width[l], s->widest_level = l;
  free(level), free(width), free(indeg), free(first), free(out), free(queue);
  return rc;
}

static int measure(const gcap_graph *g, const struct names *names, struct shape *s) {
  size_t n = 0, e = 0;
  if (gcap_graph_get_nodes(g, NULL, &n) != GCAP_SUCCESS || gcap_graph_get_edges(g, NULL, NULL, &e) != GCAP_SUCCESS)
    return -1;
  gcap_node **from = calloc(e ? e : 1, sizeof *from), **to = calloc(e ? e : 1, sizeof *to);
  size_t *a = calloc(e ? e : 1, sizeof *a), *b = calloc(e ? e : 1, sizeof *b);
  int rc = from && to && a && b && gcap_graph_get_edges(g, from, to, &e) == GCAP_SUCCESS ? 0 : -1;
  for (size_t i = 0; rc == 0 && i < e; i++) a[i] = top_index(names, from[i]), b[i] = top_index(names, to[i]);
  if (rc == 0) rc = measure_levels(n, e, a, b, s);
  s->edges = e;
  for (size_t i = 0; rc == 0 && i < names->count; i++) {
    s->nodes++;
    unsigned t = (unsigned)gcap_node_get_type(names->items[i].node);
    s->by_type[t < 16 ? t : 15]++;
  }
  free(from), free(to), free(a), free(b);
  return rc;
}

static void print_summary(const struct shape *s, const char *path) {
  printf("%s: %zu nodes (all levels), %zu edges in the top-level graph, depth %zu, widest level %zu (%zu nodes)\n",
         path, s->nodes, s->edges, s->depth, s->widest_level, s->widest);
  for (unsigned t = 0; t < 16; t++)
    if (s->by_type[t]) printf("  %-13s %zu\n", type_name((gcap_node_type)t), s->by_type[t]);
}

/* ------------------------------------------------------------- races */

struct races {
  gcap_race *items;
  size_t count;
};

static int find_races(const gcap_graph *g, struct races *out) {
  size_t n = 0;
  if (gcap_graph_find_races(g, NULL, &n) != GCAP_SUCCESS) return -1;
  out->items = calloc(n ? n : 1, sizeof *out->items);
  if (!out->items || gcap_graph_find_races(g, out->items, &n) != GCAP_SUCCESS) return -1;
  out->count = n;
  return 0;
}

static void report_races(const struct races *r, const struct names *names, bool quiet) {
  printf("races: %zu\n", r->count);
  for (size_t i = 0; i < r->count && !quiet; i++) {
    char a[128], b[128];
    describe(names, r->items[i].first, a, sizeof a);
    describe(names, r->items[i].second, b, sizeof b);
    printf("  %s and %s: [%p, +%zu bytes)\n", a, b, r->items[i].addr, r->items[i].bytes);
  }
}

/* ------------------------------------------------------------- pictures */

#define RACE_COLOUR "\"#e31a1c\""

/* Whether an earlier race joins the same two top-level nodes, so each pair is drawn once. */
static bool pair_seen(const struct races *r, const struct names *names, size_t i) {
  size_t a = top_index(names, r->items[i].first), b = top_index(names, r->items[i].second);
  for (size_t k = 0; k < i; k++) {
    size_t c = top_index(names, r->items[k].first), d = top_index(names, r->items[k].second);
    if ((a == c && b == d) || (a == d && b == c)) return true;
  }
  return false;
}

/* A race inside a child graph marks the child-graph node, the one the picture has. */
static void put_race_marks(FILE *f, const struct races *r, const struct names *names) {
  for (size_t i = 0; i < r->count; i++) {
    if (pair_seen(r, names, i)) continue;
    size_t a = top_index(names, r->items[i].first), b = top_index(names, r->items[i].second);
    fprintf(f, "  n%zu [color=" RACE_COLOUR ", penwidth=3];\n  n%zu [color=" RACE_COLOUR ", penwidth=3];\n", a, b);
    if (a != b)
      fprintf(
          f,
          "  n%zu -> n%zu [color=" RACE_COLOUR
          ", style=dashed, dir=none, constraint=false, label=\"race\", fontname=\"Helvetica\", fontcolor=" RACE_COLOUR
          "];\n",
          a, b);
  }
}

/* The library's DOT text with the race marks added before its closing brace. */
static int write_dot(const gcap_graph *g, const char *path, unsigned flags, const struct races *r,
                     const struct names *names) {
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  if (!mem) return perror("open_memstream"), -1;
  gcap_status st = gcap_graph_write_dot(g, mem, flags);
  if (fclose(mem) != 0 || st != GCAP_SUCCESS || len < 2 || strcmp(text + len - 2, "}\n") != 0)
    return fprintf(stderr, "gcap-inspect: %s: %s\n", path, gcap_last_error_message()), free(text), -1;
  FILE *f = fopen(path, "w");
  if (!f) return perror(path), free(text), -1;
  fwrite(text, 1, len - 2, f);
  put_race_marks(f, r, names);
  fputs("}\n", f);
  free(text);
  bool failed = ferror(f) != 0;
  if (fclose(f) != 0) failed = true;
  if (failed) return fprintf(stderr, "gcap-inspect: %s: write error\n", path), -1;
  return 0;
}

/* Whether an executable "dot" is on PATH, looked up as the shell that system() starts does: an
 * empty PATH entry is the current directory, and without PATH the system's default path. */
static bool dot_on_path(void) {
  const char *path = getenv("PATH");
  char fallback[1024];
  if (!path) {
    size_t n = confstr(_CS_PATH, fallback, sizeof fallback);
    path = n > 0 && n <= sizeof fallback ? fallback : "/usr/bin:/bin";
  }
  for (const char *p = path;; p++) {
    const char *end = strchr(p, ':');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    char file[4096 + 8];
    struct stat st;
    if (len < 4096) {
      if (len) snprintf(file, sizeof file, "%.*s/dot", (int)len, p);
      else snprintf(file, sizeof file, "./dot");
      if (stat(file, &st) == 0 && S_ISREG(st.st_mode) && access(file, X_OK) == 0) return true;
    }
    if (!end) return false;
    p = end;
  }
}

/* -1 when dot ran and failed (or could not be run), -EXIT_NO_DOT when the shell did not find it. */
static int write_svg(const gcap_graph *g, const char *path, unsigned flags, const struct races *r,
                     const struct names *names) {
  char dot[4096 + 8], cmd[8400];
  if (strlen(path) > 4096 || strchr(path, '\''))
    return fprintf(stderr, "gcap-inspect: %s: --svg takes a file name without a single quote, of at most 4096 bytes\n",
                   path),
           -1;
  snprintf(dot, sizeof dot, "%s.dot", path);
  if (write_dot(g, dot, flags, r, names) != 0) return -1;
  snprintf(cmd, sizeof cmd, "dot -Tsvg -o '%s' '%s'", path, dot);
  int rc = system(cmd);
  remove(dot);
  if (rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 127) /* sh: dot: not found, after all */
    return fputs(NO_DOT_MESSAGE, stderr), -EXIT_NO_DOT;
  if (rc != 0) fprintf(stderr, "gcap-inspect: Graphviz's dot failed to write %s\n", path);
  return rc == 0 ? 0 : -1;
}

/* ------------------------------------------------------------- main */

static int inspect(const struct options *o, gcap_context *ctx, const struct kernel_table *t) {
  gcap_module *m = NULL;
  gcap_module_desc desc = {.kernels = t->defs, .num_kernels = t->count};
  if (t->count && gcap_module_load(ctx, &desc, &m) != GCAP_SUCCESS)
    return fprintf(stderr, "gcap-inspect: %s: %s\n", o->input, gcap_last_error_message()), 2;
  FILE *in = fopen(o->input, "rb");
  if (!in) return perror(o->input), 2;
  gcap_graph *g = NULL;
  gcap_status st = gcap_graph_load(ctx, in, &g);
  fclose(in);
  if (st != GCAP_SUCCESS)
    return fprintf(stderr, "gcap-inspect: %s: %s: %s\n", o->input, gcap_status_name(st), gcap_last_error_message()), 2;
  struct names names = {0};
  struct shape shape = {0};
  struct races races = {0};
  int rc = name_nodes(g, "", SIZE_MAX, &names) == 0 ? 0 : 2;
  if (rc == 0) index_names(&names);
  if (rc == 0 && measure(g, &names, &shape) != 0) rc = 2;
  if (rc == 0) print_summary(&shape, o->input);
  if (rc == 0 && find_races(g, &races) != 0) rc = 2;
  if (rc == 0) report_races(&races, &names, o->quiet);
  unsigned flags = o->verbose ? GCAP_DOT_VERBOSE : 0;
  if (rc == 0 && o->dot && write_dot(g, o->dot, flags, &races, &names) != 0) rc = 2;
  if (rc == 0 && o->svg) {
    int svg = write_svg(g, o->svg, flags, &races, &names);
    if (svg != 0) rc = svg == -EXIT_NO_DOT ? EXIT_NO_DOT : 2;
  }
  free(names.items);
  free(races.items);
  gcap_graph_destroy(g);
  return rc != 0 ? rc : races.count ? 1 : 0;
}

int main(int argc, char **argv) {
  struct options o;
  if (parse_args(argc, argv, &o) != 0) return usage_error(argv[0]);
  if (o.help) return help(argv[0]);
  if (o.svg && !dot_on_path()) return fputs(NO_DOT_MESSAGE, stderr), EXIT_NO_DOT;
  struct kernel_table t;
  if (read_kernels(o.input, &t) != 0) return kernel_table_free(&t), 2;
  gcap_context_options co;
  gcap_context_options_init(&co);
  co.backend = GCAP_BACKEND_SIM; /* analysis only: nothing runs */
  gcap_context *ctx = NULL;
  int rc = 2;
  if (gcap_context_create(&co, &ctx) == GCAP_SUCCESS) rc = inspect(&o, ctx, &t);
  else fprintf(stderr, "gcap-inspect: %s\n", gcap_last_error_message());
  gcap_context_destroy(ctx);
  kernel_table_free(&t);
  return rc;
}
