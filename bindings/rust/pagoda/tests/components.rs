//! Backends, model, tokenizer, mesh, plan, KV cache, placement and options, one by one.

mod common;

use pagoda::{
    ChatTemplateOptions, CostProfileOptions, DeviceKind, Dtype, EngineOptions, KvCache, KvCacheOptions,
    LinkProfileOptions, Mesh, MeshOptions, Model, Objective, Plan, PlanOptions, Preemption, RequestOptions,
    SimulateOptions, Status, Tokenizer, TOKENIZE_ADD_SPECIAL,
};

#[test]
fn the_version_is_the_headers() {
    assert!(pagoda::abi_compatible());
    let n = pagoda::version_number();
    assert_eq!(pagoda::version(), format!("{}.{}.{}", n / 10000, n / 100 % 100, n % 100));
}

#[test]
fn block_types_have_blocks_not_sizes() {
    assert_eq!(Dtype::BF16.block(), Some((1, 2)));
    assert_eq!(Dtype::Q8_0.block(), Some((32, 34)));
    assert_eq!(Dtype::Q4_K.block(), Some((256, 144)));
    assert_eq!((Dtype::Q6_K.size(), Dtype::Q6_K.name().as_str()), (0, "q6_k"));
    assert_eq!(Dtype::from_raw(Dtype::Q5_K.raw()), Some(Dtype::Q5_K));
    assert_eq!(Dtype::Other(99).block(), None);
}

#[test]
fn the_cpu_backend_is_found_and_described() {
    pagoda::backend::discover(None).unwrap();
    let cpu = pagoda::Backend::find("cpu").unwrap();
    assert_eq!(cpu.name().unwrap(), "cpu");
    assert!(cpu.path().unwrap().to_string_lossy().contains("libpagoda-backend-cpu"));
    assert!(!cpu.description().unwrap().is_empty());
    assert!(pagoda::backend::all().unwrap().contains(&cpu));
    assert!(cpu.device_count().unwrap() >= 1);
    let info = cpu.device_info(0).unwrap();
    assert_eq!(info.kind, DeviceKind::Cpu);
    assert!(info.host_accessible());
    assert!(info.total_memory > 0 && info.compute_units > 0 && !info.arch.is_empty());
    assert!(cpu.device_info(1000).is_err());
    let err = pagoda::Backend::find("nosuch").unwrap_err();
    assert_eq!(err.status(), Status::NotFound);
    assert!(err.message().contains("cpu"), "the message lists the loaded names: {:?}", err.message());
    let err =
        pagoda::Backend::load(std::path::Path::new("/nonexistent/libpagoda-backend-x.so"), None).unwrap_err();
    assert_eq!(err.status(), Status::NotFound);
    // The failed load above is recorded as skipped (the registry keeps failed loads too), and
    // every skipped plugin names its file.
    assert!(pagoda::backend::skipped().unwrap().iter().all(|s| !s.path.as_os_str().is_empty()));
}

#[test]
fn the_model_describes_itself() {
    let model = Model::open(common::model_path()).unwrap();
    let info = model.info().unwrap();
    assert_eq!(info.architecture, "llama");
    assert_eq!(info.vocab_size, 512);
    assert!(info.n_layers > 0 && info.hidden_size > 0 && info.n_parameters > 0);
    assert_eq!(model.path().unwrap(), common::model_path());
}

#[test]
fn the_tokenizer_round_trips() {
    let model = Model::open(common::model_path()).unwrap();
    let tokenizer = Tokenizer::from_model(&model).unwrap();
    let info = tokenizer.info().unwrap();
    assert_eq!(info.vocab_size, 512);
    assert_eq!(info.model, "spm");
    let bos = info.bos_token_id.expect("stories260K has BOS");
    let ids = tokenizer.encode("Once upon a time", TOKENIZE_ADD_SPECIAL).unwrap();
    assert_eq!(ids[0], bos);
    assert_eq!(tokenizer.decode(&ids[1..], 0).unwrap(), "Once upon a time");
    assert_eq!(tokenizer.decode(&ids, pagoda::DETOKENIZE_SKIP_SPECIAL).unwrap(), "Once upon a time");
    let pieces: Vec<u8> = ids[1..].iter().flat_map(|&id| tokenizer.token_to_piece(id).unwrap()).collect();
    assert_eq!(String::from_utf8(pieces).unwrap().trim_start(), "Once upon a time");
    assert!(tokenizer.encode("", 0).unwrap().is_empty());
    assert_eq!(Tokenizer::open("/nonexistent/tokenizer.json").unwrap_err().status(), Status::NotFound);
    // stories260K has no chat template: one given inline renders.
    let messages = r#"[{"role": "user", "content": "hi"}]"#;
    let err = tokenizer.apply_chat_template(messages, &ChatTemplateOptions::default()).unwrap_err();
    assert_eq!(err.status(), Status::Unsupported);
    let inline = ChatTemplateOptions {
        chat_template: Some("{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}".into()),
        add_generation_prompt: true,
        ..ChatTemplateOptions::default()
    };
    assert_eq!(tokenizer.apply_chat_template(messages, &inline).unwrap(), "<user>hi");
}

