//! The layout of every struct this crate declares, compared with the C compiler's: the program
//! named by `PAGODA_ABI_LAYOUT` (CMake's `pagoda-abi-layout`) prints one line per public struct,
//! `struct <name> <sizeof> <alignof>`, and one per field, `field <struct>.<field> <offset> <size>`.
//!
//! Three checks, so that no layout change goes unnoticed:
//! - each Rust struct lists all its fields in the table below (an exhaustive pattern: a field
//!   added to a struct but not to the table does not compile);
//! - each struct's size and alignment, and each field's offset and size, equal the printer's,
//!   and the printer knows no field of that struct that the table lacks;
//! - every struct defined in a header this crate covers is declared here.

use pagoda_sys::*;
use std::collections::{BTreeMap, BTreeSet};
use std::mem::{align_of, size_of, MaybeUninit};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::ptr::addr_of;

#[path = "support/installed_program.rs"]
mod installed;

/// Headers whose structs this crate declares in full. backend.h is left out on purpose: its
/// plugin tables are for plugins; only its `pagoda_device_info_t` is host-facing (declared,
/// and checked, below).
const COVERED_HEADERS: &[&str] = &[
    "engine.h",
    "engine_stats.h",
    "kernel_choice.h",
    "kv_cache.h",
    "mesh.h",
    "model.h",
    "plan.h",
    "quantize.h",
    "request.h",
    "tokenizer.h",
];

