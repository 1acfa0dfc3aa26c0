#!/usr/bin/env python3
"""Write the execution-trace fixtures of tests/data/trace from one list of ops.

et-rank{0,1,2}.json      PyTorch execution traces (ExecutionTraceObserver, schema 1.1.1)
chakra-rank{0,1,2}.json  the same after Chakra's trace linker (Kineto times, GPU kernels)
chakra.{0,1,2}.et        Chakra's protobuf (length-prefixed GlobalMetadata, then Nodes),
chakra-comm_group.json   and its process groups

Three ranks, two process groups ("0": every rank; "1": ranks [2, 0], irregular, so
only the process_group:init node says its members).  Run from this directory:
python3 make_et.py (python3 make_et.py --hostile DIR writes the hostile .et
files of the bad-input table into DIR).  Written from the documented formats (torch's
execution_trace_observer.cpp and ParamCommsUtils.hpp, Chakra's et_def.proto and
protolib's encodeMessage), by hand: no torch, no protobuf package.
"""
import json
import sys

PGS = [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "ranks": [],
        "group_size": 3, "group_count": 2},
       {"pg_name": "1", "pg_desc": "pair", "backend_config": "cuda:nccl", "ranks": [2, 0],
        "group_size": 2, "group_count": 2}]
SIZE = {"0": 3, "1": 2}
START = {"0": (0, 1), "1": (2, -1)}  # global_rank_start, global_rank_stride (-1: irregular)


# all_to_allv: rows of 10 elements rank i sends rank j (c10d's split sizes are rows of dim 0)
A2AV = [[1, 2, 1], [1, 1, 2], [2, 1, 1]]


def ops(rank):
    """(id, name, pg, seq, p2p, group rank, dtype, in, out, in_split, out_split) of a rank."""
    o = [(10, "allreduce", "0", 1, False, rank, "Float", 1024, 1024, "[]", "[]"),
         (14, "wait", "0", 1, False, rank, "Byte", 0, 0, "[]", "[]"),
         (20, "broadcast", "0", 2, False, 1, "BFloat16", 256, 256, "[]", "[]"),
         (25, "all_to_allv", "0", 3, False, rank, "Half", 40, 40, str(A2AV[rank]),
          str([A2AV[j][rank] for j in range(3)]))]
    if rank == 2:
        o.append((30, "send", "1", 1, True, 1, "Long", 8, 8, "[]", "[]"))
    if rank == 0:
        o.append((30, "recv", "1", 1, True, 0, "Long", 8, 8, "[]", "[]"))
    if rank == 1:  # a wait whose op is not in the trace (issued before it started)
        o.append((33, "wait", "0", 99, False, rank, "Byte", 0, 0, "[]", "[]"))
    o.append((40, "barrier", "0", 4, False, rank, "Byte", 0, 0, "[]", "[]"))
    return o


def attrs(extra):
    base = [{"name": "rf_id", "type": "uint64", "value": 0},
            {"name": "fw_parent", "type": "uint64", "value": 0},
            {"name": "seq_id", "type": "int64", "value": -1},
            {"name": "scope", "type": "uint64", "value": 0},
            {"name": "tid", "type": "uint64", "value": 1},
            {"name": "fw_tid", "type": "uint64", "value": 0},
            {"name": "op_schema", "type": "string", "value": ""},
            {"name": "kernel_backend", "type": "string", "value": ""},
            {"name": "kernel_file", "type": "string", "value": ""}]
    return base + extra


def node(nid, name, parent, values=None, types=None, extra=None):
    values = values or []
    types = types or []
    return {"id": nid, "name": name, "ctrl_deps": parent,
            "inputs": {"values": values, "shapes": [[] for _ in values], "types": types,
                       "strides": [[] for _ in values]},
            "outputs": {"values": [], "shapes": [], "types": [], "strides": []},
            "attrs": attrs(extra or [])}


def comm(rank, op):
    nid, name, pg, seq, p2p, grank, dtype, n_in, n_out, s_in, s_out = op
    start, stride = START[pg]
    values = [[nid + 100, 7, 0, n_in, 4, "cuda:%d" % rank], [seq, p2p], [pg, PGS[int(pg)]["pg_desc"]],
              grank, name, [], [], start, stride, SIZE[pg]]
    types = ["Tensor(float)", "Tuple[Int,Bool]", "Tuple[String,String]", "Int", "String",
             "GenericList[]", "GenericList[]", "Int", "Int", "Int"]
    if name in ("wait", "barrier"):  # RECORD_PARAM_COMMS: no tensors first
        values, types = values[1:], types[1:]
    extra = [{"name": "collective_name", "type": "string", "value": name},
             {"name": "dtype", "type": "string", "value": dtype},
             {"name": "in_msg_nelems", "type": "uint64", "value": n_in},
             {"name": "out_msg_nelems", "type": "uint64", "value": n_out},
             {"name": "in_split_size", "type": "string", "value": s_in},
             {"name": "out_split_size", "type": "string", "value": s_out},
             {"name": "global_rank_start", "type": "uint64", "value": start},
             {"name": "global_rank_stride", "type": "uint64", "value": stride},
             {"name": "pg_name", "type": "string", "value": pg},
             {"name": "pg_desc", "type": "string", "value": PGS[int(pg)]["pg_desc"]},
             {"name": "pg_size", "type": "uint64", "value": SIZE[pg]}]
    return node(nid, "record_param_comms", nid - 1, values, types, extra)