#[test]
fn a_mesh_names_its_devices() {
    let mesh = Mesh::new(&MeshOptions::default()).unwrap();
    assert_eq!(mesh.device_names().unwrap(), vec!["cpu:0".to_owned()]);
    assert!(mesh.device_name(1).is_err());
    let err = Mesh::new(&MeshOptions {
        devices: Some("cpu:0".into()),
        axes: Some("tp=3".into()),
        ..MeshOptions::default()
    })
    .unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
}

// A mesh in one process with its world given, and a rank outside its world. (Meshes over several
// processes are tested by the C suite; no second process is started here.)
#[test]
fn a_mesh_tells_its_world() {
    let one = MeshOptions { rank: Some(0), world_size: Some(1), timeout_ms: 5000, ..MeshOptions::default() };
    let mesh = Mesh::new(&one).unwrap();
    assert_eq!(mesh.world().unwrap(), (0, 1));
    assert_eq!(mesh.device_names().unwrap(), vec!["cpu:0".to_owned()]);
    assert_eq!(Mesh::new(&MeshOptions::default()).unwrap().world().unwrap(), (0, 1));

    let outside = MeshOptions { rank: Some(2), world_size: Some(2), ..MeshOptions::default() };
    let err = Mesh::new(&outside).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().contains("out of range"), "{:?}", err.message());
    let negative = MeshOptions { timeout_ms: -1, ..MeshOptions::default() };
    assert_eq!(Mesh::new(&negative).unwrap_err().status(), Status::InvalidArgument);
    let nul = MeshOptions { rendezvous: Some("a\0b".into()), ..MeshOptions::default() };
    assert_eq!(Mesh::new(&nul).unwrap_err().status(), Status::InvalidArgument);
}

#[test]
fn a_plan_is_data() {
    let model = Model::open(common::model_path()).unwrap();
    let mesh = Mesh::new(&MeshOptions::default()).unwrap();
    let options = PlanOptions { prompt_tokens: 64, ..PlanOptions::default() };
    assert_eq!(options.objective, Objective::Latency);
    let plan = Plan::new(&model, Some(&mesh), &options).unwrap();
    let summary = plan.summary().unwrap();
    assert_eq!(summary.n_stages, 1);
    let stages = plan.stages().unwrap();
    assert_eq!(stages[0].first_layer, 0);
    assert_eq!(stages[0].end_layer, model.info().unwrap().n_layers);
    assert!(stages[0].has_embedding && stages[0].has_head);
    assert_eq!(stages[0].expert_parallel, 1, "a dense model's stages do not split experts");
    assert!(summary.n_slices >= 1);
    let sliced: i64 = (0..summary.n_slices).map(|i| plan.slice_length(i).unwrap()).sum();
    assert_eq!(sliced, 64);
    assert!(plan.slice_length(summary.n_slices).is_err());
    assert!(plan.stage(1).is_err());
    let json = plan.to_json().unwrap();
    let again = Plan::from_json(&json).unwrap();
    assert_eq!(again.to_json().unwrap(), json);
    // A cache and an engine run the plan.
    let cache = KvCache::new(
        &model,
        &mesh,
        Some(&plan),
        &KvCacheOptions { num_blocks: 16, ..KvCacheOptions::default() },
    )
    .unwrap();
    let engine = pagoda::Engine::new(&model, &mesh, Some(&plan), &cache, &EngineOptions::default()).unwrap();
    engine.submit_text("Once", &RequestOptions { max_tokens: 4, ..RequestOptions::greedy() }).unwrap();
    assert!(engine.outputs().map(|o| o.unwrap().token_ids.len()).sum::<usize>() > 0);
}

