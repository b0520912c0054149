package pagoda

/*
#include "pagoda/pagoda.h"
*/
import "C"

import (
	"reflect"
	"unsafe"
)

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

func fieldOf(name string, offset, size uintptr, goField string) layoutField {
	return layoutField{name, offset, size, goField}
}

// notCoveredStructs are the structs pagoda-abi-layout prints that the binding deliberately
// leaves out, and why. (The printer leaves out the plugin ABI: ops.h, the backend tables.)
var notCoveredStructs = map[string]string{
	"pagoda_server_options_t": "the HTTP server (server.h) is outside the binding's scope",
}

func layoutTable() []layoutStruct {
	var (
		mo  C.pagoda_model_options_t
		mi  C.pagoda_model_info_t
		ti  C.pagoda_tokenizer_info_t
		ct  C.pagoda_chat_template_options_t
		me  C.pagoda_mesh_options_t
		ko  C.pagoda_kv_cache_options_t
		ks  C.pagoda_kv_cache_stats_t
		po  C.pagoda_plan_options_t
		ps  C.pagoda_plan_stage_t
		pu  C.pagoda_plan_summary_t
		so  C.pagoda_simulate_options_t
		ro  C.pagoda_request_options_t
		lp  C.pagoda_logprob_t
		out C.pagoda_output_t
		eo  C.pagoda_engine_options_t
		es  C.pagoda_engine_stats_t
		ds  C.pagoda_device_stats_t
		hi  C.pagoda_histogram_t
		em  C.pagoda_engine_metrics_t
		di  C.pagoda_device_info_t
	)
	const sizeNote = "struct_size is set by the binding"
	return []layoutStruct{
		{"pagoda_model_options_t", unsafe.Sizeof(mo), unsafe.Alignof(mo), nil,
			"the progress callback would call Go from C: LoadModel polls a loader instead", []layoutField{
				fieldOf("struct_size", unsafe.Offsetof(mo.struct_size), unsafe.Sizeof(mo.struct_size), ""),
				fieldOf("progress", unsafe.Offsetof(mo.progress), unsafe.Sizeof(mo.progress), ""),
				fieldOf("progress_user", unsafe.Offsetof(mo.progress_user), unsafe.Sizeof(mo.progress_user), ""),
			}},
		{"pagoda_model_info_t", unsafe.Sizeof(mi), unsafe.Alignof(mi), reflect.TypeOf(ModelInfo{}), sizeNote, []layoutField{
			fieldOf("struct_size", unsafe.Offsetof(mi.struct_size), unsafe.Sizeof(mi.struct_size), ""),
			fieldOf("architecture", unsafe.Offsetof(mi.architecture), unsafe.Sizeof(mi.architecture), "Architecture"),
			fieldOf("vocab_size", unsafe.Offsetof(mi.vocab_size), unsafe.Sizeof(mi.vocab_size), "VocabSize"),
			fieldOf("hidden_size", unsafe.Offsetof(mi.hidden_size), unsafe.Sizeof(mi.hidden_size), "HiddenSize"),
			fieldOf("intermediate_size", unsafe.Offsetof(mi.intermediate_size), unsafe.Sizeof(mi.intermediate_size), "IntermediateSize"),
			fieldOf("n_layers", unsafe.Offsetof(mi.n_layers), unsafe.Sizeof(mi.n_layers), "NLayers"),
			fieldOf("n_heads", unsafe.Offsetof(mi.n_heads), unsafe.Sizeof(mi.n_heads), "NHeads"),
			fieldOf("n_kv_heads", unsafe.Offsetof(mi.n_kv_heads), unsafe.Sizeof(mi.n_kv_heads), "NKVHeads"),
			fieldOf("head_dim", unsafe.Offsetof(mi.head_dim), unsafe.Sizeof(mi.head_dim), "HeadDim"),
			fieldOf("max_position", unsafe.Offsetof(mi.max_position), unsafe.Sizeof(mi.max_position), "MaxPosition"),
			fieldOf("n_parameters", unsafe.Offsetof(mi.n_parameters), unsafe.Sizeof(mi.n_parameters), "NParameters"),
			fieldOf("bos_token_id", unsafe.Offsetof(mi.bos_token_id), unsafe.Sizeof(mi.bos_token_id), "BOSTokenID"),
			fieldOf("eos_token_id", unsafe.Offsetof(mi.eos_token_id), unsafe.Sizeof(mi.eos_token_id), "EOSTokenID"),
		}},
		{"pagoda_tokenizer_info_t", unsafe.Sizeof(ti), unsafe.Alignof(ti), reflect.TypeOf(TokenizerInfo{}), sizeNote, []layoutField{
			fieldOf("struct_size", unsafe.Offsetof(ti.struct_size), unsafe.Sizeof(ti.struct_size), ""),
			fieldOf("vocab_size", unsafe.Offsetof(ti.vocab_size), unsafe.Sizeof(ti.vocab_size), "VocabSize"),
			fieldOf("bos_token_id", unsafe.Offsetof(ti.bos_token_id), unsafe.Sizeof(ti.bos_token_id), "BOSTokenID"),
			fieldOf("eos_token_id", unsafe.Offsetof(ti.eos_token_id), unsafe.Sizeof(ti.eos_token_id), "EOSTokenID"),
			fieldOf("unk_token_id", unsafe.Offsetof(ti.unk_token_id), unsafe.Sizeof(ti.unk_token_id), "UnkTokenID"),
			fieldOf("pad_token_id", unsafe.Offsetof(ti.pad_token_id), unsafe.Sizeof(ti.pad_token_id), "PadTokenID"),
			fieldOf("model", unsafe.Offsetof(ti.model), unsafe.Sizeof(ti.model), "Model"),
		}},
		{"pagoda_chat_template_options_t", unsafe.Sizeof(ct), unsafe.Alignof(ct), reflect.TypeOf(ChatTemplateOptions{}), sizeNote, []layoutField{
			fieldOf("struct_size", unsafe.Offsetof(ct.struct_size), unsafe.Sizeof(ct.struct_size), ""),
			fieldOf("add_generation_prompt", unsafe.Offsetof(ct.add_generation_prompt), unsafe.Sizeof(ct.add_generation_prompt), "AddGenerationPrompt"),
			fieldOf("chat_template", unsafe.Offsetof(ct.chat_template), unsafe.Sizeof(ct.chat_template), "ChatTemplate"),
			fieldOf("template_name", unsafe.Offsetof(ct.template_name), unsafe.Sizeof(ct.template_name), "TemplateName"),
			fieldOf("tools_json", unsafe.Offsetof(ct.tools_json), unsafe.Sizeof(ct.tools_json), "ToolsJSON"),
			fieldOf("context_json", unsafe.Offsetof(ct.context_json), unsafe.Sizeof(ct.context_json), "ContextJSON"),
		}},
		{"pagoda_mesh_options_t", unsafe.Sizeof(me), unsafe.Alignof(me), reflect.TypeOf(MeshOptions{}), sizeNote, []layoutField{
			fieldOf("struct_size", unsafe.Offsetof(me.struct_size), unsafe.Sizeof(me.struct_size), ""),
			fieldOf("devices", unsafe.Offsetof(me.devices), unsafe.Sizeof(me.devices), "Devices"),
			fieldOf("axes", unsafe.Offsetof(me.axes), unsafe.Sizeof(me.axes), "Axes"),
		}},
		{"pagoda_kv_cache_options_t", unsafe.Sizeof(ko), unsafe.Alignof(ko), reflect.TypeOf(KVCacheOptions{}), sizeNote, []layoutField{
			fieldOf("struct_size", unsafe.Offsetof(ko.struct_size), unsafe.Sizeof(ko.struct_size), ""),
			fieldOf("block_size", unsafe.Offsetof(ko.block_size), unsafe.Sizeof(ko.block_size), "BlockSize"),
			fieldOf("dtype", unsafe.Offsetof(ko.dtype), unsafe.Sizeof(ko.dtype), "DType"),
			fieldOf("num_blocks", unsafe.Offsetof(ko.num_blocks), unsafe.Sizeof(ko.num_blocks), "NumBlocks"),
			fieldOf("memory_bytes", unsafe.Offsetof(ko.memory_bytes), unsafe.Sizeof(ko.memory_bytes), "MemoryBytes"),
			fieldOf("swap_bytes", unsafe.Offsetof(ko.swap_bytes), unsafe.Sizeof(ko.swap_bytes), "SwapBytes"),
			fieldOf("prefix_caching", unsafe.Offsetof(ko.prefix_caching), unsafe.Sizeof(ko.prefix_caching), "PrefixCaching"),
		}},
		{"pagoda_kv_cache_stats_t", unsafe.Sizeof(ks), unsafe.Alignof(ks), reflect.TypeOf(KVCacheStats{}), sizeNote, []layoutField{
			fieldOf("struct_size", unsafe.Offsetof(ks.struct_size), unsafe.Sizeof(ks.struct_size), ""),
			fieldOf("block_size", unsafe.Offsetof(ks.block_size), unsafe.Sizeof(ks.block_size), "BlockSize"),
			fieldOf("blocks_total", unsafe.Offsetof(ks.blocks_total), unsafe.Sizeof(ks.blocks_total), "BlocksTotal"),
			fieldOf("blocks_used", unsafe.Offsetof(ks.blocks_used), unsafe.Sizeof(ks.blocks_used), "BlocksUsed"),
			fieldOf("blocks_free", unsafe.Offsetof(ks.blocks_free), unsafe.Sizeof(ks.blocks_free), "BlocksFree"),
			fieldOf("slots_used", unsafe.Offsetof(ks.slots_used), unsafe.Sizeof(ks.slots_used), "SlotsUsed"),
			fieldOf("sequences", unsafe.Offsetof(ks.sequences), unsafe.Sizeof(ks.sequences), "Sequences"),
			fieldOf("bytes_per_block", unsafe.Offsetof(ks.bytes_per_block), unsafe.Sizeof(ks.bytes_per_block), "BytesPerBlock"),
			fieldOf("blocks_cached", unsafe.Offsetof(ks.blocks_cached), unsafe.Sizeof(ks.blocks_cached), "BlocksCached"),
			fieldOf("slots_wasted", unsafe.Offsetof(ks.slots_wasted), unsafe.Sizeof(ks.slots_wasted), "SlotsWasted"),
			fieldOf("swap_blocks_total", unsafe.Offsetof(ks.swap_blocks_total), unsafe.Sizeof(ks.swap_blocks_total), "SwapBlocksTotal"),
			fieldOf("swap_blocks_used", unsafe.Offsetof(ks.swap_blocks_used), unsafe.Sizeof(ks.swap_blocks_used), "SwapBlocksUsed"),
			fieldOf("prefix_queries", unsafe.Offsetof(ks.prefix_queries), unsafe.Sizeof(ks.prefix_queries), "PrefixQueries"),
			fieldOf("prefix_hits", unsafe.Offsetof(ks.prefix_hits), unsafe.Sizeof(ks.prefix_hits), "PrefixHits"),
		}},
		{"pagoda_plan_options_t", unsafe.Sizeof(po), unsafe.Alignof(po), reflect.TypeOf(PlanOptions{}), sizeNote, []layoutField{
			fieldOf("struct_size", unsafe.Offsetof(po.struct_size), unsafe.Sizeof(po.struct_size), ""),
			fieldOf("objective", unsafe.Offsetof(po.objective), unsafe.Sizeof(po.objective), "Objective"),
			fieldOf("micro_batches", unsafe.Offsetof(po.micro_batches), unsafe.Sizeof(po.micro_batches), "MicroBatches"),
			fieldOf("stages", unsafe.Offsetof(po.stages), unsafe.Sizeof(po.stages), "Stages"),
			fieldOf("tensor_parallel", unsafe.Offsetof(po.tensor_parallel), unsafe.Sizeof(po.tensor_parallel), "TensorParallel"),
			fieldOf("device", unsafe.Offsetof(po.device), unsafe.Sizeof(po.device), "Device"),
			fieldOf("cost_file", unsafe.Offsetof(po.cost_file), unsafe.Sizeof(po.cost_file), "CostFile"),
			fieldOf("mesh_shape", unsafe.Offsetof(po.mesh_shape), unsafe.Sizeof(po.mesh_shape), "MeshShape"),
			fieldOf("step_tokens", unsafe.Offsetof(po.step_tokens), unsafe.Sizeof(po.step_tokens), "StepTokens"),
			fieldOf("context_tokens", unsafe.Offsetof(po.context_tokens), unsafe.Sizeof(po.context_tokens), "ContextTokens"),
			fieldOf("kv_tokens", unsafe.Offsetof(po.kv_tokens), unsafe.Sizeof(po.kv_tokens), "KVTokens"),
			fieldOf("prompt_tokens", unsafe.Offsetof(po.prompt_tokens), unsafe.Sizeof(po.prompt_tokens), "PromptTokens"),
			fieldOf("granularity", unsafe.Offsetof(po.granularity), unsafe.Sizeof(po.granularity), "Granularity"),
			fieldOf("epsilon_seconds", unsafe.Offsetof(po.epsilon_seconds), unsafe.Sizeof(po.epsilon_seconds), "EpsilonSeconds"),
		}},
		{"pagoda_plan_stage_t", unsafe.Sizeof(ps), unsafe.Alignof(ps), reflect.TypeOf(PlanStage{}), sizeNote, []layoutField{
			fieldOf("struct_size", unsafe.Offsetof(ps.struct_size), unsafe.Sizeof(ps.struct_size), ""),
			fieldOf("first_layer", unsafe.Offsetof(ps.first_layer), unsafe.Sizeof(ps.first_layer), "FirstLayer"),
			fieldOf("end_layer", unsafe.Offsetof(ps.end_layer), unsafe.Sizeof(ps.end_layer), "EndLayer"),
			fieldOf("nodes", unsafe.Offsetof(ps.nodes), unsafe.Sizeof(ps.nodes), "Nodes"),
			fieldOf("devices", unsafe.Offsetof(ps.devices), unsafe.Sizeof(ps.devices), "Devices"),
			fieldOf("tensor_parallel", unsafe.Offsetof(ps.tensor_parallel), unsafe.Sizeof(ps.tensor_parallel), "TensorParallel"),
			fieldOf("has_embedding", unsafe.Offsetof(ps.has_embedding), unsafe.Sizeof(ps.has_embedding), "HasEmbedding"),
			fieldOf("has_head", unsafe.Offsetof(ps.has_head), unsafe.Sizeof(ps.has_head), "HasHead"),
			fieldOf("seconds", unsafe.Offsetof(ps.seconds), unsafe.Sizeof(ps.seconds), "Seconds"),
			fieldOf("memory_bytes", unsafe.Offsetof(ps.memory_bytes), unsafe.Sizeof(ps.memory_bytes), "MemoryBytes"),
		}},
		{"pagoda_plan_summary_t", unsafe.Sizeof(pu), unsafe.Alignof(pu), reflect.TypeOf(PlanSummary{}), sizeNote, []layoutField{
			fieldOf("struct_size", unsafe.Offsetof(pu.struct_size), unsafe.Sizeof(pu.struct_size), ""),
			fieldOf("n_stages", unsafe.Offsetof(pu.n_stages), unsafe.Sizeof(pu.n_stages), "NStages"),
			fieldOf("latency_seconds", unsafe.Offsetof(pu.latency_seconds), unsafe.Sizeof(pu.latency_seconds), "LatencySeconds"),
			fieldOf("max_stage_seconds", unsafe.Offsetof(pu.max_stage_seconds), unsafe.Sizeof(pu.max_stage_seconds), "MaxStageSeconds"),
			fieldOf("throughput_per_second", unsafe.Offsetof(pu.throughput_per_second), unsafe.Sizeof(pu.throughput_per_second), "ThroughputPerSecond"),
			fieldOf("objective_seconds", unsafe.Offsetof(pu.objective_seconds), unsafe.Sizeof(pu.objective_seconds), "ObjectiveSeconds"),
			fieldOf("n_slices", unsafe.Offsetof(pu.n_slices), unsafe.Sizeof(pu.n_slices), "NSlices"),
			fieldOf("sliced_prefill_seconds", unsafe.Offsetof(pu.sliced_prefill_seconds), unsafe.Sizeof(pu.sliced_prefill_seconds), "SlicedPrefillSeconds"),
			fieldOf("uniform_prefill_seconds", unsafe.Offsetof(pu.uniform_prefill_seconds), unsafe.Sizeof(pu.uniform_prefill_seconds), "UniformPrefillSeconds"),
		}},
		{"pagoda_simulate_options_t", unsafe.Sizeof(so), unsafe.Alignof(so), reflect.TypeOf(SimulateOptions{}), sizeNote, []layoutField{
			fieldOf("struct_size", unsafe.Offsetof(so.struct_size), unsafe.Sizeof(so.struct_size), ""),
			fieldOf("rate_per_model", unsafe.Offsetof(so.rate_per_model), unsafe.Sizeof(so.rate_per_model), "RatePerModel"),
			fieldOf("total_rate", unsafe.Offsetof(so.total_rate), unsafe.Sizeof(so.total_rate), "TotalRate"),
			fieldOf("cv", unsafe.Offsetof(so.cv), unsafe.Sizeof(so.cv), "CV"),
			fieldOf("slo_seconds", unsafe.Offsetof(so.slo_seconds), unsafe.Sizeof(so.slo_seconds), "SLOSeconds"),
			fieldOf("duration_seconds", unsafe.Offsetof(so.duration_seconds), unsafe.Sizeof(so.duration_seconds), "DurationSeconds"),
			fieldOf("seed", unsafe.Offsetof(so.seed), unsafe.Sizeof(so.seed), "Seed"),
			fieldOf("overhead_seconds", unsafe.Offsetof(so.overhead_seconds), unsafe.Sizeof(so.overhead_seconds), "OverheadSeconds"),
			fieldOf("reject_late", unsafe.Offsetof(so.reject_late), unsafe.Sizeof(so.reject_late), "RejectLate"),
		}},
		{"pagoda_request_options_t", unsafe.Sizeof(ro), unsafe.Alignof(ro), reflect.TypeOf(RequestOptions{}),
			sizeNote + "; the counts are the Go slices' lengths", []layoutField{
				fieldOf("struct_size", unsafe.Offsetof(ro.struct_size), unsafe.Sizeof(ro.struct_size), ""),
				fieldOf("flags", unsafe.Offsetof(ro.flags), unsafe.Sizeof(ro.flags), "Flags"),
				fieldOf("max_tokens", unsafe.Offsetof(ro.max_tokens), unsafe.Sizeof(ro.max_tokens), "MaxTokens"),
				fieldOf("temperature", unsafe.Offsetof(ro.temperature), unsafe.Sizeof(ro.temperature), "Temperature"),
				fieldOf("top_k", unsafe.Offsetof(ro.top_k), unsafe.Sizeof(ro.top_k), "TopK"),
				fieldOf("top_p", unsafe.Offsetof(ro.top_p), unsafe.Sizeof(ro.top_p), "TopP"),
				fieldOf("min_p", unsafe.Offsetof(ro.min_p), unsafe.Sizeof(ro.min_p), "MinP"),
				fieldOf("repetition_penalty", unsafe.Offsetof(ro.repetition_penalty), unsafe.Sizeof(ro.repetition_penalty), "RepetitionPenalty"),
				fieldOf("presence_penalty", unsafe.Offsetof(ro.presence_penalty), unsafe.Sizeof(ro.presence_penalty), "PresencePenalty"),
				fieldOf("frequency_penalty", unsafe.Offsetof(ro.frequency_penalty), unsafe.Sizeof(ro.frequency_penalty), "FrequencyPenalty"),
				fieldOf("seed", unsafe.Offsetof(ro.seed), unsafe.Sizeof(ro.seed), "Seed"),
				fieldOf("stop_token_ids", unsafe.Offsetof(ro.stop_token_ids), unsafe.Sizeof(ro.stop_token_ids), "StopTokenIDs"),
				fieldOf("n_stop_token_ids", unsafe.Offsetof(ro.n_stop_token_ids), unsafe.Sizeof(ro.n_stop_token_ids), ""),
				fieldOf("stop_strings", unsafe.Offsetof(ro.stop_strings), unsafe.Sizeof(ro.stop_strings), "StopStrings"),
				fieldOf("n_stop_strings", unsafe.Offsetof(ro.n_stop_strings), unsafe.Sizeof(ro.n_stop_strings), ""),
				fieldOf("logprobs", unsafe.Offsetof(ro.logprobs), unsafe.Sizeof(ro.logprobs), "Logprobs"),
				fieldOf("prompt_logprobs", unsafe.Offsetof(ro.prompt_logprobs), unsafe.Sizeof(ro.prompt_logprobs), "PromptLogprobs"),
				fieldOf("n", unsafe.Offsetof(ro.n), unsafe.Sizeof(ro.n), "N"),
				fieldOf("best_of", unsafe.Offsetof(ro.best_of), unsafe.Sizeof(ro.best_of), "BestOf"),
				fieldOf("beam_width", unsafe.Offsetof(ro.beam_width), unsafe.Sizeof(ro.beam_width), "BeamWidth"),
				fieldOf("length_penalty", unsafe.Offsetof(ro.length_penalty), unsafe.Sizeof(ro.length_penalty), "LengthPenalty"),
				fieldOf("early_stopping", unsafe.Offsetof(ro.early_stopping), unsafe.Sizeof(ro.early_stopping), "EarlyStopping"),
				fieldOf("priority", unsafe.Offsetof(ro.priority), unsafe.Sizeof(ro.priority), "Priority"),
			}},
		{"pagoda_logprob_t", unsafe.Sizeof(lp), unsafe.Alignof(lp), reflect.TypeOf(Logprob{}), "", []layoutField{
			fieldOf("token_id", unsafe.Offsetof(lp.token_id), unsafe.Sizeof(lp.token_id), "TokenID"),
			fieldOf("logprob", unsafe.Offsetof(lp.logprob), unsafe.Sizeof(lp.logprob), "Logprob"),
		}},
		{"pagoda_output_t", unsafe.Sizeof(out), unsafe.Alignof(out), reflect.TypeOf(Output{}),
			sizeNote + "; counts are the Go slices' lengths; status and error make Err", []layoutField{
				fieldOf("struct_size", unsafe.Offsetof(out.struct_size), unsafe.Sizeof(out.struct_size), ""),
				fieldOf("request_id", unsafe.Offsetof(out.request_id), unsafe.Sizeof(out.request_id), "RequestID"),
				fieldOf("finish_reason", unsafe.Offsetof(out.finish_reason), unsafe.Sizeof(out.finish_reason), "FinishReason"),
				fieldOf("status", unsafe.Offsetof(out.status), unsafe.Sizeof(out.status), "Err"),
				fieldOf("error", unsafe.Offsetof(out.error), unsafe.Sizeof(out.error), "Err"),
				fieldOf("token_ids", unsafe.Offsetof(out.token_ids), unsafe.Sizeof(out.token_ids), "TokenIDs"),
				fieldOf("n_tokens", unsafe.Offsetof(out.n_tokens), unsafe.Sizeof(out.n_tokens), ""),
				fieldOf("text", unsafe.Offsetof(out.text), unsafe.Sizeof(out.text), "Text"),
				fieldOf("text_len", unsafe.Offsetof(out.text_len), unsafe.Sizeof(out.text_len), ""),
				fieldOf("logprobs", unsafe.Offsetof(out.logprobs), unsafe.Sizeof(out.logprobs), "Logprobs"),
				fieldOf("top_logprobs", unsafe.Offsetof(out.top_logprobs), unsafe.Sizeof(out.top_logprobs), "TopLogprobs"),
				fieldOf("n_top_logprobs", unsafe.Offsetof(out.n_top_logprobs), unsafe.Sizeof(out.n_top_logprobs), ""),
				fieldOf("n_prompt_tokens", unsafe.Offsetof(out.n_prompt_tokens), unsafe.Sizeof(out.n_prompt_tokens), "NPromptTokens"),
				fieldOf("n_generated", unsafe.Offsetof(out.n_generated), unsafe.Sizeof(out.n_generated), "NGenerated"),
				fieldOf("prompt_logprobs", unsafe.Offsetof(out.prompt_logprobs), unsafe.Sizeof(out.prompt_logprobs), "PromptLogprobs"),
				fieldOf("prompt_top_logprobs", unsafe.Offsetof(out.prompt_top_logprobs), unsafe.Sizeof(out.prompt_top_logprobs), "PromptTopLogprobs"),
				fieldOf("n_prompt_top_logprobs", unsafe.Offsetof(out.n_prompt_top_logprobs), unsafe.Sizeof(out.n_prompt_top_logprobs), ""),
				fieldOf("sequence_index", unsafe.Offsetof(out.sequence_index), unsafe.Sizeof(out.sequence_index), "SequenceIndex"),
				fieldOf("cumulative_logprob", unsafe.Offsetof(out.cumulative_logprob), unsafe.Sizeof(out.cumulative_logprob), "CumulativeLogprob"),
				fieldOf("request_finished", unsafe.Offsetof(out.request_finished), unsafe.Sizeof(out.request_finished), "RequestFinished"),
			}},
		{"pagoda_engine_options_t", unsafe.Sizeof(eo), unsafe.Alignof(eo), reflect.TypeOf(EngineOptions{}),
			sizeNote + "; the output callback would call Go from C: outputs are polled", []layoutField{
				fieldOf("struct_size", unsafe.Offsetof(eo.struct_size), unsafe.Sizeof(eo.struct_size), ""),
				fieldOf("max_num_seqs", unsafe.Offsetof(eo.max_num_seqs), unsafe.Sizeof(eo.max_num_seqs), "MaxNumSeqs"),
				fieldOf("max_num_batched_tokens", unsafe.Offsetof(eo.max_num_batched_tokens), unsafe.Sizeof(eo.max_num_batched_tokens), "MaxNumBatchedTokens"),
				fieldOf("on_output", unsafe.Offsetof(eo.on_output), unsafe.Sizeof(eo.on_output), ""),
				fieldOf("on_output_user", unsafe.Offsetof(eo.on_output_user), unsafe.Sizeof(eo.on_output_user), ""),
				fieldOf("preemption", unsafe.Offsetof(eo.preemption), unsafe.Sizeof(eo.preemption), "Preemption"),
				fieldOf("kv_reservation", unsafe.Offsetof(eo.kv_reservation), unsafe.Sizeof(eo.kv_reservation), "KVReservation"),
				fieldOf("decode_graphs", unsafe.Offsetof(eo.decode_graphs), unsafe.Sizeof(eo.decode_graphs), "DecodeGraphs"),
				fieldOf("device_sampling", unsafe.Offsetof(eo.device_sampling), unsafe.Sizeof(eo.device_sampling), "DeviceSampling"),
				fieldOf("activation_dtype", unsafe.Offsetof(eo.activation_dtype), unsafe.Sizeof(eo.activation_dtype), "ActivationDType"),
				fieldOf("pipeline_micro_batches", unsafe.Offsetof(eo.pipeline_micro_batches), unsafe.Sizeof(eo.pipeline_micro_batches), "PipelineMicroBatches"),
			}},
		{"pagoda_engine_stats_t", unsafe.Sizeof(es), unsafe.Alignof(es), reflect.TypeOf(EngineStats{}), sizeNote, []layoutField{
			fieldOf("struct_size", unsafe.Offsetof(es.struct_size), unsafe.Sizeof(es.struct_size), ""),
			fieldOf("requests_waiting", unsafe.Offsetof(es.requests_waiting), unsafe.Sizeof(es.requests_waiting), "RequestsWaiting"),
			fieldOf("requests_running", unsafe.Offsetof(es.requests_running), unsafe.Sizeof(es.requests_running), "RequestsRunning"),
			fieldOf("requests_swapped", unsafe.Offsetof(es.requests_swapped), unsafe.Sizeof(es.requests_swapped), "RequestsSwapped"),
			fieldOf("requests_finished", unsafe.Offsetof(es.requests_finished), unsafe.Sizeof(es.requests_finished), "RequestsFinished"),
			fieldOf("preemptions_recompute", unsafe.Offsetof(es.preemptions_recompute), unsafe.Sizeof(es.preemptions_recompute), "PreemptionsRecompute"),
			fieldOf("preemptions_swap", unsafe.Offsetof(es.preemptions_swap), unsafe.Sizeof(es.preemptions_swap), "PreemptionsSwap"),
			fieldOf("steps", unsafe.Offsetof(es.steps), unsafe.Sizeof(es.steps), "Steps"),
			fieldOf("prompt_tokens", unsafe.Offsetof(es.prompt_tokens), unsafe.Sizeof(es.prompt_tokens), "PromptTokens"),
			fieldOf("generated_tokens", unsafe.Offsetof(es.generated_tokens), unsafe.Sizeof(es.generated_tokens), "GeneratedTokens"),
			fieldOf("batched_sequences", unsafe.Offsetof(es.batched_sequences), unsafe.Sizeof(es.batched_sequences), "BatchedSequences"),
			fieldOf("graph_steps", unsafe.Offsetof(es.graph_steps), unsafe.Sizeof(es.graph_steps), "GraphSteps"),
			fieldOf("device_sampled_tokens", unsafe.Offsetof(es.device_sampled_tokens), unsafe.Sizeof(es.device_sampled_tokens), "DeviceSampledTokens"),
		}},
		{"pagoda_device_stats_t", unsafe.Sizeof(ds), unsafe.Alignof(ds), reflect.TypeOf(DeviceStats{}), sizeNote, []layoutField{
			fieldOf("struct_size", unsafe.Offsetof(ds.struct_size), unsafe.Sizeof(ds.struct_size), ""),
			fieldOf("device", unsafe.Offsetof(ds.device), unsafe.Sizeof(ds.device), "Device"),
			fieldOf("stage", unsafe.Offsetof(ds.stage), unsafe.Sizeof(ds.stage), "Stage"),
			fieldOf("tp_rank", unsafe.Offsetof(ds.tp_rank), unsafe.Sizeof(ds.tp_rank), "TPRank"),
			fieldOf("tp_size", unsafe.Offsetof(ds.tp_size), unsafe.Sizeof(ds.tp_size), "TPSize"),
			fieldOf("first_layer", unsafe.Offsetof(ds.first_layer), unsafe.Sizeof(ds.first_layer), "FirstLayer"),
			fieldOf("end_layer", unsafe.Offsetof(ds.end_layer), unsafe.Sizeof(ds.end_layer), "EndLayer"),
			fieldOf("kv_heads", unsafe.Offsetof(ds.kv_heads), unsafe.Sizeof(ds.kv_heads), "KVHeads"),
			fieldOf("weight_bytes", unsafe.Offsetof(ds.weight_bytes), unsafe.Sizeof(ds.weight_bytes), "WeightBytes"),
			fieldOf("kv_bytes", unsafe.Offsetof(ds.kv_bytes), unsafe.Sizeof(ds.kv_bytes), "KVBytes"),
			fieldOf("layer_weight_bytes", unsafe.Offsetof(ds.layer_weight_bytes), unsafe.Sizeof(ds.layer_weight_bytes), "LayerWeightBytes"),
			fieldOf("kvp_rank", unsafe.Offsetof(ds.kvp_rank), unsafe.Sizeof(ds.kvp_rank), "KVPRank"),
			fieldOf("kvp_size", unsafe.Offsetof(ds.kvp_size), unsafe.Sizeof(ds.kvp_size), "KVPSize"),
		}},
		{"pagoda_histogram_t", unsafe.Sizeof(hi), unsafe.Alignof(hi), reflect.TypeOf(Histogram{}),
			"n_bounds is the Go slices' length", []layoutField{
				fieldOf("n_bounds", unsafe.Offsetof(hi.n_bounds), unsafe.Sizeof(hi.n_bounds), ""),
				fieldOf("upper_bounds", unsafe.Offsetof(hi.upper_bounds), unsafe.Sizeof(hi.upper_bounds), "UpperBounds"),
				fieldOf("cumulative_counts", unsafe.Offsetof(hi.cumulative_counts), unsafe.Sizeof(hi.cumulative_counts), "CumulativeCounts"),
				fieldOf("count", unsafe.Offsetof(hi.count), unsafe.Sizeof(hi.count), "Count"),
				fieldOf("sum", unsafe.Offsetof(hi.sum), unsafe.Sizeof(hi.sum), "Sum"),
			}},
		{"pagoda_engine_metrics_t", unsafe.Sizeof(em), unsafe.Alignof(em), reflect.TypeOf(EngineMetrics{}), sizeNote, []layoutField{
			fieldOf("struct_size", unsafe.Offsetof(em.struct_size), unsafe.Sizeof(em.struct_size), ""),
			fieldOf("requests_running", unsafe.Offsetof(em.requests_running), unsafe.Sizeof(em.requests_running), "RequestsRunning"),
			fieldOf("requests_waiting", unsafe.Offsetof(em.requests_waiting), unsafe.Sizeof(em.requests_waiting), "RequestsWaiting"),
			fieldOf("requests_swapped", unsafe.Offsetof(em.requests_swapped), unsafe.Sizeof(em.requests_swapped), "RequestsSwapped"),
			fieldOf("kv_blocks_used", unsafe.Offsetof(em.kv_blocks_used), unsafe.Sizeof(em.kv_blocks_used), "KVBlocksUsed"),
			fieldOf("kv_blocks_total", unsafe.Offsetof(em.kv_blocks_total), unsafe.Sizeof(em.kv_blocks_total), "KVBlocksTotal"),
			fieldOf("kv_cache_usage", unsafe.Offsetof(em.kv_cache_usage), unsafe.Sizeof(em.kv_cache_usage), "KVCacheUsage"),
			fieldOf("prompt_tokens", unsafe.Offsetof(em.prompt_tokens), unsafe.Sizeof(em.prompt_tokens), "PromptTokens"),
			fieldOf("prompt_tokens_computed", unsafe.Offsetof(em.prompt_tokens_computed), unsafe.Sizeof(em.prompt_tokens_computed), "PromptTokensComputed"),
			fieldOf("generation_tokens", unsafe.Offsetof(em.generation_tokens), unsafe.Sizeof(em.generation_tokens), "GenerationTokens"),
			fieldOf("requests_finished_stop", unsafe.Offsetof(em.requests_finished_stop), unsafe.Sizeof(em.requests_finished_stop), "RequestsFinishedStop"),
			fieldOf("requests_finished_length", unsafe.Offsetof(em.requests_finished_length), unsafe.Sizeof(em.requests_finished_length), "RequestsFinishedLength"),
			fieldOf("requests_finished_aborted", unsafe.Offsetof(em.requests_finished_aborted), unsafe.Sizeof(em.requests_finished_aborted), "RequestsFinishedAborted"),
			fieldOf("requests_finished_error", unsafe.Offsetof(em.requests_finished_error), unsafe.Sizeof(em.requests_finished_error), "RequestsFinishedError"),
			fieldOf("preemptions_recompute", unsafe.Offsetof(em.preemptions_recompute), unsafe.Sizeof(em.preemptions_recompute), "PreemptionsRecompute"),
			fieldOf("preemptions_swap", unsafe.Offsetof(em.preemptions_swap), unsafe.Sizeof(em.preemptions_swap), "PreemptionsSwap"),
			fieldOf("prefix_cache_queries", unsafe.Offsetof(em.prefix_cache_queries), unsafe.Sizeof(em.prefix_cache_queries), "PrefixCacheQueries"),
			fieldOf("prefix_cache_hits", unsafe.Offsetof(em.prefix_cache_hits), unsafe.Sizeof(em.prefix_cache_hits), "PrefixCacheHits"),
			fieldOf("time_to_first_token", unsafe.Offsetof(em.time_to_first_token), unsafe.Sizeof(em.time_to_first_token), "TimeToFirstToken"),
			fieldOf("inter_token_latency", unsafe.Offsetof(em.inter_token_latency), unsafe.Sizeof(em.inter_token_latency), "InterTokenLatency"),
			fieldOf("e2e_request_latency", unsafe.Offsetof(em.e2e_request_latency), unsafe.Sizeof(em.e2e_request_latency), "E2ERequestLatency"),
			fieldOf("request_queue_time", unsafe.Offsetof(em.request_queue_time), unsafe.Sizeof(em.request_queue_time), "RequestQueueTime"),
		}},
		{"pagoda_device_info_t", unsafe.Sizeof(di), unsafe.Alignof(di), reflect.TypeOf(DeviceInfo{}), sizeNote, []layoutField{
			fieldOf("struct_size", unsafe.Offsetof(di.struct_size), unsafe.Sizeof(di.struct_size), ""),
			fieldOf("kind", unsafe.Offsetof(di.kind), unsafe.Sizeof(di.kind), "Kind"),
			fieldOf("flags", unsafe.Offsetof(di.flags), unsafe.Sizeof(di.flags), "Flags"),
			fieldOf("compute_units", unsafe.Offsetof(di.compute_units), unsafe.Sizeof(di.compute_units), "ComputeUnits"),
			fieldOf("total_memory", unsafe.Offsetof(di.total_memory), unsafe.Sizeof(di.total_memory), "TotalMemory"),
			fieldOf("free_memory", unsafe.Offsetof(di.free_memory), unsafe.Sizeof(di.free_memory), "FreeMemory"),
			fieldOf("name", unsafe.Offsetof(di.name), unsafe.Sizeof(di.name), "Name"),
			fieldOf("arch", unsafe.Offsetof(di.arch), unsafe.Sizeof(di.arch), "Arch"),
		}},
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
	var c C.pagoda_engine_options_t
	return engineOptionsFromC(o.toC(&c))
}

func roundTripSimulateOptions(o SimulateOptions) SimulateOptions {
	var c C.pagoda_simulate_options_t
	return simulateOptionsFromC(o.toC(&c))
}
