"""The C library through ctypes: where it is, the structs of the public headers, every prototype.

Only gcap/gcap.h and gcap/sim.h are used, as any C program would use them. Each Structure here is the
C struct `gcap_<its name>`, field for field and in order (python/tests/test_abi.py compares them with
the headers and with a C compiler's offsets).
"""
import ctypes
import glob
import os
from ctypes import (CFUNCTYPE, POINTER, Structure, Union, c_bool, c_char_p, c_double, c_float, c_int, c_size_t,
                    c_uint, c_uint8, c_uint16, c_uint32, c_uint64, c_void_p)


def _find_library():
    given = os.environ.get("GCAP_LIBRARY")
    if given:
        return given
    here = os.path.dirname(os.path.abspath(__file__))
    for pattern in ("libgcap.so", "libgcap.so.*", "libgcap*.dylib", "gcap*.dll"):
        found = sorted(glob.glob(os.path.join(here, pattern)))
        if found:
            return found[0]
    raise ImportError("gcap: the C library is not next to the package (%s); build it with `pip install .` "
                      "or point GCAP_LIBRARY at a libgcap.so" % here)


lib = ctypes.CDLL(_find_library())
libc = ctypes.CDLL(None)
libc.fopen.restype = c_void_p
libc.fopen.argtypes = [c_char_p, c_char_p]
libc.fclose.argtypes = [c_void_p]
libc.fflush.argtypes = [c_void_p]

status = c_int
host_fn = CFUNCTYPE(None, c_void_p)


class dim3(Structure):
    _fields_ = [("x", c_uint32), ("y", c_uint32), ("z", c_uint32)]


class sim_block(Structure):
    _fields_ = [("grid_dim", dim3), ("block_dim", dim3), ("block_idx", dim3), ("shared_mem", c_void_p)]


sim_block_fn = CFUNCTYPE(None, POINTER(sim_block), POINTER(c_void_p))


class kernel_def(Structure):
    _fields_ = [("name", c_char_p), ("sim_fn", c_void_p), ("num_params", c_size_t),
                ("param_sizes", POINTER(c_size_t)), ("param_access", POINTER(c_int)), ("sim_block_fn", sim_block_fn)]


class module_desc(Structure):
    _fields_ = [("image", c_void_p), ("image_size", c_size_t), ("kernels", POINTER(kernel_def)),
                ("num_kernels", c_size_t), ("source", c_char_p), ("options", POINTER(c_char_p)),
                ("num_options", c_size_t), ("name", c_char_p)]


class sim_options(Structure):
    _fields_ = [("order", c_int), ("seed", c_uint64), ("check_races", c_bool), ("trace", c_void_p), ("exec", c_int),
                ("strict_memory", c_bool), ("threads", c_uint), ("kernels", c_int), ("checks", c_uint),
                ("kernel_timeout_ms", c_uint32), ("zero_block_memory", c_bool), ("poison_allocations", c_bool)]


class context_options(Structure):
    _fields_ = [("backend", c_int), ("device", c_int), ("sim", POINTER(sim_options))]


class sim_stats(Structure):
    _fields_ = [(name, c_uint64) for name in ("graph_launches", "nodes_executed", "kernels_executed",
                                               "kernels_stubbed", "bytes_copied", "bytes_set", "host_calls",
                                               "ops_deferred", "stream_races", "barriers_passed", "blocks_parallel",
                                               "ptx_instructions")]


class capture_options(Structure):
    _fields_ = [("mode", c_int), ("pool", c_void_p)]


class capture_info(Structure):
    _fields_ = [("status", c_int), ("id", c_uint64), ("graph", c_void_p), ("dependencies", POINTER(c_void_p)),
                ("num_dependencies", c_size_t)]


class kernel_node_params(Structure):
    _fields_ = [("kernel", c_void_p), ("grid", dim3), ("block", dim3), ("shared_mem_bytes", c_uint32),
                ("args", POINTER(c_void_p))]


class memcpy_node_params(Structure):
    _fields_ = [("dst", c_void_p), ("src", c_void_p), ("bytes", c_size_t), ("kind", c_int)]


class memset_node_params(Structure):
    _fields_ = [("dst", c_void_p), ("value", c_uint32), ("element_size", c_uint), ("width", c_size_t),
                ("height", c_size_t), ("pitch", c_size_t)]


class host_node_params(Structure):
    _fields_ = [("fn", host_fn), ("user_data", c_void_p)]


