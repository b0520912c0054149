package pagoda

/*
#include "pagoda/pagoda.h"
*/
import "C"

import "reflect"

// The binding's view of the C structs it reads and writes, for the layout test: cgo's sizes and
// offsets of each field (from the headers this package was compiled with), and the Go field
// each one is converted to or from. The test compares them with what pagoda-abi-layout prints
// for the built library, and fails on a header field or struct this table does not know: a
// field appended to a covered struct must be added to the binding, not silently dropped.

// layoutField is one field of a C struct.
type layoutField struct {
	name    string  // as in the header
	offset  uintptr // cgo's offsetof
	size    uintptr // cgo's sizeof
	goField string  // the Go field it maps to; "" when it has none (see the struct's note)
}

// layoutStruct is one public struct the binding uses.
type layoutStruct struct {
	name   string
	size   uintptr
	align  uintptr
	goType reflect.Type // the Go struct mirroring it; nil when none
	note   string       // why fields without a Go field have none
	fields []layoutField
}

// layoutOf describes the C struct name from cgo's view of it (cValue's type, whose fields
// reflection gives with cgo's offsets and sizes) and the Go struct goValue mirroring it (nil
// for none). pairs name each C field, in header order, then the Go field it maps to ("" for
// none).
func layoutOf(name string, cValue, goValue interface{}, note string, pairs ...string) layoutStruct {
	ct := reflect.TypeOf(cValue)
	s := layoutStruct{name: name, size: ct.Size(), align: uintptr(ct.Align()), goType: reflect.TypeOf(goValue), note: note}
	if len(pairs)%2 != 0 {
		panic(name + ": a C field without its Go field")
	}
	for i := 0; i < len(pairs); i += 2 {
		f, ok := ct.FieldByName(pairs[i])
		if !ok { // cgo renames a field named as a Go keyword ("type") with a leading "_"
			f, ok = ct.FieldByName("_" + pairs[i])
		}
		if !ok {
			panic(name + "." + pairs[i] + ": not a field of cgo's " + ct.String())
		}
		s.fields = append(s.fields, layoutField{pairs[i], f.Offset, f.Type.Size(), pairs[i+1]})
	}
	return s
}

// notCoveredStructs are the structs pagoda-abi-layout prints that the binding deliberately
// leaves out, and why. (The printer leaves out the plugin ABI: ops.h, the backend tables.)
var notCoveredStructs = map[string]string{
	"pagoda_server_options_t": "the HTTP server (server.h) is outside the binding's scope",
}

