#!/usr/bin/env python3
"""Our own corpus networks: small transformer-style models written with onnx.helper and seeded
numpy weights, in the shapes that PyTorch/transformers exports take (the networks issue 12 found
failing): int64 token ids into an embedding Gather, LayerNorm expanded (ReduceMean/Sub/Pow/Sqrt/Div)
or as one op, MatMul attention with Softmax, scalar constants, Shape/Gather/Unsqueeze/Concat/Reshape
chains, Range position ids, Where/Expand masks, tied embeddings, and weights of equal bytes but
other types (zeros as float32 bias and as int64 ids).

write_all(folder) writes every model as <folder>/<name>.onnx (the same bytes each time) and returns
the folder. `python3 exports.py FOLDER` does the same from the shell.
"""

import pathlib
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP, helper, numpy_helper

VOCAB, HIDDEN, HEADS, SEQ, LAYERS = 64, 32, 2, 8, 2


class Graph:
    """Collects nodes and initializers; names are made unique with a counter."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.n = [], [], 0

    def name(self, base):
        self.n += 1
        return f"{base}_{self.n}"

    def const(self, value, base="c"):
        arr = np.asarray(value)
        name = self.name(base)
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def weight(self, shape, base="w", scale=0.1):
        return self.const((self.rng.standard_normal(shape) * scale).astype(np.float32), base)

    def op(self, op_type, inputs, base=None, **attrs):
        out = self.name(base or op_type.lower())
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], **attrs))
        return out

    def scalar(self, v, dtype=np.float32):
        return self.const(np.array(v, dtype=dtype), "scalar")

    def model(self, name, inputs, outputs, opset=17):
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="trtrace-corpus")
        m.ir_version = 8
        onnx.checker.check_model(m)
        return m


def layer_norm_expanded(g, x):
    mean = g.op("ReduceMean", [x], axes=[-1])
    d = g.op("Sub", [x, mean])
    var = g.op("ReduceMean", [g.op("Pow", [d, g.scalar(2.0)])], axes=[-1])
    std = g.op("Sqrt", [g.op("Add", [var, g.scalar(1e-5)])])
    y = g.op("Div", [d, std])
    return g.op("Add", [g.op("Mul", [y, g.weight([HIDDEN], "ln_g")]), g.weight([HIDDEN], "ln_b")])


def layer_norm_op(g, x):
    return g.op(
        "LayerNormalization", [x, g.weight([HIDDEN], "ln_g"), g.weight([HIDDEN], "ln_b")], axis=-1, epsilon=1e-12
    )


def dim(g, x, i):
    """Dimension i of x as a 1-element int64 tensor (Shape -> Gather scalar -> Unsqueeze)."""
    return g.op(
        "Unsqueeze",
        [g.op("Gather", [g.op("Shape", [x]), g.scalar(i, np.int64)], axis=0), g.const(np.array([0], np.int64))],
    )


def split_heads(g, x):
    shape = g.op("Concat", [dim(g, x, 0), dim(g, x, 1), g.const(np.array([HEADS, HIDDEN // HEADS], np.int64))], axis=0)
    return g.op("Transpose", [g.op("Reshape", [x, shape])], perm=[0, 2, 1, 3])


def attention(g, x, mask_add=None, causal_fill=None):
    q, k, v = (split_heads(g, g.op("MatMul", [x, g.weight([HIDDEN, HIDDEN], w)])) for w in ("wq", "wk", "wv"))
    kt = g.op("Transpose", [k], perm=[0, 1, 3, 2])
    s = g.op("Div", [g.op("MatMul", [q, kt]), g.scalar(np.sqrt(HIDDEN // HEADS))])
    if mask_add is not None:
        s = g.op("Add", [s, mask_add])
    if causal_fill is not None:  # GPT-2 style: the tril buffer sliced to [seq, seq], expanded, Where
        tril = g.const(np.tril(np.ones((SEQ, SEQ), bool))[None, None], "causal")
        n = dim(g, x, 1)
        ends = g.op("Concat", [n, n], axis=0)
        sliced = g.op("Slice", [tril, g.const(np.array([0, 0], np.int64)), ends, g.const(np.array([2, 3], np.int64))])
        mask = g.op("Expand", [sliced, g.op("Shape", [s])])
        s = g.op("Where", [mask, s, g.scalar(causal_fill)])
    p = g.op("Softmax", [s], axis=-1)
    o = g.op("Transpose", [g.op("MatMul", [p, v])], perm=[0, 2, 1, 3])
    merged = g.op(
        "Reshape", [o, g.op("Concat", [dim(g, x, 0), dim(g, x, 1), g.const(np.array([-1], np.int64))], axis=0)]
    )
    return g.op("MatMul", [merged, g.weight([HIDDEN, HIDDEN], "wo")])


def gelu_tanh(g, x):
    inner = g.op(
        "Mul",
        [
            g.scalar(np.sqrt(2 / np.pi)),
            g.op("Add", [x, g.op("Mul", [g.scalar(0.044715), g.op("Pow", [x, g.scalar(3.0)])])]),
        ],
    )
    return g.op("Mul", [g.op("Mul", [g.scalar(0.5), x]), g.op("Add", [g.scalar(1.0), g.op("Tanh", [inner])])])


def gelu_erf(g, x):
    e = g.op("Erf", [g.op("Div", [x, g.scalar(np.sqrt(2.0))])])
    return g.op("Mul", [g.op("Mul", [x, g.scalar(0.5)]), g.op("Add", [e, g.scalar(1.0)])])


def mlp(g, x, act):
    h = act(g, g.op("Add", [g.op("MatMul", [x, g.weight([HIDDEN, 4 * HIDDEN], "fc")]), g.weight([4 * HIDDEN], "fc_b")]))
    return g.op("Add", [g.op("MatMul", [h, g.weight([4 * HIDDEN, HIDDEN], "proj")]), g.weight([HIDDEN], "proj_b")])


def gpt2(seed=1, dynamic=False, fill=float(np.finfo(np.float32).min)):
    """GPT-2-like: token + Range position embeddings, pre-LN blocks (expanded LayerNorm), causal
    Where mask, tanh GELU, final LayerNorm, LM head tied to the token embedding (one initializer,
    used by Gather and, transposed, by MatMul)."""
    g = Graph(seed)
    wte = g.weight([VOCAB, HIDDEN], "wte")
    seq = g.op("Gather", [g.op("Shape", ["input_ids"]), g.scalar(1, np.int64)], axis=0)
    pos = g.op(
        "Unsqueeze",
        [g.op("Range", [g.scalar(0, np.int64), seq, g.scalar(1, np.int64)]), g.const(np.array([0], np.int64))],
    )
    x = g.op("Add", [g.op("Gather", [wte, "input_ids"]), g.op("Gather", [g.weight([SEQ, HIDDEN], "wpe"), pos])])
    for _ in range(LAYERS):
        x = g.op("Add", [x, attention(g, layer_norm_expanded(g, x), causal_fill=fill)])
        x = g.op("Add", [x, mlp(g, layer_norm_expanded(g, x), gelu_tanh)])
    logits = g.op("MatMul", [layer_norm_expanded(g, x), g.op("Transpose", [wte], perm=[1, 0])], "logits")
    ids_shape = ["batch", "seq"] if dynamic else [1, SEQ]
    return g.model(
        "gpt2_tiny",
        [helper.make_tensor_value_info("input_ids", TP.INT64, ids_shape)],
        [helper.make_tensor_value_info(logits, TP.FLOAT, ids_shape + [VOCAB])],
    )


def bert(seed=2):
    """BERT-like: word + token-type + position embeddings, post-LN blocks with the LayerNormalization
    op, additive attention mask from an int64 attention_mask input (Unsqueeze, Cast, Sub, Mul), erf
    GELU, pooler on token 0 (Gather with a scalar index drops a dimension) with Tanh."""
    g = Graph(seed)
    emb = g.op(
        "Add",
        [
            g.op("Gather", [g.weight([VOCAB, HIDDEN], "word"), "input_ids"]),
            g.op("Gather", [g.weight([2, HIDDEN], "type"), "token_type_ids"]),
        ],
    )
    x = layer_norm_op(g, g.op("Add", [emb, g.weight([1, SEQ, HIDDEN], "pos")]))
    m = g.op("Cast", [g.op("Unsqueeze", ["attention_mask", g.const(np.array([1, 2], np.int64))])], to=TP.FLOAT)
    mask_add = g.op("Mul", [g.op("Sub", [g.scalar(1.0), m]), g.scalar(-10000.0)])
    for _ in range(LAYERS):
        x = layer_norm_op(g, g.op("Add", [x, attention(g, x, mask_add=mask_add)]))
        x = layer_norm_op(g, g.op("Add", [x, mlp(g, x, gelu_erf)]))
    cls = g.op("Gather", [x, g.scalar(0, np.int64)], axis=1)
    pooled = g.op(
        "Tanh",
        [g.op("Add", [g.op("MatMul", [cls, g.weight([HIDDEN, HIDDEN], "pool")]), g.weight([HIDDEN], "pool_b")])],
        "pooled",
    )
    ids = [
        helper.make_tensor_value_info(n, TP.INT64, [1, SEQ]) for n in ("input_ids", "token_type_ids", "attention_mask")
    ]
    return g.model(
        "bert_tiny",
        ids,
        [
            helper.make_tensor_value_info(x, TP.FLOAT, [1, SEQ, HIDDEN]),
            helper.make_tensor_value_info(pooled, TP.FLOAT, [1, HIDDEN]),
        ],
    )


def scalars(seed=3):
    """0-d tensors: a scalar input, ReduceSum to a scalar, Reshape to shape [] (an empty int64
    initializer), a scalar Slice-free Squeeze, Expand of a scalar to a vector."""
    g = Graph(seed)
    total = g.op("ReduceSum", ["x", g.const(np.array([0], np.int64))], keepdims=0)
    s = g.op("Reshape", [g.op("Add", [total, "s"]), g.const(np.zeros([0], np.int64), "empty_shape")])
    v = g.op("Expand", [g.op("Mul", [s, g.scalar(0.5)]), g.const(np.array([4], np.int64))])
    y = g.op("Add", ["x", v], "y")
    return g.model(
        "scalars",
        [helper.make_tensor_value_info("x", TP.FLOAT, [4]), helper.make_tensor_value_info("s", TP.FLOAT, [])],
        [helper.make_tensor_value_info(y, TP.FLOAT, [4]), helper.make_tensor_value_info(s, TP.FLOAT, [])],
    )


def equal_bytes(seed=4):
    """Two initializers with identical bytes but other types and counts: 4,096 zero bytes as a
    float32 bias [1024] and as int64 Gather indices [512]."""
    g = Graph(seed)
    b = g.op("Add", ["x", g.const(np.zeros([1024], np.float32), "zero_bias")])
    picked = g.op("Gather", [b, g.const(np.zeros([512], np.int64), "zero_ids")], axis=0, base="y")
    return g.model(
        "equal_bytes",
        [helper.make_tensor_value_info("x", TP.FLOAT, [1024])],
        [helper.make_tensor_value_info(picked, TP.FLOAT, [512])],
    )


MODELS = {
    "gpt2_tiny": gpt2,
    "gpt2_tiny_dynamic": lambda: gpt2(dynamic=True),
    "gpt2_tiny_neginf_mask": lambda: gpt2(seed=5, fill=float("-inf")),
    "bert_tiny": bert,
    "scalars": scalars,
    "equal_bytes": equal_bytes,
}


def write_all(folder):
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, make in MODELS.items():
        blob = make().SerializeToString()
        path = folder / f"{name}.onnx"
        if not path.exists() or path.read_bytes() != blob:
            tmp = path.with_name(f".{path.name}.tmp")
            tmp.write_bytes(blob)
            tmp.replace(path)
    return folder


if __name__ == "__main__":
    print(write_all(sys.argv[1] if len(sys.argv) > 1 else "."))
