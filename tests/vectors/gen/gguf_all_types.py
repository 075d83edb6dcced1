# Writes tests/vectors/gguf_all_types.gguf and gguf_all_types.json: a GGUF v3
# file with every metadata value type (nested arrays included), a custom
# alignment and two tensors, built with nothing but Python's struct module
# (independent of modelhost's writer), plus the values it holds.
# Run: /usr/bin/python3 tests/vectors/gen/gguf_all_types.py
import json, os, struct

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/vectors
T = dict(UINT8=0, INT8=1, UINT16=2, INT16=3, UINT32=4, INT32=5, FLOAT32=6, BOOL=7,
         STRING=8, ARRAY=9, UINT64=10, INT64=11, FLOAT64=12)
FMT = {0: '<B', 1: '<b', 2: '<H', 3: '<h', 4: '<I', 5: '<i', 6: '<f', 7: '<?',
       10: '<Q', 11: '<q', 12: '<d'}

def s(x):
    b = x.encode('utf-8')
    return struct.pack('<Q', len(b)) + b

def val(t, v):
    if t == T['STRING']:
        return s(v)
    if t == T['ARRAY']:
        et, items = v
        return struct.pack('<IQ', et, len(items)) + b''.join(val(et, i) for i in items)
    return struct.pack(FMT[t], v)

def jsonable(t, v):
    """The expected value: 64-bit ints as {"bigint": "..."}; arrays as {type, items}."""
    if t in (T['UINT64'], T['INT64']):
        return {'bigint': str(v)}
    if t == T['FLOAT32']:
        return struct.unpack('<f', struct.pack('<f', v))[0]
    if t == T['ARRAY']:
        et, items = v
        return {'type': et, 'items': [jsonable(et, i) for i in items]}
    return v

kvs = [
    ('general.architecture', T['STRING'], 'llama'),
    ('general.alignment', T['UINT32'], 64),
    ('test.u8', T['UINT8'], 255),
    ('test.i8', T['INT8'], -128),
    ('test.u16', T['UINT16'], 65535),
    ('test.i16', T['INT16'], -32768),
    ('test.u32', T['UINT32'], 4294967295),
    ('test.i32', T['INT32'], -2147483648),
    ('test.f32', T['FLOAT32'], 0.1),
    ('test.bool_true', T['BOOL'], True),
    ('test.bool_false', T['BOOL'], False),
    ('test.string', T['STRING'], 'héllo ☃ 𝄞 "q" \\ \n'),
    ('test.empty_string', T['STRING'], ''),
    ('test.u64', T['UINT64'], 18446744073709551615),
    ('test.i64', T['INT64'], -9223372036854775808),
    ('test.f64', T['FLOAT64'], 0.1),
    ('test.arr_u8', T['ARRAY'], (T['UINT8'], [0, 1, 255])),
    ('test.arr_i8', T['ARRAY'], (T['INT8'], [-1, 127])),
    ('test.arr_u16', T['ARRAY'], (T['UINT16'], [1, 65535])),
    ('test.arr_i16', T['ARRAY'], (T['INT16'], [-2, 300])),
    ('test.arr_u32', T['ARRAY'], (T['UINT32'], [7, 4000000000])),
    ('test.arr_i32', T['ARRAY'], (T['INT32'], [-7, 7])),
    ('test.arr_f32', T['ARRAY'], (T['FLOAT32'], [1.5, -0.25, 3.4028234663852886e38])),
    ('test.arr_bool', T['ARRAY'], (T['BOOL'], [True, False, True])),
    ('test.arr_str', T['ARRAY'], (T['STRING'], ['a', '', 'Ġthe', '日本', '🙂'])),
    ('test.arr_u64', T['ARRAY'], (T['UINT64'], [0, 18446744073709551615])),
    ('test.arr_i64', T['ARRAY'], (T['INT64'], [-5, 9007199254740993])),
    ('test.arr_f64', T['ARRAY'], (T['FLOAT64'], [0.1, -1e300])),
    ('test.arr_empty', T['ARRAY'], (T['INT32'], [])),
    ('test.arr_nested', T['ARRAY'], (T['ARRAY'], [(T['UINT8'], [1, 2]), (T['STRING'], ['x']), (T['ARRAY'], [(T['INT16'], [-3])])])),
]

tensors = [
    # name, ggml dims, ggml type, raw bytes
    ('a.weight', [3, 2], 0, struct.pack('<6f', 1, 2, 3, 4, 5, 6)),
    ('q.weight', [32], 8, struct.pack('<e', 0.5) + bytes(range(-16 & 255, 256)) + bytes(range(0, 16))),
]
ALIGN = 64

head = b'GGUF' + struct.pack('<IQQ', 3, len(tensors), len(kvs))
for k, t, v in kvs:
    head += s(k) + struct.pack('<I', t) + val(t, v)
offset = 0
datas = []
for name, dims, gt, raw in tensors:
    head += s(name) + struct.pack('<I', len(dims)) + b''.join(struct.pack('<Q', d) for d in dims)
    head += struct.pack('<IQ', gt, offset)
    datas.append((offset, raw))
    offset += (len(raw) + ALIGN - 1) // ALIGN * ALIGN
data_offset = (len(head) + ALIGN - 1) // ALIGN * ALIGN
out = bytearray(head + bytes(data_offset - len(head)))
for off, raw in datas:
    out += bytes(data_offset + off - len(out)) + raw
out += bytes(-len(out) % ALIGN)  # like gguf-py and ggml, pad after the last tensor too
with open(os.path.join(HERE, 'gguf_all_types.gguf'), 'wb') as f:
    f.write(out)
expected = {
    'data_offset': data_offset,
    'alignment': ALIGN,
    'file_size': len(out),
    'metadata': [{'key': k, 'type': t, 'value': jsonable(t, v)} for k, t, v in kvs],
    'tensors': [{'name': n, 'dims': d, 'ggml_type': gt, 'offset': off, 'hex': raw.hex()}
                for (n, d, gt, raw), (off, _) in zip(tensors, datas)],
}
with open(os.path.join(HERE, 'gguf_all_types.json'), 'w') as f:
    json.dump(expected, f, indent=1, ensure_ascii=False)
print('wrote', len(out), 'bytes; data offset', data_offset)