func layoutTable() []layoutStruct {
	const sizeNote = "struct_size is set by the binding"
	return []layoutStruct{
		layoutOf("pagoda_model_options_t", C.pagoda_model_options_t{}, nil, "the progress callback would call Go from C: LoadModel polls a loader instead",
			"struct_size", "",
			"progress", "",
			"progress_user", ""),
		layoutOf("pagoda_model_info_t", C.pagoda_model_info_t{}, ModelInfo{}, sizeNote,
			"struct_size", "",
			"architecture", "Architecture",
			"vocab_size", "VocabSize",
			"hidden_size", "HiddenSize",
			"intermediate_size", "IntermediateSize",
			"n_layers", "NLayers",
			"n_heads", "NHeads",
			"n_kv_heads", "NKVHeads",
			"head_dim", "HeadDim",
			"max_position", "MaxPosition",
			"n_parameters", "NParameters",
			"bos_token_id", "BOSTokenID",
			"eos_token_id", "EOSTokenID",
			"n_experts", "NExperts",
			"experts_per_token", "ExpertsPerToken",
			"expert_intermediate_size", "ExpertIntermediateSize",
			"n_sparse_layers", "NSparseLayers"),
		layoutOf("pagoda_tokenizer_info_t", C.pagoda_tokenizer_info_t{}, TokenizerInfo{}, sizeNote,
			"struct_size", "",
			"vocab_size", "VocabSize",
			"bos_token_id", "BOSTokenID",
			"eos_token_id", "EOSTokenID",
			"unk_token_id", "UnkTokenID",
			"pad_token_id", "PadTokenID",
			"model", "Model"),
		layoutOf("pagoda_chat_template_options_t", C.pagoda_chat_template_options_t{}, ChatTemplateOptions{}, sizeNote,
			"struct_size", "",
			"add_generation_prompt", "AddGenerationPrompt",
			"chat_template", "ChatTemplate",
			"template_name", "TemplateName",
			"tools_json", "ToolsJSON",
			"context_json", "ContextJSON"),
		layoutOf("pagoda_mesh_options_t", C.pagoda_mesh_options_t{}, MeshOptions{},
			sizeNote+"; the bootstrap callback would call Go from C: the ranks meet on a rendezvous address instead",
			"struct_size", "",
			"devices", "Devices",
			"axes", "Axes",
			"rank", "Rank",
			"world_size", "WorldSize",
			"rendezvous", "Rendezvous",
			"bootstrap", "",
			"bootstrap_user", "",
			"timeout_ms", "TimeoutMs"),
		layoutOf("pagoda_kv_cache_options_t", C.pagoda_kv_cache_options_t{}, KVCacheOptions{}, sizeNote,
			"struct_size", "",
			"block_size", "BlockSize",
			"dtype", "DType",
			"num_blocks", "NumBlocks",
			"memory_bytes", "MemoryBytes",
			"swap_bytes", "SwapBytes",
			"prefix_caching", "PrefixCaching"),
		layoutOf("pagoda_kv_cache_stats_t", C.pagoda_kv_cache_stats_t{}, KVCacheStats{}, sizeNote,
			"struct_size", "",
			"block_size", "BlockSize",
			"blocks_total", "BlocksTotal",
			"blocks_used", "BlocksUsed",
			"blocks_free", "BlocksFree",
			"slots_used", "SlotsUsed",
			"sequences", "Sequences",
			"bytes_per_block", "BytesPerBlock",
			"blocks_cached", "BlocksCached",
			"slots_wasted", "SlotsWasted",
			"swap_blocks_total", "SwapBlocksTotal",
			"swap_blocks_used", "SwapBlocksUsed",
			"prefix_queries", "PrefixQueries",
			"prefix_hits", "PrefixHits"),
		layoutOf("pagoda_plan_options_t", C.pagoda_plan_options_t{}, PlanOptions{}, sizeNote,
			"struct_size", "",
			"objective", "Objective",
			"micro_batches", "MicroBatches",
			"stages", "Stages",
			"tensor_parallel", "TensorParallel",
			"device", "Device",
			"cost_file", "CostFile",
			"mesh_shape", "MeshShape",
			"step_tokens", "StepTokens",
			"context_tokens", "ContextTokens",
			"kv_tokens", "KVTokens",
			"prompt_tokens", "PromptTokens",
			"granularity", "Granularity",
			"epsilon_seconds", "EpsilonSeconds",
			"expert_parallel", "ExpertParallel"),
		layoutOf("pagoda_cost_profile_options_t", C.pagoda_cost_profile_options_t{}, CostProfileOptions{}, sizeNote,
			"struct_size", "",
			"max_tokens", "MaxTokens",
			"granularity", "Granularity",
			"grid", "Grid",
			"repeats", "Repeats",
			"beside", "Beside"),
		layoutOf("pagoda_link_profile_options_t", C.pagoda_link_profile_options_t{}, LinkProfileOptions{}, sizeNote,
			"struct_size", "",
			"min_bytes", "MinBytes",
			"max_bytes", "MaxBytes",
			"repeats", "Repeats"),
		layoutOf("pagoda_plan_stage_t", C.pagoda_plan_stage_t{}, PlanStage{}, sizeNote,
			"struct_size", "",
			"first_layer", "FirstLayer",
			"end_layer", "EndLayer",
			"nodes", "Nodes",
			"devices", "Devices",
			"tensor_parallel", "TensorParallel",
			"has_embedding", "HasEmbedding",
			"has_head", "HasHead",
			"seconds", "Seconds",
			"memory_bytes", "MemoryBytes",
			"expert_parallel", "ExpertParallel"),
		layoutOf("pagoda_plan_summary_t", C.pagoda_plan_summary_t{}, PlanSummary{}, sizeNote,
			"struct_size", "",
			"n_stages", "NStages",
			"latency_seconds", "LatencySeconds",
			"max_stage_seconds", "MaxStageSeconds",
			"throughput_per_second", "ThroughputPerSecond",
			"objective_seconds", "ObjectiveSeconds",
			"n_slices", "NSlices",
			"sliced_prefill_seconds", "SlicedPrefillSeconds",
			"uniform_prefill_seconds", "UniformPrefillSeconds"),
		layoutOf("pagoda_simulate_options_t", C.pagoda_simulate_options_t{}, SimulateOptions{}, sizeNote,
			"struct_size", "",
			"rate_per_model", "RatePerModel",
			"total_rate", "TotalRate",
			"cv", "CV",
			"slo_seconds", "SLOSeconds",
			"duration_seconds", "DurationSeconds",
			"seed", "Seed",
			"overhead_seconds", "OverheadSeconds",
			"reject_late", "RejectLate"),
		layoutOf("pagoda_request_options_t", C.pagoda_request_options_t{}, RequestOptions{}, sizeNote+"; the counts are the Go slices' lengths",
			"struct_size", "",
			"flags", "Flags",
			"max_tokens", "MaxTokens",
			"temperature", "Temperature",
			"top_k", "TopK",
			"top_p", "TopP",
			"min_p", "MinP",
			"repetition_penalty", "RepetitionPenalty",
			"presence_penalty", "PresencePenalty",
			"frequency_penalty", "FrequencyPenalty",
			"seed", "Seed",
			"stop_token_ids", "StopTokenIDs",
			"n_stop_token_ids", "",
			"stop_strings", "StopStrings",
			"n_stop_strings", "",
			"logprobs", "Logprobs",
			"prompt_logprobs", "PromptLogprobs",
			"n", "N",
			"best_of", "BestOf",
			"beam_width", "BeamWidth",
			"length_penalty", "LengthPenalty",
			"early_stopping", "EarlyStopping",
			"priority", "Priority",
			"logit_bias", "LogitBias",
			"n_logit_bias", "",
			"bad_words_token_ids", "BadWords",
			"bad_words_lengths", "",
			"n_bad_words", "",
			"allowed_token_ids", "AllowedTokenIDs",
			"n_allowed_token_ids", "",
			"logits_processor", "LogitsProcessor",
			"logits_processor_user", "LogitsProcessor",
			"min_tokens", "MinTokens",
			"constraint_kind", "Constraint",
			"constraint", "Constraint",
			"pooling", "Pooling",
			"embedding_normalize", "EmbeddingNormalize"),
		layoutOf("pagoda_logit_bias_t", C.pagoda_logit_bias_t{}, LogitBias{}, "",
			"token_id", "TokenID",
			"bias", "Bias"),
		layoutOf("pagoda_logprob_t", C.pagoda_logprob_t{}, Logprob{}, "",
			"token_id", "TokenID",
			"logprob", "Logprob"),
		layoutOf("pagoda_output_t", C.pagoda_output_t{}, Output{}, sizeNote+"; counts are the Go slices' lengths; status and error make Err",
			"struct_size", "",
			"request_id", "RequestID",
			"finish_reason", "FinishReason",
			"status", "Err",
			"error", "Err",
			"token_ids", "TokenIDs",
			"n_tokens", "",
			"text", "Text",
			"text_len", "",
			"logprobs", "Logprobs",
			"top_logprobs", "TopLogprobs",
			"n_top_logprobs", "",
			"n_prompt_tokens", "NPromptTokens",
			"n_generated", "NGenerated",
			"prompt_logprobs", "PromptLogprobs",
			"prompt_top_logprobs", "PromptTopLogprobs",
			"n_prompt_top_logprobs", "",
			"sequence_index", "SequenceIndex",
			"cumulative_logprob", "CumulativeLogprob",
			"request_finished", "RequestFinished",
			"embedding", "Embedding",
			"n_embedding", ""),
		layoutOf("pagoda_engine_options_t", C.pagoda_engine_options_t{}, EngineOptions{}, sizeNote+"; the output callback would call Go from C: outputs are polled",
			"struct_size", "",
			"max_num_seqs", "MaxNumSeqs",
			"max_num_batched_tokens", "MaxNumBatchedTokens",
			"on_output", "",
			"on_output_user", "",
			"preemption", "Preemption",
			"kv_reservation", "KVReservation",
			"decode_graphs", "DecodeGraphs",
			"device_sampling", "DeviceSampling",
			"activation_dtype", "ActivationDType",
			"pipeline_micro_batches", "PipelineMicroBatches",
			"quantized_matmul", "QuantizedMatmul",
			"kernel_choices_file", "KernelChoicesFile",
			"kernel_choice", "KernelChoice"),
		layoutOf("pagoda_engine_stats_t", C.pagoda_engine_stats_t{}, EngineStats{}, sizeNote,
			"struct_size", "",
			"requests_waiting", "RequestsWaiting",
			"requests_running", "RequestsRunning",
			"requests_swapped", "RequestsSwapped",
			"requests_finished", "RequestsFinished",
			"preemptions_recompute", "PreemptionsRecompute",
			"preemptions_swap", "PreemptionsSwap",
			"steps", "Steps",
			"prompt_tokens", "PromptTokens",
			"generated_tokens", "GeneratedTokens",
			"batched_sequences", "BatchedSequences",
			"graph_steps", "GraphSteps",
			"device_sampled_tokens", "DeviceSampledTokens"),
		layoutOf("pagoda_device_stats_t", C.pagoda_device_stats_t{}, DeviceStats{}, sizeNote,
			"struct_size", "",
			"device", "Device",
			"stage", "Stage",
			"tp_rank", "TPRank",
			"tp_size", "TPSize",
			"first_layer", "FirstLayer",
			"end_layer", "EndLayer",
			"kv_heads", "KVHeads",
			"weight_bytes", "WeightBytes",
			"kv_bytes", "KVBytes",
			"layer_weight_bytes", "LayerWeightBytes",
			"kvp_rank", "KVPRank",
			"kvp_size", "KVPSize",
			"ep_rank", "EPRank",
			"ep_size", "EPSize",
			"expert_weight_bytes", "ExpertWeightBytes"),
		layoutOf("pagoda_kernel_choice_info_t", C.pagoda_kernel_choice_info_t{}, KernelChoiceInfo{}, sizeNote,
			"struct_size", "",
			"w_dtype", "WDType",
			"x_dtype", "XDType",
			"y_dtype", "YDType",
			"flags", "Flags",
			"n", "N",
			"k", "K",
			"m", "M",
			"seconds", "Seconds",
			"rules_seconds", "RulesSeconds",
			"device", "Device",
			"variant", "Variant"),
		layoutOf("pagoda_histogram_t", C.pagoda_histogram_t{}, Histogram{}, "n_bounds is the Go slices' length",
			"n_bounds", "",
			"upper_bounds", "UpperBounds",
			"cumulative_counts", "CumulativeCounts",
			"count", "Count",
			"sum", "Sum"),
		layoutOf("pagoda_engine_metrics_t", C.pagoda_engine_metrics_t{}, EngineMetrics{}, sizeNote,
			"struct_size", "",
			"requests_running", "RequestsRunning",
			"requests_waiting", "RequestsWaiting",
			"requests_swapped", "RequestsSwapped",
			"kv_blocks_used", "KVBlocksUsed",
			"kv_blocks_total", "KVBlocksTotal",
			"kv_cache_usage", "KVCacheUsage",
			"prompt_tokens", "PromptTokens",
			"prompt_tokens_computed", "PromptTokensComputed",
			"generation_tokens", "GenerationTokens",
			"requests_finished_stop", "RequestsFinishedStop",
			"requests_finished_length", "RequestsFinishedLength",
			"requests_finished_aborted", "RequestsFinishedAborted",
			"requests_finished_error", "RequestsFinishedError",
			"preemptions_recompute", "PreemptionsRecompute",
			"preemptions_swap", "PreemptionsSwap",
			"prefix_cache_queries", "PrefixCacheQueries",
			"prefix_cache_hits", "PrefixCacheHits",
			"time_to_first_token", "TimeToFirstToken",
			"inter_token_latency", "InterTokenLatency",
			"e2e_request_latency", "E2ERequestLatency",
			"request_queue_time", "RequestQueueTime"),
		layoutOf("pagoda_quantize_options_t", C.pagoda_quantize_options_t{}, QuantizeOptions{},
			"struct_size is set by the binding; the progress callback would call Go from C",
			"struct_size", "",
			"type", "Type",
			"threads", "Threads",
			"progress", "",
			"progress_user", ""),
		layoutOf("pagoda_quantized_type_stats_t", C.pagoda_quantized_type_stats_t{}, QuantizedType{}, "",
			"ggml_type", "GGMLType",
			"name", "Name",
			"tensors", "Tensors",
			"values", "Values",
			"rmse", "RMSE",
			"relative_rmse", "RelativeRMSE"),
		layoutOf("pagoda_quantize_stats_t", C.pagoda_quantize_stats_t{}, QuantizeStats{},
			"struct_size is set by the binding; n_types is the length of Types",
			"struct_size", "",
			"input_bytes", "InputBytes",
			"output_bytes", "OutputBytes",
			"tensors_kept", "TensorsKept",
			"n_types", "",
			"types", "Types"),
		layoutOf("pagoda_device_info_t", C.pagoda_device_info_t{}, DeviceInfo{}, sizeNote,
			"struct_size", "",
			"kind", "Kind",
			"flags", "Flags",
			"compute_units", "ComputeUnits",
			"total_memory", "TotalMemory",
			"free_memory", "FreeMemory",
			"name", "Name",
			"arch", "Arch"),
	}
}

// Round trips of the options structs through their C form, for the test that every Go field
// reaches C (and comes back): an option the binding accepted but dropped would fail it.

func roundTripRequestOptions(o RequestOptions) RequestOptions {
	var a cAlloc
	defer a.free()
	return requestOptionsFromC(o.toC(&a))
}

func roundTripPlanOptions(o PlanOptions) PlanOptions {
	var a cAlloc
	defer a.free()
	return planOptionsFromC(o.toC(&a))
}

func roundTripKVCacheOptions(o KVCacheOptions) KVCacheOptions {
	var c C.pagoda_kv_cache_options_t
	return kvCacheOptionsFromC(o.toC(&c))
}

func roundTripEngineOptions(o EngineOptions) EngineOptions {
	var a cAlloc
	defer a.free()
	return engineOptionsFromC(o.toC(&a))
}

func roundTripSimulateOptions(o SimulateOptions) SimulateOptions {
	var c C.pagoda_simulate_options_t
	return simulateOptionsFromC(o.toC(&c))
}