#[test]
fn a_plan_from_a_config_needs_no_weights() {
    let dir = std::env::temp_dir().join(format!("pagoda-rust-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("config.json");
    std::fs::write(
        &config,
        r#"{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256,
            "intermediate_size": 688, "num_hidden_layers": 8, "num_attention_heads": 8,
            "num_key_value_heads": 4, "vocab_size": 1000, "max_position_embeddings": 1024,
            "rms_norm_eps": 1e-5, "tie_word_embeddings": false}"#,
    )
    .unwrap();
    let options = PlanOptions { mesh_shape: Some("1x2".into()), stages: 2, ..PlanOptions::default() };
    let plan = Plan::from_config(&config, &options);
    std::fs::remove_dir_all(&dir).unwrap();
    let stages = plan.unwrap().stages().unwrap();
    assert_eq!(stages.len(), 2);
    assert_eq!(
        (stages[0].first_layer, stages[0].end_layer, stages[1].end_layer),
        (0, stages[1].first_layer, 8)
    );
    let err = Plan::from_config("/nonexistent/config.json", &options).unwrap_err();
    assert!(err.message().contains("/nonexistent/config.json"), "{:?}", err.message());
}

#[test]
fn a_placement_is_searched() {
    let spec = r#"{"cluster": {"devices_per_node": 2, "device": "h100"},
        "models": [{"name": "a", "shape": {"hidden": 1024, "intermediate": 2816, "layers": 8,
                    "heads": 16, "kv_heads": 16, "vocab": 32000}, "slo": 1.0}]}"#;
    let workload = SimulateOptions { duration_seconds: 30.0, ..SimulateOptions::default() };
    let placement = pagoda::placement::search(spec, Some(&workload)).unwrap();
    assert!(placement.contains("\"groups\"") && placement.contains("\"search\""), "{}", placement);
    let result = pagoda::placement::simulate(&placement, &workload).unwrap();
    assert!(result.contains("\"slo_attainment\""));
    let err = pagoda::placement::search(r#"{"cluster": {}, "models": [], "bogus": 1}"#, None).unwrap_err();
    assert!(matches!(err.status(), Status::Format | Status::InvalidArgument), "{}", err);
}

#[test]
fn layer_costs_are_profiled_for_the_search() {
    let folder = std::env::temp_dir().join(format!("pagoda-rust-costs-{}", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    let costs = folder.join("costs.json");
    let options = CostProfileOptions { max_tokens: 16, granularity: 8, grid: 2, repeats: 1, beside: None };
    let entry = pagoda::placement::profile_costs(common::model_path(), "cpu:0", &options, &costs).unwrap();
    assert!(entry.contains("\"no_context_seconds\"") && entry.contains("\"device\":\"cpu:0 "), "{}", entry);
    assert!(std::fs::read_to_string(&costs).unwrap().contains("pagoda-costs"));
    let itself = CostProfileOptions { beside: Some("cpu:0".into()), ..options.clone() };
    let err = pagoda::placement::profile_costs(common::model_path(), "cpu:0", &itself, &costs).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument, "{}", err);
    assert!(err.message().contains("beside"), "{}", err);
    std::fs::remove_dir_all(&folder).unwrap();
}

#[test]
fn links_are_refused_on_one_device() {
    let options = LinkProfileOptions::default();
    assert_eq!((options.min_bytes, options.max_bytes, options.repeats), (4096, 8 << 20, 10));
    let mesh = Mesh::new(&MeshOptions { devices: Some("cpu:0".into()), ..MeshOptions::default() }).unwrap();
    let err = pagoda::placement::profile_links(&mesh, &options, None).unwrap_err();
    assert_eq!(err.status(), Status::Unsupported, "{}", err);
    assert!(err.message().contains("no link to time"), "{}", err);
    let odd = LinkProfileOptions { min_bytes: 6, ..options };
    let err = pagoda::placement::profile_links(&mesh, &odd, None).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument, "{}", err);
    assert!(err.message().contains("min_bytes"), "{}", err);
}

#[test]
fn a_placement_is_simulated() {
    let placement = r#"{"models": [{"name": "a", "slo": 2.0}],
        "groups": [{"devices": [0], "pipeline": 1, "tensor": 1,
                    "replicas": [{"model": "a", "stage_seconds": [0.1]}]}]}"#;
    let options = SimulateOptions { duration_seconds: 60.0, ..SimulateOptions::default() };
    let result = pagoda::placement::simulate(placement, &options).unwrap();
    assert!(result.contains("\"slo_attainment\""), "{}", result);
    let err = pagoda::placement::simulate("{", &options).unwrap_err();
    assert_eq!(err.status(), Status::Format);
}

#[test]
fn defaults_are_the_librarys() {
    let r = RequestOptions::default();
    assert_eq!((r.max_tokens, r.temperature, r.n, r.top_p), (256, 1.0, 1, 1.0));
    assert_eq!((r.logprobs, r.prompt_logprobs), (None, None));
    assert!(!r.ignore_eos);
    let e = EngineOptions::default();
    assert_eq!((e.max_num_seqs, e.max_num_batched_tokens), (256, 2048));
    assert_eq!(e.preemption, Preemption::Auto);
    assert_eq!(e.activation_dtype, None);
    let k = KvCacheOptions::default();
    assert_eq!((k.dtype, k.prefix_caching), (None, true));
    assert_eq!(Dtype::BF16.size(), 2);
    assert_eq!(Dtype::BF16.name(), "bf16");
    assert_eq!(Dtype::from_raw(0), None);
}