def et_nodes(rank):
    """The nodes in the order the observer writes them: at each op's end."""
    nodes = [node(2, "[pytorch|profiler|execution_trace|thread]", 1),
             node(3, "## process_group:init ##", 2, [json.dumps(PGS)], ["String"])]
    comms = [comm(rank, o) for o in ops(rank)]
    if rank == 0:  # two threads: the broadcast (id 20) ends after the all-to-all-v (id 25)
        comms[2], comms[3] = comms[3], comms[2]
    for c in comms:
        nodes.append(c)
        nodes.append(node(c["id"] - 1, "c10d::" + c["attrs"][9]["value"] + "_", 2))
    nodes.append(node(50, "aten::mm", 2))
    nodes.append(node(1, "[pytorch|profiler|execution_trace|process]", 1))
    return nodes


def dump(path, nodes):
    """The header, then one node a line (the hostile versions are made with sed)."""
    with open(path, "w") as f:
        f.write('{"schema": "1.1.1-chakra.0.0.4", "pid": 4000, "time": "2026-12-06 07:00:00", '
                '"start_ts": 1000,\n"nodes": [\n')
        f.write(",\n".join(json.dumps(n) for n in nodes))
        f.write('\n],\n"finish_ts": 2000}\n')


def write_et(rank):
    dump("et-rank%d.json" % rank, et_nodes(rank))


KERNEL = {"allreduce": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
          "broadcast": "ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
          "all_to_allv": "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
          "send": "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
          "recv": "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"}


def write_linked(rank):
    """Host ops with Kineto's ts and durations (us), the kernels as nodes of their own."""
    nodes = sorted(et_nodes(rank), key=lambda n: n["id"])
    gpu, nid = [], 1000
    for n in nodes:
        if n["name"] != "record_param_comms":
            continue
        name = n["attrs"][9]["value"]
        t0 = 1700000000000 + 1000 * rank + 10 * n["id"]
        n.update({"ts": t0 + 0.5, "inclusive_dur": 3, "exclusive_dur": 3})
        if name not in KERNEL:
            continue  # wait, barrier: no kernel
        launcher = n["id"]
        if name == "broadcast":  # launched inside nccl:broadcast, a child of record_param_comms
            host = node(60 + rank, "nccl:broadcast", n["id"], extra=[])
            host.update({"ts": t0 + 1, "inclusive_dur": 2, "exclusive_dur": 2})
            gpu.append(host)
            launcher = host["id"]
        parts = [(t0 + 5, 40)] if name != "all_to_allv" else [(t0 + 5, 10), (t0 + 20, 7.25)]
        for ts, dur in parts:
            k = dict(n)
            k.update({"id": nid, "name": KERNEL[name], "ctrl_deps": launcher, "cat": "kernel",
                      "ph": "X", "ts": ts, "inclusive_dur": dur, "exclusive_dur": dur,
                      "stream": 7, "pg_name": n["attrs"][17]["value"]})
            gpu.append(k)
            nid += 1
    dump("chakra-rank%d.json" % rank, sorted(nodes + gpu, key=lambda n: n["id"]))


# ---- Chakra .et: protobuf by hand (et_def.proto's field numbers) ----
def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def field(num, wire, payload):
    key = varint(num << 3 | wire)
    if wire == 0:
        return key + varint(payload)
    return key + varint(len(payload)) + payload


def attr_pb(name, kind, value):
    """AttributeProto: name 1; int32_val 7, int64_val 9, uint64_val 13, string_val 29."""
    num = {"int32": 7, "int64": 9, "uint64": 13, "string": 29}[kind]
    body = value.encode() if kind == "string" else value
    return field(1, 2, name.encode()) + field(num, 2 if kind == "string" else 0, body)


