#!/usr/bin/env python3
"""Torch-TensorRT-RTX as a front end: PyTorch models compiled to TensorRT-RTX engines.

torch-tensorrt-rtx lowers a torch.export program and builds the network layer by layer through the
tensorrt_rtx Python API, then builds it with Builder.build_serialized_network: the calls our shim
records. This app compiles each --model (random weights: nothing is downloaded) with
torch_tensorrt.dynamo.convert_exported_program_to_serialized_trt_engine and writes its engine to
--out (several models: --out0, --out1, ..., in the order given, as the player names them).
Model i's weights come from torch.manual_seed(--seed + i): `--model B --seed 1` builds the
same engine as the second of `--model A --model B`.

Runs with .deps/venv-torch's Python (tools/requirements-torch.txt). TensorRT-RTX builds engines
without a GPU; Torch-TensorRT-RTX asks the GPU only these questions, answered here for a CPU-only
build (cpu_only_device_answers):
  - torch.cuda.get_device_capability / get_device_properties / get_device_name / current_device /
    device_count / mem_get_info: the target device's capability and memory (import time and the
    build settings). Answered as one device of compute capability --sm (default 8.9) and 16 GiB.
  - tensorrt_rtx.Runtime.deserialize_cuda_engine, which Torch-TensorRT-RTX calls on the built
    engine to read its I/O aliasing and serialize it again: deserializing needs a driver. Answered
    with the serialized engine itself (no aliased outputs, as for these models).
Neither changes a network-build call: the network, the builder config and the build are the
library's, recorded and replayed as any app's. Without these answers the import fails with
"Found no NVIDIA driver on your system".
"""

import argparse
import sys
import types

import torch

SIZE = 64  # input height and width: small, so the CPU-only builds stay short


def cpu_only_device_answers(sm):
    """Answers torch's CUDA device queries as one device of compute capability `sm` (see above)."""
    major, minor = (int(p) for p in sm.split("."))
    props = types.SimpleNamespace(
        name="CPU-only build (no GPU)",
        major=major,
        minor=minor,
        total_memory=16 << 30,
        multi_processor_count=1,
        uuid="00000000-0000-0000-0000-000000000000",
    )
    torch.cuda.get_device_capability = lambda device=None: (major, minor)
    torch.cuda.get_device_properties = lambda device=None: props
    torch.cuda.get_device_name = lambda device=None: props.name
    torch.cuda.current_device = lambda: 0
    torch.cuda.device_count = lambda: 1
    torch.cuda.mem_get_info = lambda device=None: (props.total_memory, props.total_memory)


class SerializedEngine:
    """What Torch-TensorRT-RTX reads of a deserialized engine, from its serialization alone."""

    def __init__(self, blob):
        self.blob = bytes(blob)

    def serialize(self):
        return self.blob

    def get_aliased_input_tensor(self, name):
        return None


class CpuOnlyRuntime:
    def __init__(self, logger):
        pass

    def deserialize_cuda_engine(self, blob):
        return SerializedEngine(blob)


def cpu_only_engine_reading():
    """Torch-TensorRT-RTX's interpreter deserializes the engine it built (see above): its module sees
    a tensorrt_rtx whose Runtime is CpuOnlyRuntime, every other name being the real module's."""
    from torch_tensorrt.dynamo.conversion import _TRTInterpreter as interp

    real = interp.trt

    class TrtWithCpuRuntime(types.ModuleType):
        Runtime = CpuOnlyRuntime

        def __getattr__(self, name):
            return getattr(real, name)

    interp.trt = TrtWithCpuRuntime(real.__name__)


def resnet18():
    import torchvision

    return torchvision.models.resnet18(weights=None)


def mobilenet_v3_small():
    import torchvision

    return torchvision.models.mobilenet_v3_small(weights=None)


def shufflenet_v2_x0_5():
    import torchvision

    return torchvision.models.shufflenet_v2_x0_5(weights=None)


def timm_model(name):
    def make():
        import timm

        return (
            timm.create_model(name, pretrained=False, img_size=SIZE)
            if "vit" in name
            else timm.create_model(name, pretrained=False)
        )

    return make


MODELS = {
    "resnet18": resnet18,  # torchvision: conv, batch norm, pooling
    "mobilenet_v3_small": mobilenet_v3_small,  # torchvision: depthwise, squeeze-excite, hardswish
    "shufflenet_v2_x0_5": shufflenet_v2_x0_5,  # torchvision: channel shuffle (permutation), concat
    "timm_vit_tiny": timm_model("vit_tiny_patch16_224"),  # timm: attention, layer norm, GELU
    "timm_convnext_atto": timm_model("convnext_atto"),  # timm: depthwise 7x7, layer norm over channels
}


def compile_model(name, seed):
    import torch_tensorrt

    torch.manual_seed(seed)
    model = MODELS[name]().eval()
    x = torch.randn(1, 3, SIZE, SIZE)
    program = torch.export.export(model, (x,))
    return torch_tensorrt.dynamo.convert_exported_program_to_serialized_trt_engine(
        program, arg_inputs=[x], min_block_size=1
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="engine file (several models: OUT0, OUT1, ...)")
    ap.add_argument("--list", action="store_true", help="print the model names, one per line, and exit")
    ap.add_argument("--model", action="append", choices=sorted(MODELS), help="repeatable; default resnet18")
    ap.add_argument("--sm", default="8.9", help="compute capability the device queries answer")
    ap.add_argument("--seed", type=int, default=0, help="weights of model i: torch.manual_seed(SEED + i)")
    ap.add_argument(
        "--heap-shift",
        type=int,
        default=0,
        help="hold a malloc'd block of this many bytes during the builds: another heap layout for "
        "the same builds (the corpus runner's nondeterminism check)",
    )
    args = ap.parse_args()
    if args.list:
        print("\n".join(sorted(MODELS)))
        return 0
    if not args.out:
        ap.error("--out is required")
    shift = bytearray(args.heap_shift)  # noqa: F841  (> 512 bytes: from malloc's heap)
    models = args.model or ["resnet18"]
    cpu_only_device_answers(args.sm)
    cpu_only_engine_reading()
    for i, name in enumerate(models):
        engine = compile_model(name, seed=args.seed + i)
        path = args.out if len(models) == 1 else f"{args.out}{i}"
        with open(path, "wb") as f:
            f.write(engine)
        print(f"{name}: built, {len(engine)} bytes -> {path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
