// The bench's peer (peer.h) on oneTBB's flow graph: one continue_node per task, joined by
// make_edge in the shapes gcap records, run in TBB's default arena.
#include "peer.h"

#include <oneapi/tbb/flow_graph.h>

#include <cstring>
#include <memory>
#include <new>

namespace {

using msg = tbb::flow::continue_msg;
using task_node = tbb::flow::continue_node<msg>;

// One task: a 64-byte fill of its slot of the buffer.
struct fill {
  unsigned char *p;
  void operator()(const msg &) const { std::memset(p, 0, 64); }
};

struct nothing {
  void operator()(const msg &) const {}
};

// Nodes are neither copyable nor movable: they are built in place in one block of n slots and
// destroyed in reverse order, before the graph that owns them.
class node_array {
public:
  explicit node_array(size_t cap) : cap_(cap), nodes_(cap ? alloc().allocate(cap) : nullptr) {}
  ~node_array() {
    while (size_ > 0) std::destroy_at(&nodes_[--size_]);
    if (nodes_) alloc().deallocate(nodes_, cap_);
  }
  node_array(const node_array &) = delete;
  node_array &operator=(const node_array &) = delete;

  task_node &add(tbb::flow::graph &g, unsigned char *p) {
    task_node *n = ::new (static_cast<void *>(&nodes_[size_])) task_node(g, fill{p});
    size_++;
    return *n;
  }
  task_node &operator[](size_t i) { return nodes_[i]; }

private:
  static std::allocator<task_node> alloc() { return {}; }
  size_t cap_;
  size_t size_ = 0;
  task_node *nodes_;
};

} // namespace

struct peer_graph {
  peer_graph(size_t n_, bool fork_join_) : tasks(n_), fork_join(fork_join_), n(n_) {}

  // Members are destroyed in reverse order: the nodes go before the graph.
  tbb::flow::graph g;
  node_array tasks;
  std::unique_ptr<tbb::flow::broadcast_node<msg>> root; // fork/join only
  std::unique_ptr<task_node> join;                      // fork/join only
  bool fork_join;
  size_t n;
};

extern "C" const char *peer_name(void) { return "oneTBB flow graph"; }

extern "C" peer_graph *peer_build(size_t n, int fork_join, int width, unsigned char *buf) {
  if (!buf || (fork_join && width < 1)) return nullptr;
  try {
    std::unique_ptr<peer_graph> pg(new peer_graph(n, fork_join != 0));
    if (!fork_join) {
      for (size_t i = 0; i < n; i++) {
        task_node &t = pg->tasks.add(pg->g, buf + (i % 64) * 64);
        if (i > 0) tbb::flow::make_edge(pg->tasks[i - 1], t);
      }
      return pg.release();
    }
    pg->root.reset(new tbb::flow::broadcast_node<msg>(pg->g));
    pg->join.reset(new task_node(pg->g, nothing{}));
    const size_t w = static_cast<size_t>(width);
    for (size_t i = 0; i < n; i++) {
      task_node &t = pg->tasks.add(pg->g, buf + (i % 64) * 64);
      if (i < w) tbb::flow::make_edge(*pg->root, t);
      else tbb::flow::make_edge(pg->tasks[i - w], t);
    }
    // Each chain's last task into the join; a chain left empty (n < width) joins the root directly.
    for (size_t c = 0; c < w; c++) {
      if (c < n) {
        size_t last = c + (n - 1 - c) / w * w;
        tbb::flow::make_edge(pg->tasks[last], *pg->join);
      } else {
        tbb::flow::make_edge(*pg->root, *pg->join);
      }
    }
    return pg.release();
  } catch (...) {
    return nullptr;
  }
}

extern "C" void peer_run(peer_graph *pg) {
  if (!pg) return;
  if (pg->fork_join) pg->root->try_put(msg());
  else if (pg->n > 0) pg->tasks[0].try_put(msg());
  pg->g.wait_for_all();
}

extern "C" void peer_destroy(peer_graph *pg) { delete pg; }
