"""Known engines' metric names under common names: data, one table per engine.

Each entry maps a sample name (counters and gauges: the exposed line's name, ``_total``
included; histograms: the family's name, whose ``_bucket``/``_sum``/``_count`` lines are read)
to a common name and the factor into its unit. An entry may also require labels (Triton's
TensorRT-LLM backend puts several figures under one family, told apart by a label). Every name
is taken from the engine's own documentation or source: docs/server-metrics.md cites each.
Families no table knows are kept raw, under their own names, never dropped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

# common name -> (kind, unit, how series of several label sets add up: "sum" or "mean")
COMMON: dict[str, tuple[str, str, str]] = {
    "requests_running": ("gauge", "requests", "sum"),
    "requests_waiting": ("gauge", "requests", "sum"),
    "requests_in_flight": ("gauge", "requests", "sum"),
    "kv_cache_usage": ("gauge", "ratio", "mean"),
    "prompt_tokens": ("counter", "tokens", "sum"),
    "generation_tokens": ("counter", "tokens", "sum"),
    "prefix_cache_hits": ("counter", "tokens", "sum"),
    "prefix_cache_queries": ("counter", "tokens", "sum"),
    "spec_decode_drafts": ("counter", "steps", "sum"),
    "spec_decode_draft_tokens": ("counter", "tokens", "sum"),
    "spec_decode_accepted_tokens": ("counter", "tokens", "sum"),
    "requests_finished": ("counter", "requests", "sum"),
    "power_w": ("gauge", "W", "sum"),
    "energy_j": ("counter", "J", "sum"),
    "gpu_utilization": ("gauge", "ratio", "mean"),
    "gpu_memory_used_bytes": ("gauge", "bytes", "sum"),
    "ttft_s": ("histogram", "s", "sum"),
    "itl_s": ("histogram", "s", "sum"),
    "e2e_s": ("histogram", "s", "sum"),
    "queue_time_s": ("histogram", "s", "sum"),
    "prefill_time_s": ("histogram", "s", "sum"),
}

#: Physical bounds of each common name, per reading (after the unit's scale; a ratio summed over
#: several series is averaged first): a reading outside them is `implausible`, kept out of every
#: figure (docs/server-metrics.md). Counters may not be negative; their resets are handled by
#: increase(), per series, as Prometheus's increase() does.
BOUNDS: dict[str, tuple[float, float]] = {
    "requests_running": (0.0, math.inf),
    "requests_waiting": (0.0, math.inf),
    "requests_in_flight": (0.0, math.inf),
    "kv_cache_usage": (0.0, 1.0),
    "gpu_utilization": (0.0, 1.0),
    "power_w": (0.0, math.inf),
    "gpu_memory_used_bytes": (0.0, math.inf),
    **{name: (0.0, math.inf) for name, (kind, _, _) in COMMON.items() if kind == "counter"},
}


def plausible(name: str, value: float) -> bool:
    lo, hi = BOUNDS.get(name, (-math.inf, math.inf))
    return lo <= value <= hi


@dataclass(frozen=True)
class Entry:
    common: str
    scale: float = 1.0  # the engine's unit -> the common unit
    labels: dict[str, str] = field(default_factory=dict)  # required label values, if any


def _e(common: str, scale: float = 1.0, **labels: str) -> Entry:
    return Entry(common, scale, labels)


ENGINES: dict[str, dict[str, Entry]] = {
    "vllm": {
        "vllm:num_requests_running": _e("requests_running"),
        "vllm:num_requests_waiting": _e("requests_waiting"),
        "vllm:kv_cache_usage_perc": _e("kv_cache_usage"),  # V1 engine (a ratio despite the name)
        "vllm:gpu_cache_usage_perc": _e("kv_cache_usage"),  # V0 engine
        "vllm:prompt_tokens_total": _e("prompt_tokens"),
        "vllm:generation_tokens_total": _e("generation_tokens"),
        "vllm:prefix_cache_hits_total": _e("prefix_cache_hits"),
        "vllm:prefix_cache_queries_total": _e("prefix_cache_queries"),
        "vllm:spec_decode_num_drafts_total": _e("spec_decode_drafts"),
        "vllm:spec_decode_num_draft_tokens_total": _e("spec_decode_draft_tokens"),
        "vllm:spec_decode_num_accepted_tokens_total": _e("spec_decode_accepted_tokens"),
        "vllm:request_success_total": _e("requests_finished"),
        "vllm:time_to_first_token_seconds": _e("ttft_s"),
        "vllm:inter_token_latency_seconds": _e("itl_s"),
        "vllm:time_per_output_token_seconds": _e("itl_s"),  # V0's name
        "vllm:e2e_request_latency_seconds": _e("e2e_s"),
        "vllm:request_queue_time_seconds": _e("queue_time_s"),
        "vllm:request_prefill_time_seconds": _e("prefill_time_s"),
    },
    "sglang": {
        "sglang:num_running_reqs": _e("requests_running"),
        "sglang:num_queue_reqs": _e("requests_waiting"),
        "sglang:token_usage": _e("kv_cache_usage"),
        "sglang:prompt_tokens_total": _e("prompt_tokens"),
        "sglang:generation_tokens_total": _e("generation_tokens"),
        "sglang:cached_tokens_total": _e("prefix_cache_hits"),
        "sglang:num_requests_total": _e("requests_finished"),
        "sglang:time_to_first_token_seconds": _e("ttft_s"),
        "sglang:inter_token_latency_seconds": _e("itl_s"),
        "sglang:time_per_output_token_seconds": _e("itl_s"),  # older releases
        "sglang:e2e_request_latency_seconds": _e("e2e_s"),
    },
    "tgi": {
        "tgi_batch_current_size": _e("requests_running"),
        "tgi_queue_size": _e("requests_waiting"),
        # TGI has no token counters: its per-request length histograms' sums are.
        "tgi_request_input_length_sum": _e("prompt_tokens"),
        "tgi_request_generated_tokens_sum": _e("generation_tokens"),
        "tgi_request_success": _e("requests_finished"),
        "tgi_request_queue_duration": _e("queue_time_s"),
        "tgi_request_duration": _e("e2e_s"),
    },
    "llama.cpp": {
        "llamacpp:requests_processing": _e("requests_running"),
        "llamacpp:requests_deferred": _e("requests_waiting"),
        "llamacpp:kv_cache_usage_ratio": _e("kv_cache_usage"),  # older releases
        "llamacpp:prompt_tokens_total": _e("prompt_tokens"),  # cached tokens left out
        "llamacpp:prompt_tokens_cached_total": _e("prefix_cache_hits"),
        "llamacpp:tokens_predicted_total": _e("generation_tokens"),
        "llamacpp:spec_decode_num_drafts_total": _e("spec_decode_drafts"),
        "llamacpp:spec_decode_num_draft_tokens_total": _e("spec_decode_draft_tokens"),
        "llamacpp:spec_decode_num_accepted_tokens_total": _e("spec_decode_accepted_tokens"),
    },
    "dynamo": {
        "dynamo_frontend_inflight_requests": _e("requests_in_flight"),
        "dynamo_frontend_queued_requests": _e("requests_waiting"),
        "dynamo_frontend_input_sequence_tokens_sum": _e("prompt_tokens"),
        "dynamo_frontend_output_tokens_total": _e("generation_tokens"),
        "dynamo_frontend_time_to_first_token_seconds": _e("ttft_s"),
        "dynamo_frontend_inter_token_latency_seconds": _e("itl_s"),
        "dynamo_frontend_request_duration_seconds": _e("e2e_s"),
    },
    "tensorrt-llm": {
        "trtllm_num_requests_waiting": _e("requests_waiting"),  # trtllm-serve
        # Triton's TensorRT-LLM backend: one gauge family, a label per figure.
        "nv_trt_llm_request_metrics": _e("requests_running", request_type="scheduled"),
        "nv_trt_llm_request_metrics#waiting": _e("requests_waiting", request_type="waiting"),
        "nv_trt_llm_kv_cache_block_metrics": _e("kv_cache_usage", kv_cache_block_type="fraction"),
    },
    "triton": {
        "nv_inference_pending_request_count": _e("requests_waiting"),
        "nv_inference_request_success": _e("requests_finished"),
        "nv_gpu_power_usage": _e("power_w"),
        "nv_energy_consumption": _e("energy_j"),  # joules since Triton started
        "nv_gpu_utilization": _e("gpu_utilization"),  # 0.0 - 1.0
        "nv_gpu_memory_used_bytes": _e("gpu_memory_used_bytes"),
    },
    "dcgm": {
        "DCGM_FI_DEV_POWER_USAGE": _e("power_w"),
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": _e("energy_j", 1e-3),  # mJ since boot
        "DCGM_FI_DEV_GPU_UTIL": _e("gpu_utilization", 1e-2),  # percent
        "DCGM_FI_DEV_FB_USED": _e("gpu_memory_used_bytes", 1024.0 * 1024.0),  # MiB
    },
    "amd": {
        "gpu_power_usage": _e("power_w"),
        "gpu_package_power": _e("power_w"),
        "gpu_energy_consumed": _e("energy_j", 1e-6),  # microjoules
        "gpu_gfx_activity": _e("gpu_utilization", 1e-2),  # percent
        "gpu_used_vram": _e("gpu_memory_used_bytes", 1024.0 * 1024.0),  # MB (MiB) as the exporter reports it
    },
}


def _key(name: str) -> str:
    """A table key without its '#tag' (two entries for one family with different labels)."""
    return name.split("#", 1)[0]


# sample or family name -> [(engine, entry)]
_BY_NAME: dict[str, list[tuple[str, Entry]]] = {}
for _engine, _table in ENGINES.items():
    for _name, _entry in _table.items():
        _BY_NAME.setdefault(_key(_name), []).append((_engine, _entry))


def lookup(name: str, labels: dict[str, str]) -> tuple[str, Entry] | None:
    """The engine and entry that name this series, or None (a family kept raw). prometheus-client's
    parser gives a counter's samples a ``_total`` suffix the server may not have sent (DCGM's
    counters have none), so a name is also looked up without it."""
    candidates = [name, name.removesuffix("_total")] if name.endswith("_total") else [name]
    for candidate in candidates:
        for engine, entry in _BY_NAME.get(candidate, ()):
            if all(labels.get(k) == v for k, v in entry.labels.items()):
                return engine, entry
    return None
