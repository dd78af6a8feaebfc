"""`perf`'s flags as one validated record, and the library objects they describe.

`PerfRequest` holds every flag of `perf` under its parameter name. Each numeric flag
was checked alone as it was parsed (finite, within its bound in models/schema/limits.py or
flag_limits.py: `cli.options.within` on its declaration). Building the record checks the
rules that tie flags together (a p99 at least its mean, a prefix within the prompt, one
load mode, one drafter, speculation without a load); each broken rule is an `InputError`
naming the flag, so the command exits 2. The catalog lookups (GPU, model, engine) and the layout
check run when the objects are asked for (`gpu_spec`, `llm`, `replica_config`,
`efficiency_source`), each naming its flag too.
"""

from dataclasses import dataclass, replace
from enum import StrEnum
from functools import cached_property
from pathlib import Path

import typer

from cli.perf_speculative import speculation_from_flags
from models.io.hf_config import HfConfigError, load_hf_config, precision_in_file
from models.physics import catalog
from models.physics.efficiency import (
    EfficiencySource,
    UnknownEngine,
    check_engine,
    engine_family,
)
from models.physics.efficiency import efficiency_source as engine_source
from models.physics.hardware import GpuSpec
from models.physics.llm import LlmSpec
from models.physics.memory import layout_problem
from models.physics.overlap import engine_layout_problem
from models.physics.precision import Precision
from models.physics.speculative import Speculation
from models.schema.errors import InputError, Issue
from models.schema.traffic import TokenDistribution
from models.serving.closed_loop import FIXED, LengthSpread
from models.serving.replica import LatencyTargets, ReplicaConfig, Role, TrafficMix, replica_of_pool

WHERE = "command line"
"""Where a flag's problem is, in an `Issue`."""

TIER_FLAGS = ("host_memory_gib_per_gpu", "nvme_tb_per_node", "nvme_gb_s_per_node", "nvme_dwpd")
"""The KV-tier flags, named as the catalog GPU's fields they replace."""


PAIR_LAYOUT_FLAGS = tuple(
    f"{side}_{part}" for side in ("prefill", "decode") for part in ("tp", "pp", "ep", "dp")
)
"""A disaggregated pair's per-side layout flags; each defaults to the shared one."""


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def problem(flag: str, message: str) -> InputError:
    """One flag's problem as an input error (exit 2)."""
    return InputError([Issue(WHERE, None, flag, message)])


class Arrivals(StrEnum):
    """How `--concurrency` users arrive (`perf --help` says which is the default and why)."""

    BURST = "burst"
    STEADY = "steady"


