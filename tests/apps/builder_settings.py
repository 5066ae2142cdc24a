#!/usr/bin/env python3
"""A real TensorRT-RTX client that sets every builder-config setting the Python API offers
(issue 24): optimization level, compute capabilities, runtime platform, tiling optimization level,
L2 limit for tiling, auxiliary streams, memory pool limits, preview features, flags, tactic
sources, profiling verbosity, timing iterations, default and per-layer device types, hardware
compatibility, the tactic limit, engine capability, DLA core, plugins to serialize, the build
route, a progress monitor, and three optimization profiles with shape ranges and an extra memory
target. Builds one network with a dynamic batch on the CPU and writes the engine to --out.

The values are chosen so that the build succeeds CPU-only and every setter is a recorded call;
each setter's effect on the engine is the library's business (the capture tests compare engines).
tests/convert/test_builder_settings.py checks that no setter of the spec is missing here.
"""

import argparse
import sys

import numpy as np
import tensorrt_rtx as trt
from app_common import save_engine


def network(builder):
    """x[-1, 8] (+ a constant) -> ReLU -> sum with y[-1, 8] -> output."""
    net = builder.create_network(0)
    x = net.add_input("x", trt.float32, (-1, 8))
    y = net.add_input("y", trt.float32, (-1, 8))
    c = net.add_constant((1, 8), trt.Weights(np.linspace(-1, 1, 8, dtype=np.float32).reshape(1, 8)))
    s = net.add_elementwise(x, c.get_output(0), trt.ElementWiseOperation.SUM)
    r = net.add_activation(s.get_output(0), trt.ActivationType.RELU)
    out = net.add_elementwise(r.get_output(0), y, trt.ElementWiseOperation.SUM).get_output(0)
    out.name = "out"
    net.mark_output(out)
    return net, r


class Progress(trt.IProgressMonitor):
    """A progress monitor that lets the build run to its end (an application callback object)."""

    def __init__(self):
        trt.IProgressMonitor.__init__(self)

    def phase_start(self, phase_name, parent_phase, num_steps):
        pass

    def step_complete(self, phase_name, step):
        return True

    def phase_finish(self, phase_name):
        pass


def configure(builder, config, layer):
    """Every setter, each once (some twice, so that a later value wins)."""
    config.reset()
    config.builder_optimization_level = 2
    config.num_compute_capabilities = 2
    config.set_compute_capability(trt.ComputeCapability.SM80, 0)
    config.set_compute_capability(trt.ComputeCapability.SM89, 1)
    config.runtime_platform = trt.RuntimePlatform.SAME_AS_BUILD
    config.tiling_optimization_level = trt.TilingOptimizationLevel.FAST
    config.l2_limit_for_tiling = 1 << 20
    config.max_aux_streams = 2
    config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, 1 << 28)
    config.set_memory_pool_limit(trt.MemoryPoolType.TACTIC_SHARED_MEMORY, 1 << 16)
    config.set_preview_feature(trt.PreviewFeature.RUNTIME_ACTIVATION_RESIZE_10_10, True)
    config.set_preview_feature(trt.PreviewFeature.ALIASED_PLUGIN_IO_10_03, False)
    config.set_flag(trt.BuilderFlag.DEBUG)
    config.clear_flag(trt.BuilderFlag.DEBUG)
    config.avg_timing_iterations = 2
    config.profiling_verbosity = trt.ProfilingVerbosity.DETAILED
    config.default_device_type = trt.DeviceType.GPU
    config.hardware_compatibility_level = trt.HardwareCompatibilityLevel.NONE
    config.max_num_tactics = 8
    config.set_tactic_sources(config.get_tactic_sources())
    config.flags = config.flags | (1 << int(trt.BuilderFlag.DEBUG))
    config.engine_capability = trt.EngineCapability.STANDARD
    config.DLA_core = 0
    config.set_device_type(layer, trt.DeviceType.GPU)
    config.reset_device_type(layer)
    config.plugins_to_serialize = []
    config.build_route = config.build_route
    config.progress_monitor = Progress()
    for batch in ((1, 2, 4), (4, 8, 16), (16, 24, 32)):  # three profiles, disjoint batch ranges
        profile = builder.create_optimization_profile()
        for name in ("x", "y"):
            profile.set_shape(name, (batch[0], 8), (batch[1], 8), (batch[2], 8))
        profile.extra_memory_target = 0.5
        assert config.add_optimization_profile(profile) >= 0, "profile rejected"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    builder = trt.Builder(trt.Logger(trt.Logger.WARNING))
    net, layer = network(builder)
    config = builder.create_builder_config()
    configure(builder, config, layer)
    engine = builder.build_serialized_network(net, config)
    return save_engine(engine, args.out, "engine")


if __name__ == "__main__":
    sys.exit(main())
