"""NodeProtos written and spliced as protobuf wire bytes.

Making a NodeProto object per emitted node, and copying every kept node into a new node
list, costs microseconds per node in Python. Here an emitted node is its serialized field,
and a graph's node list is rebuilt as bytes: the kept nodes are cut from the serialized graph in
runs, the new ones written in between, and the whole is parsed back in one call.
"""

from __future__ import annotations

from collections.abc import Sequence

import onnx

SMALL_VARINTS = [bytes([n]) for n in range(128)]
# Wire tags of NodeProto's fields (field number << 3 | 2: length-delimited).
INPUT_TAG, OUTPUT_TAG, NAME_TAG = b"\x0a", b"\x12", b"\x1a"
OP_TYPE_TAG, ATTRIBUTE_TAG, DOMAIN_TAG = b"\x22", b"\x2a", b"\x3a"
_NODE_FIELD = {onnx.GraphProto: 1, onnx.FunctionProto: 7}  # where each container keeps its nodes


def varint(number: int) -> bytes:
    """Protobuf's base-128 varint of a non-negative ``number``."""
    if number < 128:
        return SMALL_VARINTS[number]
    out = bytearray()
    while number >= 128:
        out.append((number & 0x7F) | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)


def length_prefixed(text: str) -> bytes:
    """A string as a length-delimited payload: its UTF-8 length as a varint, then the bytes."""
    encoded = text.encode()
    size = len(encoded)
    return (SMALL_VARINTS[size] if size < 128 else varint(size)) + encoded


def field(tag: bytes, payload: bytes) -> bytes:
    """One length-delimited field: tag, length, payload."""
    return tag + varint(len(payload)) + payload


def parsed_node(field_bytes: bytes) -> onnx.NodeProto:
    """The NodeProto in one node field of a graph or function (its tag, length and payload)."""
    container = onnx.FunctionProto() if field_bytes[0] >> 3 == _NODE_FIELD[onnx.FunctionProto] else onnx.GraphProto()
    container.ParseFromString(field_bytes)
    return container.node[0]


def node_tag(container: onnx.GraphProto | onnx.FunctionProto) -> bytes:
    """The wire tag a container's nodes are stored under."""
    return varint(_NODE_FIELD[type(container)] << 3 | 2)


def splice_nodes(
    container: onnx.GraphProto | onnx.FunctionProto,
    leading: list[onnx.NodeProto],
    replaced: dict[int, Sequence[onnx.NodeProto | bytes]],
    whole: bool = True,
    serialized: bytes | memoryview | None = None,
) -> None:
    """Rebuild ``container``'s nodes: ``leading`` first, then every node in order, node ``i``
    replaced by ``replaced[i]``: NodeProtos, or node fields as bytes (tag, length, payload).
    ``whole``: whether the container may be serialized whole to cut the kept nodes from;
    ``serialized``: the container's bytes as they are, where the caller has them."""
    field_number = _NODE_FIELD[type(container)]
    tag = node_tag(container)
    count = len(container.node)
    if serialized is None and whole:
        serialized = container.SerializeToString()
    spans = node_spans(serialized, field_number, count) if serialized is not None else None
    pieces = [field(tag, node.SerializeToString()) for node in leading]
    if spans is not None:
        data, starts, ends = spans
        data = memoryview(data)  # runs are cut without copying
        run_start = 0  # first node of the current run of kept nodes
        for index in sorted(replaced):
            if index > run_start:
                pieces.append(data[starts[run_start] : ends[index - 1]])
            for item in replaced[index]:
                pieces.append(item if isinstance(item, bytes) else field(tag, item.SerializeToString()))
            run_start = index + 1
        if run_start < count:
            pieces.append(data[starts[run_start] : ends[count - 1]])
    else:
        nodes = container.node
        for index in range(count):
            for item in replaced.get(index, (nodes[index],)):
                pieces.append(item if isinstance(item, bytes) else field(tag, item.SerializeToString()))
    container.ClearField("node")
    merge_in_chunks(container, pieces)


_CHUNK_BYTES = 1 << 22


def merge_in_chunks(message, pieces: Sequence[bytes | memoryview], chunk_bytes: int = _CHUNK_BYTES) -> None:
    """``message.MergeFromString(b"".join(pieces))`` for pieces that are each whole fields, a few
    MiB at a time (merging concatenated fields is merging each in turn): joined whole, the copy
    is fresh memory as large as the nodes, which costs its page faults."""
    batch: list[bytes | memoryview] = []
    size = 0
    for piece in pieces:
        batch.append(piece)
        size += len(piece)
        if size >= chunk_bytes:
            message.MergeFromString(batch[0] if len(batch) == 1 else b"".join(batch))
            batch, size = [], 0
    if batch:
        message.MergeFromString(b"".join(batch))


def node_spans(data: bytes, field_number: int, count: int) -> tuple[bytes, list[int], list[int]] | None:
    """A serialized container and where each of its ``count`` node fields starts and ends in
    it; None when they are not side by side (then they are serialized one by one)."""
    starts: list[int] = []
    node_key = field_number << 3 | 2  # one byte for both containers
    nodes_end = -1  # where the last node seen ends
    side_by_side = True
    position, size = 0, len(data)
    while position < size:
        key = data[position]
        if key == node_key:
            if starts and position != nodes_end:
                side_by_side = False
            starts.append(position)
            low = data[position + 1]
            if low < 128:
                position += 2 + low
            elif data[position + 2] < 128:  # a length of two bytes: most nodes
                position += 3 + ((low & 0x7F) | data[position + 2] << 7)
            else:
                length, position = read_varint(data, position + 1)
                position += length
            nodes_end = position
            if len(starts) == count:  # the container holds no more nodes: the rest is not read
                position = size
                break
            continue
        found = _field_at(data, position)
        if found is None:
            return None
        position = found[2]
    # The kept runs are cut whole, so the nodes must lie side by side with nothing between.
    if len(starts) != count or position != size or not side_by_side:
        return None
    return data, starts, starts[1:] + [nodes_end] if starts else []


def field_payload(data: bytes, field_number: int) -> memoryview | None:
    """The payload of the one length-delimited field ``field_number`` of a serialized message
    (the graph in a model's bytes), or None where it is absent or there twice."""
    found = None
    position, size = 0, len(data)
    while position < size:
        field = _field_at(data, position)
        if field is None:
            return None
        key, start, position = field
        if key == field_number << 3 | 2:
            if found is not None:
                return None
            found = (start, position)
    return memoryview(data)[found[0] : found[1]] if found is not None else None


def _field_at(data: bytes, position: int) -> tuple[int, int, int] | None:
    """The field starting at ``position``: its key, where its value starts and where it ends;
    None for a wire type protobuf no longer writes (groups)."""
    key, position = read_varint(data, position)
    wire_type = key & 7
    if wire_type == 2:
        length, start = read_varint(data, position)
        return key, start, start + length
    if wire_type == 0:
        return key, position, read_varint(data, position)[1]
    if wire_type == 5:
        return key, position, position + 4
    if wire_type == 1:
        return key, position, position + 8
    return None


def read_varint(data: bytes, position: int) -> tuple[int, int]:
    """The varint at ``position`` and the position after it."""
    byte = data[position]
    if byte < 128:
        return byte, position + 1
    number, shift = 0, 0
    while True:
        byte = data[position]
        position += 1
        number |= (byte & 0x7F) << shift
        if byte < 128:
            return number, position
        shift += 7