@dataclass(frozen=True)
class PerfRequest:
    """Every flag of `perf`, by its parameter name, checked together on construction.

    Raises:
        InputError: flags that disagree, naming the flag.
        typer.BadParameter: both --json and --markdown.
    """

    gpu: str
    input_tokens: float
    output_tokens: float
    precision: Precision | None = None
    """--precision as given; the checkpoint's or bf16 when not (set on construction,
    never None after: `_weights_precision`)."""
    kv_precision: Precision | None = None
    tp: int = 1
    pp: int = 1
    ep: int = 1
    redundant_experts: int = 0
    dp: int = 1
    role: Role = Role.UNIFIED
    input_p99_tokens: float | None = None
    output_p99_tokens: float | None = None
    prefix_cache_hit_rate: float = 0.0
    ttft_p99_ms: float | None = None
    tpot_p99_ms: float | None = None
    pool_replicas: int = 1
    sweep: bool = False
    rate: float | None = None
    concurrency: float | None = None
    arrivals: Arrivals | None = None
    """--arrivals as given; burst when not (set on construction, never None after)."""
    prefix_tokens: float | None = None
    prefix_share: float = 1.0
    prefix_affinity: bool = False
    kv_tiers: bool = False
    host_memory_gib_per_gpu: float | None = None
    nvme_tb_per_node: float | None = None
    nvme_gb_s_per_node: float | None = None
    nvme_dwpd: float | None = None
    as_json: Path | None = None
    as_markdown: bool = False
    model: str | None = None
    model_config: Path | None = None
    speculative_tokens: int | None = None
    acceptance_rate: float | None = None
    draft_model: str | None = None
    draft_cost_ratio: float | None = None
    engine: str | None = None
    prefill_workers: int | None = None
    decode_workers: int | None = None
    prefill_tp: int | None = None
    prefill_pp: int | None = None
    prefill_ep: int | None = None
    prefill_dp: int | None = None
    decode_tp: int | None = None
    decode_pp: int | None = None
    decode_ep: int | None = None
    decode_dp: int | None = None
    kv_link_gb_s: float | None = None
    random_range_ratio: float | None = None
    length_cv: float | None = None

    def _weights_precision(self) -> Precision:
        """--precision; without it the precision --model-config's checkpoint is stored in
        (an FP8 release read as bf16 held twice the weights and half the KV room), said on
        stderr; else bf16."""
        if self.precision is not None:
            return self.precision
        stored = None if self.model_config is None else precision_in_file(str(self.model_config))
        if stored is None:
            return Precision.BF16
        typer.echo(
            f"note: weights at {stored}, as {self.model_config}'s quantization_config "
            "stores them (--precision to model another)",
            err=True,
        )
        return stored

    def __post_init__(self) -> None:
        if self.as_json and self.as_markdown:
            raise typer.BadParameter("give --json or --markdown, not both", param_hint="--markdown")
        if (self.model is None) == (self.model_config is None):
            raise problem("--model", "give either --model NAME or --model-config FILE")
        if self.arrivals is not None and self.concurrency is None:
            raise problem("--arrivals", "says how --concurrency users arrive: give --concurrency")
        object.__setattr__(self, "arrivals", self.arrivals or Arrivals.BURST)
        object.__setattr__(self, "precision", self._weights_precision())
        self._check_lengths()
        self._check_prefix()
        self._check_dependents()
        self._check_pair()
        self._check_spread()
        if self.speculation is not None and self.role is Role.PREFILL:
            raise problem(
                "--role",
                "a prefill replica decodes nothing, so it does not speculate: drop --role "
                "prefill or the speculative flags",
            )
        if self.speculation is not None and self.load_asked:
            raise problem(
                "--rate/--concurrency",
                "the latency at a load runs plain decoding: drop --rate/--concurrency or the "
                "speculative flags",
            )
        if self.rate is not None and self.concurrency is not None:
            raise problem("--rate/--concurrency", "give one of them, not both")
        concurrency = self.concurrency
        if (
            self.arrivals is Arrivals.BURST
            and concurrency is not None
            and concurrency != int(concurrency)
        ):
            raise problem(
                "--concurrency",
                f"{concurrency:g} users: a burst replays whole users (or use --arrivals steady)",
            )

    def _check_pair(self) -> None:
        """A disaggregated pair: both worker counts, a concurrency, at least two output
        tokens, and none of the flags that describe one replica."""
        side_flags = [name for name in PAIR_LAYOUT_FLAGS if getattr(self, name) is not None]
        if self.kv_link_gb_s is not None:
            side_flags.append("kv_link_gb_s")
        if self.prefill_workers is None and self.decode_workers is None:
            if side_flags:
                raise problem(
                    _flag(side_flags[0]),
                    "describes a disaggregated pair: give --prefill-workers and --decode-workers",
                )
            return
        for name, other in (("prefill_workers", "--decode-workers"),
                            ("decode_workers", "--prefill-workers")):  # fmt: skip
            if getattr(self, name) is None:
                raise problem(_flag(name), f"a pair needs both worker counts: give it with {other}")
        if self.concurrency is None:
            raise problem(
                "--concurrency",
                "a disaggregated pair is asked at a concurrency: give --concurrency",
            )
        if self.output_tokens < 2:
            raise problem(
                "--output-tokens", "a pair decodes on its decode workers: at least 2 tokens"
            )
        alone = (
            ("--role", self.role is not Role.UNIFIED),
            ("--pool-replicas", self.pool_replicas != 1),
            ("--sweep", self.sweep),
            ("--prefix-affinity", self.prefix_affinity),
            ("--kv-tiers", self.kv_tiers),
            ("--ttft-p99-ms", self.ttft_p99_ms is not None),
            ("--tpot-p99-ms", self.tpot_p99_ms is not None),
        )
        for flag, given in alone:
            if given:
                raise problem(flag, "describes one replica, not a disaggregated pair: drop it")

    def _check_spread(self) -> None:
        """A length spread describes the tools' burst of one replica: one of the two
        flags, with --concurrency and --arrivals burst, not a pair."""
        given = [
            flag
            for flag, value in (
                ("--random-range-ratio", self.random_range_ratio),
                ("--length-cv", self.length_cv),
            )
            if value is not None
        ]
        if not given:
            return
        if len(given) > 1:
            raise problem(given[1], f"give {given[0]} or {given[1]}, not both")
        if self.concurrency is None or self.arrivals is not Arrivals.BURST:
            raise problem(
                given[0],
                "spreads the lengths of the tools' burst: give it with --concurrency "
                "(--arrivals burst)",
            )
        if self.disaggregated:
            raise problem(given[0], "a disaggregated pair's burst replays fixed lengths: drop it")

    def _check_lengths(self) -> None:
        """Each p99 at least its mean."""
        problems = [
            Issue(WHERE, None, flag, f"must be at least the mean ({mean:g})")
            for flag, p99, mean in (
                ("--input-p99-tokens", self.input_p99_tokens, self.input_tokens),
                ("--output-p99-tokens", self.output_p99_tokens, self.output_tokens),
            )
            if p99 is not None and p99 < mean
        ]
        if problems:
            raise InputError(problems)

    def _check_dependents(self) -> None:
        """A flag that only refines another is refused without it, never ignored: the
        KV-tier figures size tiers that --kv-tiers (or a declared prefix) asks for, and
        --prefix-share and --prefix-affinity describe --prefix-tokens (each changed
        nothing alone, exit 0); a prefill replica has no TPOT to hold (--role prefill
        --tpot-p99-ms 0.001 printed the capacity without it, the target in the JSON)."""
        if not self.tiers_asked:
            for name in TIER_FLAGS:
                if getattr(self, name) is not None:
                    raise problem(
                        _flag(name), "sizes a KV tier: give it with --kv-tiers (or --prefix-tokens)"
                    )
        if self.role is Role.PREFILL:  # held nowhere: the pair's decode side decodes
            for flag, value in (("--tpot-p99-ms", self.tpot_p99_ms),
                                ("--output-p99-tokens", self.output_p99_tokens)):  # fmt: skip
                if value is not None:
                    raise problem(
                        flag,
                        "a prefill replica makes the first token only; the outputs and "
                        "their time per token are its decode side's: drop it, or ask "
                        "--role decode (or unified)",
                    )
        if self.prefix_tokens is None:
            for flag, given in (
                ("--prefix-share", self.prefix_share != 1.0),
                ("--prefix-affinity", self.prefix_affinity),
            ):
                if given:
                    raise problem(flag, "describes a shared prefix: give it with --prefix-tokens")

    def _check_prefix(self) -> None:
        """A declared prefix within the p99 prompt, and its share of the mean prompt
        (tokens x share) within the mean."""
        tokens, share = self.prefix_tokens, self.prefix_share
        if tokens is None:
            return
        prompt_p99 = self.input_p99_tokens or self.input_tokens
        if tokens > prompt_p99:
            raise problem(
                "--prefix-tokens", f"({tokens:g}) exceeds the p99 prompt ({prompt_p99:g} tokens)"
            )
        if tokens * share > self.input_tokens:
            raise problem(
                "--prefix-share",
                f"tokens x share exceeds the mean prompt ({self.input_tokens:g} tokens)",
            )

    # --- what the flags describe ------------------------------------------------------

    @property
    def load_asked(self) -> bool:
        """Whether a latency at a load (--rate or --concurrency) is asked for."""
        return self.rate is not None or self.concurrency is not None

    @property
    def tiers_asked(self) -> bool:
        """Whether the KV-tier report is asked for (--kv-tiers, or a declared prefix)."""
        return self.kv_tiers or self.prefix_tokens is not None

    @cached_property
    def speculation(self) -> Speculation | None:
        """The speculative decoding the flags ask for, or None."""
        return speculation_from_flags(
            self.speculative_tokens, self.acceptance_rate, self.draft_model, self.draft_cost_ratio
        )

    @cached_property
    def mix(self) -> TrafficMix:
        """The traffic: prompt and output lengths, the hit rate and the declared prefix."""
        input_p99, output_p99 = self.input_p99_tokens, self.output_p99_tokens
        prompt = TokenDistribution(mean=self.input_tokens, p99=input_p99 or self.input_tokens)
        output = TokenDistribution(mean=self.output_tokens, p99=output_p99 or self.output_tokens)
        mix = TrafficMix.of_lengths(prompt, output, self.prefix_cache_hit_rate)
        if self.prefix_tokens is None:
            return mix
        return replace(
            mix,
            prefix_tokens=(self.prefix_tokens,),
            prefix_shares=(self.prefix_share,),
            hit_rate_from_prefixes=not self.prefix_cache_hit_rate > 0,
            prefix_affinity=self.prefix_affinity,
        )

    @property
    def spread(self) -> LengthSpread:
        """How the burst draws each request's lengths about the means: uniform over
        [L (1 - R), L (1 + R)] (--random-range-ratio R, as vllm bench serve's random
        dataset), lognormal (--length-cv, a dataset's conversations), else fixed."""
        if self.random_range_ratio is not None:
            return LengthSpread("uniform", self.random_range_ratio, self.random_range_ratio)
        if self.length_cv is not None:
            return LengthSpread("lognormal", self.length_cv, self.length_cv)
        return FIXED

    @property
    def targets(self) -> LatencyTargets:
        """The p99 targets in seconds (none: offline maximum throughput)."""
        return LatencyTargets(
            ttft_p99_s=None if self.ttft_p99_ms is None else self.ttft_p99_ms / 1e3,
            tpot_p99_s=None if self.tpot_p99_ms is None else self.tpot_p99_ms / 1e3,
        )

    @cached_property
    def gpu_spec(self) -> GpuSpec:
        """The catalog GPU with the KV-tier flags given."""
        try:
            gpu = catalog.gpu(self.gpu)
        except KeyError as error:
            raise problem("--gpu", str(error.args[0])) from None
        given = {key: getattr(self, key) for key in TIER_FLAGS if getattr(self, key) is not None}
        gpu = gpu.model_copy(update=given) if given else gpu
        # --kv-tiers: the flags not given default to the catalogued server's figures (a
        # declared prefix alone keeps the tiers the flags give: HBM unless told)
        return gpu.with_server_tiers()[0] if self.kv_tiers else gpu

    def tier_line(self) -> str:
        """Where the KV tiers' figures come from: each flag given, else the catalogued
        server (named), else none (the tier it feeds is absent); '' unless tiers are asked."""
        if not self.tiers_asked:
            return ""
        gpu = self.gpu_spec
        parts = []
        for key in TIER_FLAGS:
            flag = "--" + key.replace("_", "-")
            value = getattr(gpu, key)
            if getattr(self, key) is not None:
                parts.append(f"{flag} {value:g} (given)")
            elif value is not None:
                parts.append(f"{flag} {value:g} (catalog: {gpu.server})")
            elif not self.kv_tiers and getattr(gpu, f"server_{key}") is not None:
                parts.append(f"{flag} none (--kv-tiers takes the catalog's {gpu.server})")
            else:
                parts.append(f"{flag} none (not catalogued: give it)")
        return "KV tier figures: " + "; ".join(parts)

    @cached_property
    def llm(self) -> LlmSpec:
        """The model `--model` names in the catalog, or the one `--model-config` describes."""
        if self.model_config is not None:
            try:
                return load_hf_config(str(self.model_config))
            except HfConfigError as error:
                raise problem("--model-config", str(error)) from None
        try:
            return catalog.llm(self.model or "")
        except KeyError as error:
            raise problem("--model", str(error.args[0])) from None

    def replica_config(self) -> ReplicaConfig:
        """The replica the flags lay out (refused when the layout cannot hold the model)."""
        config = self._layout(self.role, self.tp, self.pp, self.ep, self.dp)
        layout = layout_problem(
            config.gpu, config.llm, config.weight_precision, config.kv_precision,
            self.tp, self.pp, self.ep, self.dp, self.redundant_experts,
        )  # fmt: skip
        if layout is not None:
            raise problem("--tp/--pp/--ep/--dp/--redundant-experts/--precision", layout)
        self._check_engine_layout("--tp/--ep/--dp", self.tp, self.dp, self.ep)
        return config

    @property
    def disaggregated(self) -> bool:
        """Whether the flags describe a disaggregated pair (--prefill-workers)."""
        return self.prefill_workers is not None

    def side_config(self, role: Role) -> ReplicaConfig:
        """One side of the pair: its layout flags (--prefill-tp, ...), each defaulting to
        the shared one (--tp, ...), refused naming the side's flags when the layout cannot
        hold the model."""
        side = str(role)
        tp, pp, ep, dp = (
            getattr(self, f"{side}_{part}") or getattr(self, part)
            for part in ("tp", "pp", "ep", "dp")
        )
        config = self._layout(role, tp, pp, ep, dp)
        layout = layout_problem(
            config.gpu, config.llm, config.weight_precision, config.kv_precision,
            tp, pp, ep, dp, self.redundant_experts,
        )  # fmt: skip
        if layout is not None:
            flags = "/".join(f"--{side}-{part}" for part in ("tp", "pp", "ep", "dp"))
            raise problem(f"{flags}/--redundant-experts/--precision", layout)
        self._check_engine_layout("/".join(f"--{side}-{p}" for p in ("tp", "ep", "dp")), tp, dp, ep)
        return config

    def _check_engine_layout(self, flags: str, tp: int, dp: int, ep: int) -> None:
        """Refuse a layout the engine profile's engine would start as another
        (`models.physics.overlap.engine_layout_problem`, the rule the planner's candidates
        and deploy follow): perf would time what that engine never runs."""
        engine = engine_family(self.efficiency_source().engine)
        if (layout := engine_layout_problem(engine, tp, dp, ep)) is not None:
            raise problem(f"{flags}/--engine", layout)

    def _layout(self, role: Role, tp: int, pp: int, ep: int, dp: int) -> ReplicaConfig:
        """The flags' replica at a layout (`replica_of_pool`: --kv-precision, else the
        weights' rule; the speculation flags on a decoding side)."""
        return replica_of_pool(
            self.gpu_spec, self.llm, self.precision, self.kv_precision,
            tp=tp, pp=pp, role=role, ep=ep, dp=dp,
            redundant_experts=self.redundant_experts, speculation=self.speculation,
        )  # fmt: skip

    def efficiency_source(self) -> EfficiencySource:
        """The engine profile whose efficiency factors apply (--engine, else the newest)."""
        try:
            return engine_source(self.gpu_spec, check_engine(self.engine))
        except UnknownEngine as error:
            raise problem("--engine", str(error)) from None
