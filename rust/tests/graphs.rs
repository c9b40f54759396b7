//! Graphs built by hand, executables and their setters and update, child graphs.

use gcap::{Backend, Context, DeviceBuffer, Graph, GpuError, NodeType, Stream, UpdateResult};

fn setup() -> (Context, Stream) {
    let ctx = Context::new(Backend::Sim).unwrap();
    let s = Stream::new(&ctx).unwrap();
    (ctx, s)
}

#[test]
fn exec_setters_change_one_executable_only() {
    let (ctx, s) = setup();
    let (a, b) = (DeviceBuffer::<u8>::zeroed(&ctx, 32).unwrap(), DeviceBuffer::<u8>::zeroed(&ctx, 32).unwrap());
    let mut g = Graph::new(&ctx).unwrap();
    let fill = g.add_memset(&[], &a, 1).unwrap();
    let copy = g.add_copy(&[fill], &b, &a).unwrap();
    let mut x = g.instantiate().unwrap();
    let other = g.instantiate().unwrap();
    x.set_memset(fill, &a, 9).unwrap();
    x.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(b.to_vec().unwrap(), vec![9; 32]);
    other.launch(&s).unwrap(); // its own parameters: 1
    s.synchronize().unwrap();
    assert_eq!(b.to_vec().unwrap(), vec![1; 32]);
    x.set_enabled(copy, false).unwrap();
    assert!(!x.is_enabled(copy).unwrap());
    x.set_memset(fill, &a, 7).unwrap();
    x.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!((a.to_vec().unwrap()[0], b.to_vec().unwrap()[0]), (7, 1), "the copy is disabled");
    let c = DeviceBuffer::<u8>::new(&ctx, 32).unwrap();
    let err = x.set_copy(fill, &c, &a).unwrap_err(); // a fill node
    assert!(matches!(err, GpuError::InvalidValue(_)), "{err}");
    x.set_enabled(copy, true).unwrap();
    x.set_copy(copy, &c, &a).unwrap(); // now into c
    x.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!((b.to_vec().unwrap()[0], c.to_vec().unwrap()[0]), (1, 7));
    let err = x.set_memset(copy, &a, 1).unwrap_err(); // a copy node
    assert!(matches!(err, GpuError::InvalidValue(_)), "{err}");
}

#[test]
fn update_takes_parameters_and_refuses_another_shape() {
    let (ctx, s) = setup();
    let a = DeviceBuffer::<u32>::zeroed(&ctx, 8).unwrap();
    let build = |v: u8, extra: bool| {
        let mut g = Graph::new(&ctx).unwrap();
        let n = g.add_memset(&[], &a, v).unwrap();
        if extra {
            g.add_empty(&[n]).unwrap();
        }
        g
    };
    let mut x = build(1, false).instantiate().unwrap();
    x.update(&build(2, false)).unwrap();
    x.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(a.to_vec().unwrap()[0], 0x02020202);
    let other = build(3, true);
    let (err, result, _node) = x.update(&other).unwrap_err();
    assert!(matches!(err, GpuError::GraphExecUpdateFailure(_)), "{err}");
    assert_eq!(result, UpdateResult::TopologyChanged);
}

#[test]
fn child_graphs_run_inside_their_parent() {
    let (ctx, s) = setup();
    let (a, b) = (DeviceBuffer::<u16>::zeroed(&ctx, 64).unwrap(), DeviceBuffer::<u16>::zeroed(&ctx, 64).unwrap());
    let mut child = Graph::new(&ctx).unwrap();
    let f = child.add_memset(&[], &a, 0x22).unwrap();
    child.add_copy(&[f], &b, &a).unwrap();
    let mut parent = Graph::new(&ctx).unwrap();
    let first = parent.add_empty(&[]).unwrap();
    let node = parent.add_child(&[first], &child).unwrap();
    drop(child); // the parent holds a copy, and keeps its buffers
    assert_eq!(parent.node_type(node).unwrap(), NodeType::Graph);
    let x = parent.instantiate().unwrap();
    assert_eq!(x.node_count(), 4, "the child's nodes count inside the parent's");
    x.launch(&s).unwrap();
    s.synchronize().unwrap();
    assert_eq!(b.to_vec().unwrap(), vec![0x2222; 64]);
}

#[test]
fn nodes_of_a_graph_that_is_gone_are_an_error_not_a_crash() {
    let (ctx, _s) = setup();
    let mut g = Graph::new(&ctx).unwrap();
    let n = g.add_empty(&[]).unwrap();
    drop(g);
    let mut h = Graph::new(&ctx).unwrap();
    let err = h.add_empty(&[n]).unwrap_err();
    assert!(matches!(err, GpuError::InvalidHandle(_) | GpuError::InvalidValue(_)), "{err}");
    assert!(matches!(h.node_type(n), Err(GpuError::InvalidHandle(_))));
}