class race(Structure):
    _fields_ = [("first", c_void_p), ("second", c_void_p), ("addr", c_void_p), ("bytes", c_size_t)]


class exec_update_info(Structure):
    _fields_ = [("result", c_int), ("error_node", c_void_p), ("error_from_node", c_void_p)]


class mem_alloc_node_params(Structure):
    _fields_ = [("bytes", c_size_t), ("pool", c_void_p), ("dptr", c_void_p)]


class kernel_node_attr_value(Union):
    _fields_ = [("priority", c_int), ("cooperative", c_int)]


class pitched_ptr(Structure):
    _fields_ = [("ptr", c_void_p), ("pitch", c_size_t), ("xsize", c_size_t), ("ysize", c_size_t)]


class pos(Structure):
    _fields_ = [("x", c_size_t), ("y", c_size_t), ("z", c_size_t)]


class extent(Structure):
    _fields_ = [("width", c_size_t), ("height", c_size_t), ("depth", c_size_t)]


class memcpy_3d_params(Structure):
    _fields_ = [("src", pitched_ptr), ("src_pos", pos), ("dst", pitched_ptr), ("dst_pos", pos), ("extent", extent),
                ("kind", c_int)]


class conditional_node_params(Structure):
    _fields_ = [("handle", c_uint64), ("type", c_int), ("size", c_uint), ("body_out", POINTER(c_void_p))]