struct Layout {
    name: &'static str,
    size: usize,
    align: usize,
    /// (field, offset, size)
    fields: Vec<(&'static str, usize, usize)>,
}

fn size_of_pointee<T>(_: *const T) -> usize {
    size_of::<T>()
}

/// The Rust layout of a struct, given every one of its fields.
macro_rules! layout {
    ($ty:ident { $($field:ident),* $(,)? }) => {{
        // Never called: it only fails to compile when a field of the struct is not listed.
        #[allow(dead_code)]
        fn all_fields_listed(value: &$ty) {
            let $ty { $($field: _),* } = value;
        }
        let probe = MaybeUninit::<$ty>::uninit();
        let base = probe.as_ptr();
        // SAFETY: addr_of! takes the fields' addresses without reading the uninitialised memory
        // or making references to it.
        let fields = unsafe {
            vec![$((
                // A field named as a Rust keyword is a raw identifier (r#type); C names it plainly.
                stringify!($field).trim_start_matches("r#"),
                addr_of!((*base).$field) as usize - base as usize,
                size_of_pointee(addr_of!((*base).$field)),
            )),*]
        };
        Layout { name: stringify!($ty), size: size_of::<$ty>(), align: align_of::<$ty>(), fields }
    }};
}

fn declared() -> Vec<Layout> {
    vec![
        layout!(pagoda_device_info_t {
            struct_size,
            kind,
            flags,
            compute_units,
            total_memory,
            free_memory,
            name,
            arch
        }),
        layout!(pagoda_model_options_t { struct_size, progress, progress_user }),
        layout!(pagoda_quantize_options_t { struct_size, r#type, threads, progress, progress_user }),
        layout!(pagoda_quantized_type_stats_t { ggml_type, name, tensors, values, rmse, relative_rmse }),
        layout!(pagoda_quantize_stats_t {
            struct_size,
            input_bytes,
            output_bytes,
            tensors_kept,
            n_types,
            types
        }),
        layout!(pagoda_model_info_t {
            struct_size,
            architecture,
            vocab_size,
            hidden_size,
            intermediate_size,
            n_layers,
            n_heads,
            n_kv_heads,
            head_dim,
            max_position,
            n_parameters,
            bos_token_id,
            eos_token_id,
            n_experts,
            experts_per_token,
            expert_intermediate_size,
            n_sparse_layers,
        }),
        layout!(pagoda_tokenizer_info_t {
            struct_size,
            vocab_size,
            bos_token_id,
            eos_token_id,
            unk_token_id,
            pad_token_id,
            model,
        }),
        layout!(pagoda_chat_template_options_t {
            struct_size,
            add_generation_prompt,
            chat_template,
            template_name,
            tools_json,
            context_json,
        }),
        layout!(pagoda_mesh_options_t {
            struct_size,
            devices,
            axes,
            rank,
            world_size,
            rendezvous,
            bootstrap,
            bootstrap_user,
            timeout_ms,
        }),
        layout!(pagoda_kv_cache_options_t {
            struct_size,
            block_size,
            dtype,
            num_blocks,
            memory_bytes,
            swap_bytes,
            prefix_caching,
        }),
        layout!(pagoda_kv_cache_stats_t {
            struct_size,
            block_size,
            blocks_total,
            blocks_used,
            blocks_free,
            slots_used,
            sequences,
            bytes_per_block,
            blocks_cached,
            slots_wasted,
            swap_blocks_total,
            swap_blocks_used,
            prefix_queries,
            prefix_hits,
        }),
        layout!(pagoda_plan_options_t {
            struct_size,
            objective,
            micro_batches,
            stages,
            tensor_parallel,
            device,
            cost_file,
            mesh_shape,
            step_tokens,
            context_tokens,
            kv_tokens,
            prompt_tokens,
            granularity,
            epsilon_seconds,
            expert_parallel,
        }),
        layout!(pagoda_plan_stage_t {
            struct_size,
            first_layer,
            end_layer,
            nodes,
            devices,
            tensor_parallel,
            has_embedding,
            has_head,
            seconds,
            memory_bytes,
            expert_parallel,
        }),
        layout!(pagoda_plan_summary_t {
            struct_size,
            n_stages,
            latency_seconds,
            max_stage_seconds,
            throughput_per_second,
            objective_seconds,
            n_slices,
            sliced_prefill_seconds,
            uniform_prefill_seconds,
        }),
        layout!(pagoda_simulate_options_t {
            struct_size,
            rate_per_model,
            total_rate,
            cv,
            slo_seconds,
            duration_seconds,
            seed,
            overhead_seconds,
            reject_late,
        }),
        layout!(pagoda_cost_profile_options_t {
            struct_size,
            max_tokens,
            granularity,
            grid,
            repeats,
            beside,
        }),
        layout!(pagoda_link_profile_options_t { struct_size, min_bytes, max_bytes, repeats }),
        layout!(pagoda_request_options_t {
            struct_size,
            flags,
            max_tokens,
            temperature,
            top_k,
            top_p,
            min_p,
            repetition_penalty,
            presence_penalty,
            frequency_penalty,
            seed,
            stop_token_ids,
            n_stop_token_ids,
            stop_strings,
            n_stop_strings,
            logprobs,
            prompt_logprobs,
            n,
            best_of,
            beam_width,
            length_penalty,
            early_stopping,
            priority,
            logit_bias,
            n_logit_bias,
            bad_words_token_ids,
            bad_words_lengths,
            n_bad_words,
            allowed_token_ids,
            n_allowed_token_ids,
            logits_processor,
            logits_processor_user,
            min_tokens,
            constraint_kind,
            constraint,
            pooling,
            embedding_normalize,
        }),
        layout!(pagoda_logit_bias_t { token_id, bias }),
        layout!(pagoda_logprob_t { token_id, logprob }),
        layout!(pagoda_output_t {
            struct_size,
            request_id,
            finish_reason,
            status,
            error,
            token_ids,
            n_tokens,
            text,
            text_len,
            logprobs,
            top_logprobs,
            n_top_logprobs,
            n_prompt_tokens,
            n_generated,
            prompt_logprobs,
            prompt_top_logprobs,
            n_prompt_top_logprobs,
            sequence_index,
            cumulative_logprob,
            request_finished,
            embedding,
            n_embedding,
        }),
        layout!(pagoda_engine_options_t {
            struct_size,
            max_num_seqs,
            max_num_batched_tokens,
            on_output,
            on_output_user,
            preemption,
            kv_reservation,
            decode_graphs,
            device_sampling,
            activation_dtype,
            pipeline_micro_batches,
            quantized_matmul,
            kernel_choices_file,
            kernel_choice,
        }),
        layout!(pagoda_engine_stats_t {
            struct_size,
            requests_waiting,
            requests_running,
            requests_swapped,
            requests_finished,
            preemptions_recompute,
            preemptions_swap,
            steps,
            prompt_tokens,
            generated_tokens,
            batched_sequences,
            graph_steps,
            device_sampled_tokens,
        }),
        layout!(pagoda_device_stats_t {
            struct_size,
            device,
            stage,
            tp_rank,
            tp_size,
            first_layer,
            end_layer,
            kv_heads,
            weight_bytes,
            kv_bytes,
            layer_weight_bytes,
            kvp_rank,
            kvp_size,
            ep_rank,
            ep_size,
            expert_weight_bytes,
        }),
        layout!(pagoda_kernel_choice_info_t {
            struct_size,
            w_dtype,
            x_dtype,
            y_dtype,
            flags,
            n,
            k,
            m,
            seconds,
            rules_seconds,
            device,
            variant,
        }),
        layout!(pagoda_histogram_t { n_bounds, upper_bounds, cumulative_counts, count, sum }),
        layout!(pagoda_engine_metrics_t {
            struct_size,
            requests_running,
            requests_waiting,
            requests_swapped,
            kv_blocks_used,
            kv_blocks_total,
            kv_cache_usage,
            prompt_tokens,
            prompt_tokens_computed,
            generation_tokens,
            requests_finished_stop,
            requests_finished_length,
            requests_finished_aborted,
            requests_finished_error,
            preemptions_recompute,
            preemptions_swap,
            prefix_cache_queries,
            prefix_cache_hits,
            time_to_first_token,
            inter_token_latency,
            e2e_request_latency,
            request_queue_time,
        }),
    ]
}

/// What the C side says: struct name -> (size, align), and (struct, field) -> (offset, size).
#[derive(Default)]
struct CLayouts {
    structs: BTreeMap<String, (usize, usize)>,
    fields: BTreeMap<(String, String), (usize, usize)>,
}

fn number(word: Option<&str>, line: &str) -> usize {
    word.and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("pagoda-abi-layout printed a line this test cannot read: {:?}", line))
}

fn parse_printer(text: &str) -> CLayouts {
    let mut c = CLayouts::default();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let mut words = line.split_whitespace();
        let kind = words.next();
        let name = words.next().unwrap_or_default().to_owned();
        let (a, b) = (number(words.next(), line), number(words.next(), line));
        assert!(words.next().is_none(), "unexpected words in {:?}", line);
        match kind {
            Some("struct") => {
                c.structs.insert(name, (a, b));
            }
            Some("field") => {
                let (s, f) =
                    name.split_once('.').unwrap_or_else(|| panic!("a field without its struct: {:?}", line));
                c.fields.insert((s.to_owned(), f.to_owned()), (a, b));
            }
            _ => panic!("pagoda-abi-layout printed a line this test cannot read: {:?}", line),
        }
    }
    c
}

/// The printer: `PAGODA_ABI_LAYOUT` (CTest sets it), else the one installed with the libpagoda
/// that pkg-config finds (`<libexecdir>/pagoda/pagoda-abi-layout`); `None` (skip) when neither.
fn printer_path() -> Option<PathBuf> {
    installed::installed_program(
        "PAGODA_ABI_LAYOUT",
        "libexecdir",
        "pagoda/pagoda-abi-layout",
        "the layout comparison",
    )
}

fn run_printer(printer: &Path) -> CLayouts {
    let out = Command::new(printer).output().unwrap_or_else(|e| panic!("cannot run {:?}: {}", printer, e));
    assert!(out.status.success(), "{:?} failed: {}", printer, String::from_utf8_lossy(&out.stderr));
    let c = parse_printer(&String::from_utf8(out.stdout).expect("the printer's output is not UTF-8"));
    assert!(!c.structs.is_empty(), "{:?} printed no struct", printer);
    c
}

/// The structs a header defines: the names of `typedef struct x { ... } x_t;`.
fn structs_defined_in(header: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut in_struct = false;
    for line in header.lines() {
        let line = line.trim();
        if line.starts_with("typedef struct ") && line.ends_with('{') {
            in_struct = true;
        } else if line.starts_with("typedef ") {
            in_struct = false;
        } else if in_struct && line.starts_with('}') && line.ends_with(';') {
            names.push(line.trim_start_matches('}').trim_end_matches(';').trim().to_owned());
            in_struct = false;
        }
    }
    names
}

fn include_dir() -> PathBuf {
    match std::env::var_os("PAGODA_INCLUDE_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../include"),
    }
}