def node_pb(nid, name, ntype, start, dur, attrs, parent=None):
    """Node: id 1, name 2, type 3, ctrl_deps 4 (packed), start_time_micros 6,
    duration_micros 7, inputs 8 (IOInfo), attr 10."""
    b = field(1, 0, nid) + field(2, 2, name.encode()) + field(3, 0, ntype)
    if parent is not None:
        b += field(4, 2, varint(parent))
    if start:
        b += field(6, 0, start)
    b += field(7, 0, dur)
    b += field(8, 2, field(1, 2, b"[]") + field(2, 2, b"[]") + field(3, 2, b"[]"))
    for a in attrs:
        b += field(10, 2, attr_pb(*a))
    return b


COMM_TYPE = {"allreduce": 0, "broadcast": 5, "all_to_allv": 6, "barrier": 9}
SIZE_OF = {"Float": 4, "BFloat16": 2, "Half": 2, "Long": 8, "Byte": 1}


def write_pb(rank, path=None, bad=None):
    """Rank's .et file; bad: what a hostile version changes (comm_type, comm_type_str,
    comm_size, pg_name, comm_dst)."""
    bad = bad or {}
    msgs = [field(1, 2, b"0.0.4") + field(2, 2, attr_pb("schema", "string", "1.1.1-chakra.0.0.4"))
            + field(2, 2, attr_pb("pid", "uint64", 4000 + rank))]
    msgs.append(node_pb(2, "[pytorch|profiler|execution_trace|thread]", 4, 0, 0, []))
    nid = 1000
    for o in ops(rank):
        oid, name, pg, seq, p2p, grank, dtype, n_in = o[:8]
        if name == "wait":
            continue  # the converter keeps no waits
        msgs.append(node_pb(oid, "record_param_comms", 4, 0, 3, [("is_cpu_op", "int32", 1)]))
        size = n_in * SIZE_OF[dtype]
        a = [("comm_size", "int64", bad.get("comm_size", size) if oid == 10 else size)]
        if name != "barrier":  # the barrier: of every rank, by no pg_name
            a.append(("pg_name", "string", bad.get("pg_name", pg) if oid == 10 else pg))
        if name in ("send", "recv"):
            peer = 0 if rank == 2 else 2
            a += [("comm_src", "int32", rank if name == "send" else peer),
                  ("comm_dst", "int32", bad.get("comm_dst", peer) if name == "send" else rank)]
            ntype = 5 if name == "send" else 6
        else:
            ctype = bad.get("comm_type", COMM_TYPE[name]) if oid == 10 else COMM_TYPE[name]
            a.insert(0, ("comm_type", "string", "0") if "comm_type_str" in bad and oid == 10
                     else ("comm_type", "int64", ctype))
            ntype = 7
        start = 1700000000 + 1000 * rank + oid
        msgs.append(node_pb(nid, KERNEL.get(name, "ncclDevKernel_AllReduce_barrier"), ntype, start,
                            40 + oid, a, parent=oid))
        nid += 1
    msgs.append(node_pb(nid, "aten::mm", 4, 0, 12, []))
    with open(path or "chakra.%d.et" % rank, "wb") as f:
        for m in msgs:
            f.write(varint(len(m)) + m)


def hostile(d):
    """The hostile .et files of tests/data/badinput.tsv, into directory d."""
    write_pb(0, d + "/et-type.0.et", {"comm_type": 12})
    write_pb(0, d + "/et-typestr.0.et", {"comm_type_str": True})
    write_pb(0, d + "/et-huge.0.et", {"comm_size": 1 << 62})
    write_pb(0, d + "/et-pg.0.et", {"pg_name": "7"})
    write_pb(2, d + "/et-peer.2.et", {"comm_dst": 9})
    write_pb(0, d + "/et-good.0.et")
    with open(d + "/et-good.0.et", "rb") as f:
        good = f.read()
    with open(d + "/et-trunc.0.et", "wb") as f:
        f.write(good[:300])
    with open(d + "/et-len.0.et", "wb") as f:  # a length of 2^32 - 1 after the metadata
        f.write(good[:good[0] + 1] + b"\xff\xff\xff\xff\x0f" + good[good[0] + 1:])
    with open(d + "/et-prefix.0.et", "wb") as f:  # a length prefix that never ends
        f.write(b"\xff\xff\xff")
    with open(d + "/et-nometa.0.et", "wb") as f:  # wire type 7 does not exist
        f.write(b"\x02\x0f\x0f")
    with open(d + "/et-groups.json", "w") as f:
        f.write('{"0": [0, 1, 2],\n "1": [2, "x"]}\n')


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--hostile":
        hostile(sys.argv[2])
        sys.exit(0)
    for r in range(3):
        write_et(r)
        write_linked(r)
        write_pb(r)
    with open("chakra-comm_group.json", "w") as f:
        json.dump({"0": [0, 1, 2], "1": [2, 0]}, f)
        f.write("\n")
