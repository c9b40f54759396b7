/*
 * The simulator's timeline: Chrome trace-event JSON ("X" complete events, microseconds), which
 * Perfetto and chrome://tracing open. The array is opened when the context is created and
 * closed when it is destroyed, so the file is valid JSON from then on.
 */
#include <time.h>

#include "sim_internal.h"

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

double sim_trace_now(const struct sim_context *sc) { return now_ns() - sc->trace_origin_ns; }

static void separate(struct sim_context *sc) {
  fputs(sc->trace_started ? ",\n" : "\n", sc->trace);
  sc->trace_started = true;
}

void sim_trace_open(struct sim_context *sc) {
  sc->trace_origin_ns = now_ns();
  fputs("{\"traceEvents\":[", sc->trace);
  separate(sc);
  fputs("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"gcap simulator\"}}",
        sc->trace);
  separate(sc);
  fputs("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"synchronous copies\"}}",
        sc->trace);
}

void sim_trace_close(struct sim_context *sc) {
  fputs("\n]}\n", sc->trace);
  fflush(sc->trace);
}

void sim_trace_stream_created(struct sim_context *sc, unsigned number) {
  separate(sc);
  fprintf(sc->trace, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%u,\"args\":{\"name\":\"stream %u\"}}",
          number, number);
}

/* Names come from gcap (node types) or from kernel definitions: escape what JSON needs. */
static void put_string(FILE *out, const char *s) {
  fputc('"', out);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(out, "\\%c", c);
    else if (c < 0x20) fprintf(out, "\\u%04x", c);
    else fputc(c, out);
  }
  fputc('"', out);
}

static void put_event(struct sim_context *sc, const char *name, const char *cat, unsigned tid, double start) {
  double end = sim_trace_now(sc);
  separate(sc);
  fputs("{\"name\":", sc->trace);
  put_string(sc->trace, name);
  fprintf(sc->trace, ",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":1,\"tid\":%u,\"args\":{", cat,
          start / 1e3, (end - start) / 1e3, tid);
}

uint64_t sim_trace_next_op(struct sim_context *sc) { return ++sc->eager_ops; }

void sim_trace_stream_op(struct sim_context *sc, const char *name, unsigned tid, uint64_t op, double start) {
  put_event(sc, name, "stream", tid, start);
  fprintf(sc->trace, "\"op\":%llu}}", (unsigned long long)op);
}

void sim_trace_graph_entry(struct sim_context *sc, const struct gcap__plan_node *pn, uint64_t launch, unsigned tid,
                           double start) {
  const char *name = pn->type == GCAP_NODE_KERNEL ? pn->u.kernel.kernel->name : gcap__node_type_name(pn->type);
  put_event(sc, name, "graph", tid, start);
  fprintf(sc->trace, "\"node\":%u,\"depth\":%u,\"launch\":%llu%s}}", pn->source_index, pn->depth,
          (unsigned long long)launch, pn->disabled ? ",\"disabled\":true" : "");
}

/* Flow events: Perfetto and chrome://tracing draw an arrow from the record's slice to the wait's. */
void sim_trace_arrow(struct sim_context *sc, const struct sim_record *r, unsigned tid, uint64_t op) {
  double now = sim_trace_now(sc), from = r->ran_at >= 0 ? r->ran_at : now;
  put_event(sc, "event wait", "stream", tid, now);
  fprintf(sc->trace, "\"op\":%llu,\"waits_for_op\":%llu}}", (unsigned long long)op, (unsigned long long)r->op);
  separate(sc);
  fprintf(sc->trace, "{\"name\":\"event\",\"cat\":\"event\",\"ph\":\"s\",\"id\":%llu,\"ts\":%.3f,\"pid\":1,\"tid\":%u}",
          (unsigned long long)op, from / 1e3, r->tid);
  separate(sc);
  fprintf(sc->trace,
          "{\"name\":\"event\",\"cat\":\"event\",\"ph\":\"f\",\"bp\":\"e\",\"id\":%llu,\"ts\":%.3f,"
          "\"pid\":1,\"tid\":%u}",
          (unsigned long long)op, now / 1e3, tid);
}