#[test]
fn every_declared_struct_matches_the_c_layout() {
    let c = match printer_path() {
        Some(printer) => run_printer(&printer),
        None => return,
    };
    let mut errors = Vec::new();
    for l in declared() {
        match c.structs.get(l.name) {
            None => errors.push(format!("{}: not printed by pagoda-abi-layout", l.name)),
            Some(&(size, align)) => {
                if (size, align) != (l.size, l.align) {
                    errors.push(format!(
                        "{}: C has size {} align {}, Rust size {} align {}",
                        l.name, size, align, l.size, l.align
                    ));
                }
            }
        }
        let rust_fields: BTreeSet<&str> = l.fields.iter().map(|f| f.0).collect();
        for ((s, f), _) in c.fields.iter().filter(|((s, _), _)| s == l.name) {
            if !rust_fields.contains(f.as_str()) {
                errors.push(format!("{}.{}: in the C struct, missing in Rust", s, f));
            }
        }
        for &(field, offset, size) in &l.fields {
            match c.fields.get(&(l.name.to_owned(), field.to_owned())) {
                None => errors.push(format!("{}.{}: in Rust, not in the C struct", l.name, field)),
                Some(&c_field) if c_field != (offset, size) => errors.push(format!(
                    "{}.{}: C has offset {} size {}, Rust offset {} size {}",
                    l.name, field, c_field.0, c_field.1, offset, size
                )),
                Some(_) => {}
            }
        }
    }
    assert!(errors.is_empty(), "layouts differ:\n{}", errors.join("\n"));
}

