"""Capture a fork/join of fills on two streams, instantiate the graph and replay it on the simulator."""
import numpy as np

import gcap

with gcap.Context(backend="sim") as ctx:
    main, side = ctx.stream(), ctx.stream()
    buf = ctx.alloc(256)
    with main.capture() as cap:
        main.memset(buf, 1, nbytes=128)
        side.wait_stream(main)  # fork: side joins the capture
        side.memset(buf, 2, offset=128)
        main.wait_stream(side)  # join: the capture may end
    print(cap.graph)
    x = cap.graph.instantiate()
    for _ in range(3):
        x.launch(main)
    main.synchronize()
    data = buf.to_numpy(np.uint8)
    print("gcap", gcap.version(), "- first and last bytes after 3 replays:", data[0], data[-1])
    assert (data[:128] == 1).all() and (data[128:] == 2).all()