_PROTOTYPES = {
    # name: (restype, argtypes)
    "gcap_status_name": (c_char_p, [status]),
    "gcap_last_error_message": (c_char_p, []),
    "gcap_version": (None, [POINTER(c_int), POINTER(c_int), POINTER(c_int)]),
    "gcap_context_options_init": (None, [POINTER(context_options)]),
    "gcap_sim_options_init": (None, [POINTER(sim_options)]),
    "gcap_context_create": (status, [POINTER(context_options), POINTER(c_void_p)]),
    "gcap_context_destroy": (None, [c_void_p]),
    "gcap_context_backend": (c_int, [c_void_p]),
    "gcap_context_synchronize": (status, [c_void_p]),
    "gcap_backend_name": (c_char_p, [c_int]),
    "gcap_sim_get_stats": (status, [c_void_p, POINTER(sim_stats)]),
    "gcap_mem_alloc": (status, [c_void_p, c_size_t, POINTER(c_void_p)]),
    "gcap_mem_free": (status, [c_void_p, c_void_p]),
    "gcap_mem_alloc_managed": (status, [c_void_p, c_size_t, POINTER(c_void_p)]),
    "gcap_memcpy": (status, [c_void_p, c_void_p, c_void_p, c_size_t, c_int]),
    "gcap_memcpy_async": (status, [c_void_p, c_void_p, c_void_p, c_size_t, c_int]),
    "gcap_memset_async": (status, [c_void_p, c_void_p, c_int, c_size_t]),
    "gcap_stream_create": (status, [c_void_p, POINTER(c_void_p)]),
    "gcap_stream_create_with_flags": (status, [c_void_p, c_uint, c_int, POINTER(c_void_p)]),
    "gcap_stream_get_flags": (status, [c_void_p, POINTER(c_uint)]),
    "gcap_stream_get_priority": (status, [c_void_p, POINTER(c_int)]),
    "gcap_context_stream_priority_range": (status, [c_void_p, POINTER(c_int), POINTER(c_int)]),
    "gcap_context_legacy_stream": (status, [c_void_p, POINTER(c_void_p)]),
    "gcap_context_per_thread_stream": (status, [c_void_p, POINTER(c_void_p)]),
    "gcap_stream_destroy": (status, [c_void_p]),
    "gcap_stream_synchronize": (status, [c_void_p]),
    "gcap_stream_query": (status, [c_void_p]),
    "gcap_stream_wait_event": (status, [c_void_p, c_void_p]),
    "gcap_stream_get_capture_info": (status, [c_void_p, POINTER(capture_info)]),
    "gcap_event_create": (status, [c_void_p, POINTER(c_void_p)]),
    "gcap_event_destroy": (status, [c_void_p]),
    "gcap_event_record": (status, [c_void_p, c_void_p]),
    "gcap_event_synchronize": (status, [c_void_p]),
    "gcap_event_query": (status, [c_void_p]),
    "gcap_event_elapsed_time": (status, [c_void_p, c_void_p, POINTER(c_float)]),
    "gcap_module_load": (status, [c_void_p, POINTER(module_desc), POINTER(c_void_p)]),
    "gcap_module_unload": (status, [c_void_p]),
    "gcap_module_get_kernel": (status, [c_void_p, c_char_p, POINTER(c_void_p)]),
    "gcap_module_get_global": (status, [c_void_p, c_char_p, POINTER(c_void_p), POINTER(c_size_t)]),
    "gcap_launch_kernel": (status, [c_void_p, c_void_p, dim3, dim3, c_uint32, POINTER(c_void_p)]),
    "gcap_launch_cooperative_kernel": (status, [c_void_p, c_void_p, dim3, dim3, c_uint32, POINTER(c_void_p)]),
    "gcap_launch_host_func": (status, [c_void_p, host_fn, c_void_p]),
    "gcap_capture_options_init": (None, [POINTER(capture_options)]),
    "gcap_capture_begin": (status, [c_void_p, POINTER(capture_options), POINTER(c_void_p)]),
    "gcap_capture_end": (status, [c_void_p, POINTER(c_void_p)]),
    "gcap_capture_destroy": (None, [c_void_p]),
    "gcap_capture_get_status": (status, [c_void_p, POINTER(c_int)]),
    "gcap_graph_create": (status, [c_void_p, POINTER(c_void_p)]),
    "gcap_graph_destroy": (None, [c_void_p]),
    "gcap_graph_clone": (status, [c_void_p, POINTER(c_void_p)]),
    "gcap_graph_get_nodes": (status, [c_void_p, POINTER(c_void_p), POINTER(c_size_t)]),
    "gcap_graph_get_edges": (status, [c_void_p, POINTER(c_void_p), POINTER(c_void_p), POINTER(c_size_t)]),
    "gcap_graph_add_kernel_node": (status, [c_void_p, POINTER(c_void_p), c_size_t, POINTER(kernel_node_params),
                                            POINTER(c_void_p)]),
    "gcap_graph_add_memcpy_node": (status, [c_void_p, POINTER(c_void_p), c_size_t, POINTER(memcpy_node_params),
                                            POINTER(c_void_p)]),
    "gcap_graph_add_memset_node": (status, [c_void_p, POINTER(c_void_p), c_size_t, POINTER(memset_node_params),
                                            POINTER(c_void_p)]),
    "gcap_graph_add_host_node": (status, [c_void_p, POINTER(c_void_p), c_size_t, POINTER(host_node_params),
                                          POINTER(c_void_p)]),
    "gcap_graph_add_empty_node": (status, [c_void_p, POINTER(c_void_p), c_size_t, POINTER(c_void_p)]),
    "gcap_graph_add_child_graph_node": (status, [c_void_p, POINTER(c_void_p), c_size_t, c_void_p, POINTER(c_void_p)]),
    "gcap_graph_add_event_record_node": (status, [c_void_p, POINTER(c_void_p), c_size_t, c_void_p, POINTER(c_void_p)]),
    "gcap_graph_add_event_wait_node": (status, [c_void_p, POINTER(c_void_p), c_size_t, c_void_p, POINTER(c_void_p)]),
    "gcap_graph_add_dependencies": (status, [c_void_p, POINTER(c_void_p), POINTER(c_void_p), c_size_t]),
    "gcap_graph_remove_dependencies": (status, [c_void_p, POINTER(c_void_p), POINTER(c_void_p), c_size_t]),
    "gcap_graph_destroy_node": (status, [c_void_p]),
    "gcap_graph_conditional_handle_create": (status, [c_void_p, c_uint, c_uint, POINTER(c_uint64)]),
    "gcap_graph_add_conditional_node": (status, [c_void_p, POINTER(c_void_p), c_size_t,
                                                 POINTER(conditional_node_params), POINTER(c_void_p)]),
    "gcap_node_get_type": (c_int, [c_void_p]),
    "gcap_node_get_dependencies": (status, [c_void_p, POINTER(c_void_p), POINTER(c_size_t)]),
    "gcap_node_get_kernel_params": (status, [c_void_p, POINTER(kernel_node_params)]),
    "gcap_node_get_memcpy_params": (status, [c_void_p, POINTER(memcpy_node_params)]),
    "gcap_node_get_memset_params": (status, [c_void_p, POINTER(memset_node_params)]),
    "gcap_node_get_host_params": (status, [c_void_p, POINTER(host_node_params)]),
    "gcap_node_get_child_graph": (status, [c_void_p, POINTER(c_void_p)]),
    "gcap_node_set_memset_params": (status, [c_void_p, POINTER(memset_node_params)]),
    "gcap_node_set_memcpy_params": (status, [c_void_p, POINTER(memcpy_node_params)]),
    "gcap_node_set_kernel_params": (status, [c_void_p, POINTER(kernel_node_params)]),
    "gcap_kernel_name": (c_char_p, [c_void_p]),
    "gcap_kernel_get_attribute": (status, [c_void_p, c_int, POINTER(c_int)]),
    "gcap_kernel_set_attribute": (status, [c_void_p, c_int, c_int]),
    "gcap_graph_find_races": (status, [c_void_p, POINTER(race), POINTER(c_size_t)]),
    "gcap_graph_write_dot": (status, [c_void_p, c_void_p, c_uint]),
    "gcap_graph_save": (status, [c_void_p, c_void_p]),
    "gcap_graph_load": (status, [c_void_p, c_void_p, POINTER(c_void_p)]),
    "gcap_graph_instantiate": (status, [c_void_p, c_uint, POINTER(c_void_p)]),
    "gcap_exec_launch": (status, [c_void_p, c_void_p]),
    "gcap_exec_upload": (status, [c_void_p, c_void_p]),
    "gcap_exec_destroy": (None, [c_void_p]),
    "gcap_exec_node_count": (c_size_t, [c_void_p]),
    "gcap_exec_update": (status, [c_void_p, c_void_p, POINTER(exec_update_info)]),
    "gcap_exec_kernel_node_set_params": (status, [c_void_p, c_void_p, POINTER(kernel_node_params)]),
    "gcap_exec_memcpy_node_set_params": (status, [c_void_p, c_void_p, POINTER(memcpy_node_params)]),
    "gcap_exec_memset_node_set_params": (status, [c_void_p, c_void_p, POINTER(memset_node_params)]),
    "gcap_exec_node_set_enabled": (status, [c_void_p, c_void_p, c_bool]),
    "gcap_sim_set_conditional": (None, [c_uint64, c_uint]),
    "gcap_sim_syncthreads": (None, [c_void_p]),
    "gcap_sim_interrupt": (None, []),
    "gcap_mem_alloc_pitch": (status, [c_void_p, c_size_t, c_size_t, POINTER(c_void_p), POINTER(c_size_t)]),
    "gcap_memcpy_2d_async": (status, [c_void_p, c_void_p, c_size_t, c_void_p, c_size_t, c_size_t, c_size_t, c_int]),
    "gcap_graph_add_mem_alloc_node": (status, [c_void_p, POINTER(c_void_p), c_size_t, POINTER(mem_alloc_node_params),
                                               POINTER(c_void_p)]),
    "gcap_graph_add_mem_free_node": (status, [c_void_p, POINTER(c_void_p), c_size_t, c_void_p, POINTER(c_void_p)]),
    "gcap_graph_kernel_node_set_attribute": (status, [c_void_p, c_int, POINTER(kernel_node_attr_value)]),
    "gcap_graph_kernel_node_get_attribute": (status, [c_void_p, c_int, POINTER(kernel_node_attr_value)]),
    "gcap_exec_child_graph_node_set_params": (status, [c_void_p, c_void_p, c_void_p]),
    "gcap_graph_add_memcpy_3d_node": (status, [c_void_p, POINTER(c_void_p), c_size_t, POINTER(memcpy_3d_params),
                                               POINTER(c_void_p)]),
    "gcap_user_object_create": (status, [c_void_p, c_void_p, host_fn, c_uint, c_uint, POINTER(c_void_p)]),
    "gcap_user_object_retain": (status, [c_void_p, c_uint]),
    "gcap_user_object_release": (status, [c_void_p, c_uint]),
    "gcap_graph_retain_user_object": (status, [c_void_p, c_void_p, c_uint, c_uint]),
    "gcap_graph_release_user_object": (status, [c_void_p, c_void_p, c_uint]),
    "gcap_context_get_graph_mem_attribute": (status, [c_void_p, c_int, POINTER(c_uint64)]),
    "gcap_context_set_graph_mem_attribute": (status, [c_void_p, c_int, c_uint64]),
    "gcap_context_graph_mem_trim": (status, [c_void_p]),
}

for _name, (_restype, _argtypes) in _PROTOTYPES.items():
    _f = getattr(lib, _name)
    _f.restype = _restype
    _f.argtypes = _argtypes

__all__ = ["lib", "libc", "host_fn", "sim_block_fn", "c_uint8", "c_uint16", "c_double", "Union"]
