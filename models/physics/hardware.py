"""GPU specifications: one frozen record per GPU type, units in field names."""

from pydantic import BaseModel, ConfigDict, Field, model_validator

from models.physics.precision import Precision
from models.schema.quantities import (
    Dwpd,
    EfficiencyFraction,
    GpusPerNode,
    HbmGib,
    HbmTbS,
    HostLinkGbS,
    HostMemoryGib,
    NvmeGbS,
    NvmeTb,
    PowerW,
    ScaleoutGbitS,
    ScaleupGbS,
    SmCount,
    StartTimeS,
    Tflops,
    UsdPerGpuHour,
    WarrantyYears,
)


class DenseTflops(BaseModel):
    """Dense tensor-core peak TFLOPS per precision; None where the hardware lacks it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    bf16: Tflops
    """Dense BF16 tensor TFLOPS (never the 'with sparsity' figure)."""
    fp8: Tflops | None = None
    """Dense FP8 tensor TFLOPS, or None when the GPU has no FP8 tensor cores."""
    fp4: Tflops | None = None
    """Dense FP4 tensor TFLOPS, or None when the GPU has no FP4 tensor cores."""

    def for_precision(self, precision: Precision) -> float | None:
        """Peak TFLOPS for math in `precision`, or None when unsupported."""
        return {Precision.BF16: self.bf16, Precision.FP8: self.fp8, Precision.FP4: self.fp4}[
            precision
        ]


class GpuSpec(BaseModel):
    """One GPU type as the physics sees it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """Catalog key, e.g. `h100-sxm`."""
    display_name: str = ""
    """Human name, e.g. `NVIDIA H100 SXM5 80GB`."""
    hbm_gib: HbmGib
    """Device memory in GiB."""
    hbm_tb_s: HbmTbS
    """Peak memory bandwidth in TB/s (1e12 bytes/s)."""
    dense_tflops: DenseTflops
    """Dense tensor TFLOPS per precision."""
    scaleup_gb_s: ScaleupGbS
    """Scale-up link bandwidth per GPU, one direction, GB/s (NVLink, Infinity Fabric, PCIe)."""
    gpus_per_node: GpusPerNode
    """GPUs in one scale-up domain."""
    scaleout_gbit_s: ScaleoutGbitS
    """Scale-out NIC bandwidth per GPU, Gbit/s."""
    sm_count: SmCount | None = None
    """Streaming multiprocessors: what a communication kernel that holds some leaves the
    compute overlapped with it (`models.physics.overlap`); None: not stated, no share
    taken."""
    tdp_w: PowerW
    """Board power, W."""
    price_per_gpu_hour: UsdPerGpuHour
    """Default price, USD per GPU-hour; regions override it."""
    replica_start_s: StartTimeS = 300.0
    """Seconds for a replica to load and become ready."""
    host_memory_gib_per_gpu: HostMemoryGib | None = None
    """Host DRAM per GPU given to the KV cache as a tier, GiB; default: no DRAM tier."""
    host_link_gb_s: HostLinkGbS | None = None
    """Host-to-GPU bandwidth per GPU, one direction, GB/s (PCIe or C2C); default:
    `models.physics.kv_tiers.PCIE_GEN5_X16_GB_S`."""
    nvme_tb_per_node: NvmeTb | None = None
    """Local NVMe per node given to the KV cache as a tier, TB (1e12 bytes); default:
    no SSD tier."""
    nvme_gb_s_per_node: NvmeGbS | None = None
    """Sequential read bandwidth of the node's NVMe drives together, GB/s."""
    nvme_dwpd: Dwpd | None = None
    """Rated drive writes per day over the warranty (endurance)."""
    nvme_warranty_years: WarrantyYears = 5.0
    """Warranty the DWPD rating holds over, years."""
    server: str | None = Field(default=None, min_length=1, max_length=64)
    """The server the catalog's `server_*` figures describe (`NVIDIA DGX H100`); None
    where no sourced server is catalogued."""
    server_host_memory_gib_per_gpu: HostMemoryGib | None = None
    """That server's system memory over its GPUs, GiB: the DRAM tier's default."""
    server_nvme_tb_per_node: NvmeTb | None = None
    """That server's local NVMe data drives together, TB: the SSD tier's default."""
    server_nvme_gb_s_per_node: NvmeGbS | None = None
    """Those drives' sequential read bandwidth together, GB/s (None: no sourced figure)."""
    server_nvme_dwpd: Dwpd | None = None
    """Those drives' rated drive writes per day (None: no sourced figure)."""
    kv_tiers_from_server: bool = False
    """Take each KV-tier field left unset from the catalogued server's figures
    (`server_*`). Off by default: an instance's GPU holds KV in HBM alone unless it
    declares tiers (offloading needs an engine set up for it), so plans do not move."""
    efficiency_like: str | None = Field(default=None, min_length=1, max_length=64)
    """A catalog GPU with calibration rows whose efficiency factors this GPU borrows
    (`h100-sxm`, `b200`, ...): for a GPU with no calibration rows of its own (an inline
    GPU, MI300X). Default: its own rows, else the pooled fit. Reports flag borrowed
    factors."""
    scaleup_fraction: EfficiencyFraction | None = None
    """Measured fraction of `scaleup_gb_s` a ring all-reduce achieves on this GPU's link
    (nccl-tests bus bandwidth / the link), for a GPU on borrowed efficiencies whose link
    is not the lender's: it replaces the borrowed `Efficiency.scaleup_fraction`. None:
    the calibrated or borrowed one."""
    sources: dict[str, str] = Field(default_factory=dict)
    """Where each number comes from, by field name."""

    @model_validator(mode="before")
    @classmethod
    def _server_tiers(cls, data: object) -> object:
        """With `kv_tiers_from_server`, the unset tier fields take the server's figures."""
        if not isinstance(data, dict) or not data.get("kv_tiers_from_server"):
            return data
        filled = dict(data)
        for field in SERVER_TIER_FIELDS:
            if filled.get(field) is None and filled.get(f"server_{field}") is not None:
                filled[field] = filled[f"server_{field}"]
        return filled

    @property
    def hbm_bytes(self) -> float:
        """Device memory in bytes."""
        return self.hbm_gib * 2**30

    @property
    def hbm_bytes_per_s(self) -> float:
        """Peak memory bandwidth in bytes/s."""
        return self.hbm_tb_s * 1e12

    @property
    def scaleup_bytes_per_s(self) -> float:
        """Scale-up bandwidth per GPU per direction in bytes/s."""
        return self.scaleup_gb_s * 1e9

    @property
    def scaleout_bytes_per_s(self) -> float:
        """Scale-out NIC bandwidth per GPU in bytes/s."""
        return self.scaleout_gbit_s * 1e9 / 8

    def supports(self, precision: Precision) -> bool:
        """Whether the GPU has tensor cores for `precision`."""
        return self.dense_tflops.for_precision(precision) is not None

    def peak_flops(self, precision: Precision) -> float:
        """Dense peak FLOP/s for `precision`; raises ValueError when unsupported."""
        tflops = self.dense_tflops.for_precision(precision)
        if tflops is None:
            raise ValueError(f"{self.name} has no {precision} tensor cores")
        return tflops * 1e12

    def with_server_tiers(self) -> tuple["GpuSpec", tuple[str, ...]]:
        """This GPU with each unset KV-tier field (`SERVER_TIER_FIELDS`) taken from its
        catalogued server, and the fields so taken (empty: none unset had a figure)."""
        taken = {
            field: getattr(self, f"server_{field}")
            for field in SERVER_TIER_FIELDS
            if getattr(self, field) is None and getattr(self, f"server_{field}") is not None
        }
        return (self.model_copy(update=taken) if taken else self), tuple(taken)


SERVER_TIER_FIELDS = (
    "host_memory_gib_per_gpu",
    "nvme_tb_per_node",
    "nvme_gb_s_per_node",
    "nvme_dwpd",
)
"""The KV-tier fields a catalogued server's `server_*` figures fill by default."""
