"""The bounds on a catalog entry, each with the reason it is where it is: a GPU's hardware
(memory, bandwidths, compute, links, power) and a model's architecture (layers, shapes,
parameters). models.schema.limits holds the other limits on the instance.
"""

from models.schema.limits import STEP_OVERFLOW, Bound

# --- hardware ---------------------------------------------------------------------------

HBM_GIB = Bound(4096, "GiB", "14x the largest GPU memory shipped, 288 GB")
HBM_TB_S = Bound(
    100,
    "TB/s",
    "12x the fastest HBM shipped, 8 TB/s",
    low=0.01,
    low_open=False,
    low_why="10 GB/s, under one DDR4 channel (25 GB/s); the slowest GPU memory, an L4's, "
    "moves 0.3 TB/s; " + STEP_OVERFLOW,
)
TFLOPS = Bound(
    100_000,
    "TFLOPS",
    "7x the densest FP4 peak announced, about 15,000 TFLOPS",
    low=0.1,
    low_open=False,
    low_why="a CPU socket's matrix units reach a few TFLOPS, a T4 65; " + STEP_OVERFLOW,
)
SCALEUP_GB_S = Bound(
    10_000,
    "GB/s",
    "11x NVLink 5, 900 GB/s per direction",
    low=0.1,
    low_open=False,
    low_why="a PCIe 1.0 lane moves 0.25 GB/s; " + STEP_OVERFLOW,
)
KV_LINK_GB_S = Bound(
    SCALEUP_GB_S.high,
    "GB/s",
    SCALEUP_GB_S.why + "; at least 0.01 GB/s (80 Mbit/s), where a 1 GB prompt's KV already "
    "takes 100 s to move: far below it the figures underflow (1e-300 GB/s gave a TPOT of 0)",
    low=0.01,
    low_open=False,
)
SCALEOUT_GBIT_S = Bound(
    10_000,
    "Gbit/s",
    "12x the fastest NICs shipped, 800 Gbit/s",
    low=0.1,
    low_open=False,
    low_why="100 Mbit/s Ethernet; far below it a KV transfer or a cross-node all-reduce "
    "takes over 10^154 s",
)
GPUS_PER_NODE = Bound(
    1024, "GPUs", "announced scale-up domains reach 576 GPUs", low=1.0, low_open=False
)
POWER_W = Bound(10_000, "W", "7x the hungriest GPU board, about 1,400 W")
SM_COUNT = Bound(1024, "SMs", "7x the largest GPU's 148", low=1.0, low_open=False)

# --- model architecture -----------------------------------------------------------------

LAYERS = Bound(1024, "layers", "8x the deepest released LLM, 126 layers", low=1.0, low_open=False)
SHAPE = Bound(2**20, "", "4x the largest released shape, a vocabulary of 256,000", low_open=False)
PARAMS_B = Bound(100_000, "billion parameters", "50x the largest published model, about 2,000 B")
