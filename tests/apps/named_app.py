"""A small network whose layer and tensor names are chosen by the caller, and read back: the
export tests give it names that are Python code, quotes, backslashes and non-ASCII text (a real
app parsing a hostile ONNX model passes such names on as they are).

    named_app.py ENGINE benign|hostile
"""

import sys

import numpy as np
import tensorrt_rtx as trt

HOSTILE = [
    "x\nimport os; os.system('touch PWNED')\n#",  # a newline ends a comment; the rest would run
    '"""\nraise SystemExit(3)\n"""',  # ends a docstring or a triple-quoted literal
    "back\\slash\\",  # ends in an escape
    "\r\x0c\x1b[31m\t'''",  # other line ends, a terminal escape, quotes
    "\u00e9\u2028\U0001f600 \\N{BULLET} {0} %s",  # non-ASCII, a line separator, format fields
    'a\\x41\\u0041"',  # escapes spelt out
]
BENIGN = [f"name{i}" for i in range(len(HOSTILE))]

names = HOSTILE if sys.argv[2] == "hostile" else BENIGN
logger = trt.Logger(trt.Logger.WARNING)
builder = trt.Builder(logger)
network = builder.create_network(0)
x = network.add_input(names[0], trt.float32, (1, 4))
w = network.add_constant((1, 4), np.arange(4, dtype=np.float32))
w.name = names[1]
w.get_output(0).name = names[5]
add = network.add_elementwise(x, w.get_output(0), trt.ElementWiseOperation.SUM)
add.name = names[2]
act = network.add_activation(add.get_output(0), trt.ActivationType.RELU)
act.name = names[3]
out = act.get_output(0)
out.name = names[4]
network.mark_output(out)
assert (act.name, out.name, x.name) == (names[3], names[4], names[0])  # read back: comments in build.py
config = builder.create_builder_config()
engine = builder.build_serialized_network(network, config)
assert engine is not None, "build failed"
with open(sys.argv[1], "wb") as f:
    f.write(engine)