#[test]
fn every_struct_of_the_covered_headers_is_declared() {
    let declared: BTreeSet<&str> = declared().iter().map(|l| l.name).collect();
    let mut missing = Vec::new();
    for header in COVERED_HEADERS {
        let path = include_dir().join("pagoda").join(header);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {:?}: {}", path, e));
        let defined = structs_defined_in(&text);
        assert!(!defined.is_empty(), "{:?} seems to define no struct: the parser is out of date", path);
        missing.extend(
            defined
                .into_iter()
                .filter(|s| !declared.contains(s.as_str()))
                .map(|s| format!("{} ({})", s, header)),
        );
    }
    assert!(
        missing.is_empty(),
        "structs of covered headers not declared in pagoda-sys: {}",
        missing.join(", ")
    );
}

#[test]
fn the_printer_reader_rejects_what_it_cannot_read() {
    let ok = parse_printer("struct a_t 16 8\nfield a_t.x 8 4\n");
    assert_eq!(ok.structs.get("a_t"), Some(&(16, 8)));
    assert_eq!(ok.fields.get(&("a_t".to_owned(), "x".to_owned())), Some(&(8, 4)));
    for bad in ["struct a_t 16", "fields a_t.x 1 2", "field a_t 1 2", "struct a_t 1 2 3"] {
        assert!(std::panic::catch_unwind(|| parse_printer(bad)).is_err(), "{:?} was accepted", bad);
    }
}
