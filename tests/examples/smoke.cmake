# cmake -DCHECK=<devices|devices_json|usage|generate|mesh|mesh_processes|plan|simulate|place|profile|
#               hello_backends|apply_template>
#       -DPAGODA=<pagoda> -DHELLO=<hello> -DVERSION=<x.y.z> [-DCHAT_MODEL_DIR=<dir>] [-DMPIRUN=<mpirun>]
#       -P smoke.cmake
cmake_minimum_required(VERSION 3.25)

# run(<expected exit code> <command...>): runs it; its stdout and stderr land in OUT and ERR.
function(run expected)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(JOIN " " cmd ${ARGN})
  message(STATUS "$ ${cmd}  -> exit ${rc}\n${out}${err}")
  if(NOT rc STREQUAL expected)
    message(FATAL_ERROR "`${cmd}` exited with ${rc}, expected ${expected}")
  endif()
  set(OUT "${out}" PARENT_SCOPE)
  set(ERR "${err}" PARENT_SCOPE)
endfunction()

function(expect_match regex text what)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "${what}: expected to match '${regex}'")
  endif()
endfunction()

if(CHECK STREQUAL "devices")
  run(0 ${PAGODA} devices)
  expect_match("cpu: [^\n]+\n  plugin  [^\n]*libpagoda-backend-cpu\\.so\n  cpu:0  " "${OUT}"
    "pagoda devices lists the cpu backend and its first device")
  expect_match("kind cpu, arch [^,]+, [1-9][0-9]* compute units, memory [0-9.]+ [KMGT]i?B"
    "${OUT}" "pagoda devices describes the CPU device")

elseif(CHECK STREQUAL "devices_json")
  run(0 ${PAGODA} devices --json)
  string(JSON version GET "${OUT}" version)
  if(NOT version STREQUAL VERSION)
    message(FATAL_ERROR "JSON version is ${version}, expected ${VERSION}")
  endif()
  string(JSON n_backends LENGTH "${OUT}" backends)
  string(JSON n_skipped LENGTH "${OUT}" skipped) # present even when empty
  set(cpu_devices -1)
  math(EXPR last "${n_backends} - 1")
  foreach(i RANGE ${last})
    string(JSON name GET "${OUT}" backends ${i} name)
    if(name STREQUAL "cpu")
      string(JSON cpu_devices LENGTH "${OUT}" backends ${i} devices)
      string(JSON kind GET "${OUT}" backends ${i} devices 0 kind)
      string(JSON units GET "${OUT}" backends ${i} devices 0 compute_units)
      string(JSON total GET "${OUT}" backends ${i} devices 0 total_memory)
      if(NOT kind STREQUAL "cpu" OR units LESS 1 OR total LESS 1)
        message(FATAL_ERROR "cpu:0 is described as kind=${kind} units=${units} memory=${total}")
      endif()
    endif()
  endforeach()
  if(cpu_devices LESS 1)
    message(FATAL_ERROR "no cpu backend with devices in the JSON output")
  endif()

elseif(CHECK STREQUAL "usage")
  run(0 ${PAGODA} --version)
  expect_match("^pagoda ${VERSION} " "${OUT}" "--version")
  run(0 ${PAGODA} --help)
  expect_match("Usage: pagoda <command>" "${OUT}" "--help prints the usage on stdout")
  expect_match("\n  devices " "${OUT}" "--help lists the devices command")
  expect_match("\n  serve " "${OUT}" "--help lists the serve command")
  run(0 ${PAGODA} serve --help)
  expect_match("--served-model-name" "${OUT}" "serve --help")
  run(2 ${PAGODA} serve --port 70000)
  run(0 ${PAGODA} devices --help)
  expect_match("--json" "${OUT}" "devices --help")
  # Usage errors: exit code 2, the usage on stderr, nothing on stdout.
  foreach(args "frobnicate" "--frobnicate" "" "devices;--frobnicate")
    run(2 ${PAGODA} ${args})
    expect_match("Usage: pagoda" "${ERR}" "`pagoda ${args}` prints the usage on stderr")
    if(NOT OUT STREQUAL "")
      message(FATAL_ERROR "`pagoda ${args}` wrote to stdout: ${OUT}")
    endif()
  endforeach()

elseif(CHECK STREQUAL "generate")
  # The main job: greedy text from the bundled stories260K is the text SOURCE.md records for
  # llama.cpp (prompt "Once upon a time", 40 tokens), token for token.
  set(story "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball.")
  run(0 ${PAGODA} generate --prompt "Once upon a time" --max-tokens 40 --temperature 0)
  string(STRIP "${OUT}" printed)
  if(NOT printed STREQUAL story)
    message(FATAL_ERROR "generate printed\n  '${printed}'\nexpected\n  '${story}'")
  endif()
  expect_match("40 generated \\(length\\)" "${ERR}" "generate reports what it generated")
  run(0 ${PAGODA} generate --prompt "Once upon a time" --max-tokens 40 --temperature 0
    --prompt-logprobs 2 --json)
  string(JSON n LENGTH "${OUT}" token_ids)
  string(JSON text GET "${OUT}" text)
  string(JSON finish GET "${OUT}" finish_reason)
  string(JSON n_prompt GET "${OUT}" n_prompt_tokens)
  string(JSON first_pos TYPE "${OUT}" prompt_logprobs 0)
  string(JSON n_top LENGTH "${OUT}" prompt_logprobs 1 top)
  string(JSON lp GET "${OUT}" prompt_logprobs 1 logprob)
  if(NOT n EQUAL 40 OR NOT "Once upon a time${text}" STREQUAL story OR NOT finish STREQUAL "length"
     OR NOT first_pos STREQUAL "NULL" OR NOT n_top EQUAL 2 OR lp GREATER 0)
    message(FATAL_ERROR "generate --json: unexpected object ${OUT}")
  endif()
  string(JSON n_lp LENGTH "${OUT}" prompt_logprobs)
  if(NOT n_lp EQUAL n_prompt)
    message(FATAL_ERROR "prompt_logprobs has ${n_lp} positions for ${n_prompt} prompt tokens")
  endif()
  # Token ids in, the same story out: BOS then the prompt's ids, as tokenize gives them.
  run(0 ${PAGODA} tokenize --text "Once upon a time" --add-special --json)
  string(JSON n_ids LENGTH "${OUT}" ids)
  math(EXPR last "${n_ids} - 1")
  set(ids "")
  foreach(i RANGE ${last})
    string(JSON id GET "${OUT}" ids ${i})
    list(APPEND ids ${id})
  endforeach()
  list(GET ids 0 bos)
  if(NOT bos EQUAL 1)
    message(FATAL_ERROR "tokenize --add-special does not start with BOS (1): ${OUT}")
  endif()
  string(JOIN "," id_list ${ids})
  run(0 ${PAGODA} generate --prompt-ids ${id_list} --max-tokens 40 --temperature 0 --json)
  string(JSON text GET "${OUT}" text)
  if(NOT "Once upon a time${text}" STREQUAL story)
    message(FATAL_ERROR "generate --prompt-ids ${id_list} gave '${text}'")
  endif()
  # Bad input: a clear message and exit code 1 or 2, never a crash.
  run(2 ${PAGODA} generate --max-tokens 4)
  expect_match("give one of --prompt or --prompt-ids" "${ERR}" "generate without a prompt")
  run(1 ${PAGODA} generate --model /nonexistent/model.gguf --prompt hi)
  expect_match("/nonexistent/model.gguf" "${ERR}" "generate names a missing model")
  run(1 ${PAGODA} generate --prompt-ids 1,99999 --max-tokens 2)
  expect_match("outside the vocabulary" "${ERR}" "generate rejects an id outside the vocabulary")

elseif(CHECK STREQUAL "mesh")
  # The README's mesh line: tp=2 over two logical CPU devices writes the main job's text; a
  # plan from `pagoda plan --json` (pp=2, a sliced 256-token prompt) runs unchanged.
  set(story "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball.")
  set(ENV{PAGODA_BACKEND_CPU_CONFIG} "devices=2")
  run(0 ${PAGODA} generate --device cpu:0-1 --axes tp=2 --prompt "Once upon a time" --max-tokens 40 --temperature 0)
  string(STRIP "${OUT}" printed)
  if(NOT printed STREQUAL story)
    message(FATAL_ERROR "generate on tp=2 printed\n  '${printed}'\nexpected\n  '${story}'")
  endif()
  set(model ${SOURCE_DIR}/tests/fixtures/models/stories260K/stories260K.gguf)
  run(0 ${PAGODA} plan --model ${model} --mesh 1x2 --stages 2 --prompt-len 256 --json)
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/mesh_plan.json "${OUT}")
  run(0 ${PAGODA} generate --device cpu:0-1 --plan ${CMAKE_CURRENT_BINARY_DIR}/mesh_plan.json
    --prompt "Once upon a time" --max-tokens 40 --temperature 0)
  string(STRIP "${OUT}" printed)
  if(NOT printed STREQUAL story)
    message(FATAL_ERROR "generate with a pp=2 plan printed\n  '${printed}'\nexpected\n  '${story}'")
  endif()
  run(0 ${PAGODA} bench serve --quick --mode paged --device cpu:0-1 --plan ${CMAKE_CURRENT_BINARY_DIR}/mesh_plan.json --json)
  expect_match("\"mode\": \"paged\"" "${OUT}" "bench serve runs a plan on a mesh")
  run(1 ${PAGODA} generate --device cpu:0-1 --axes tp=3 --prompt hi)
  expect_match("axes" "${ERR}" "generate names axes that do not fit")

elseif(CHECK STREQUAL "mesh_processes")
  # The README's mpirun line: tp=2 over two processes, and pp=2,tp=2 over four, write the main
  # job's text (rank 0 prints; the others follow); bench serve runs its workload likewise.
  set(story "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball.")
  set(ENV{PAGODA_BACKEND_CPU_CONFIG} "threads=1")
  set(ENV{OMPI_ALLOW_RUN_AS_ROOT} 1)
  set(ENV{OMPI_ALLOW_RUN_AS_ROOT_CONFIRM} 1)
  set(ENV{OMPI_MCA_btl} "self,vader")
  foreach(_launch "2;tp=2" "4;pp=2,tp=2")
    list(GET _launch 0 ranks)
    list(GET _launch 1 axes)
    run(0 ${MPIRUN} --oversubscribe -np ${ranks} ${PAGODA} generate --device cpu:0 --axes ${axes}
      --prompt "Once upon a time" --max-tokens 40 --temperature 0)
    string(STRIP "${OUT}" printed)
    if(NOT printed STREQUAL story)
      message(FATAL_ERROR "generate on ${axes} over ${ranks} processes printed\n  '${printed}'\nexpected\n  '${story}'")
    endif()
  endforeach()
  run(0 ${MPIRUN} --oversubscribe -np 2 ${PAGODA} bench serve --quick --mode paged --workload alpaca --requests 8
    --device cpu:0 --axes tp=2 --json)
  string(REGEX MATCHALL "\"mode\": \"paged\"" lines "${OUT}")
  list(LENGTH lines n_lines)
  if(NOT n_lines EQUAL 1)
    message(FATAL_ERROR "bench serve over two processes printed ${n_lines} paged results; rank 0 alone reports one")
  endif()

elseif(CHECK STREQUAL "plan")
  # Stage partitioning of the bundled model over one node of two devices, as JSON that reads
  # back: a stage list covering every layer, embedding first and head last.
  set(model ${SOURCE_DIR}/tests/fixtures/models/stories260K/stories260K.gguf)
  run(0 ${PAGODA} plan --model ${model} --mesh 1x2 --json)
  string(JSON format GET "${OUT}" format)
  string(JSON n_stages LENGTH "${OUT}" stages)
  math(EXPR last "${n_stages} - 1")
  string(JSON first GET "${OUT}" stages 0 first_layer)
  string(JSON end GET "${OUT}" stages ${last} end_layer)
  string(JSON emb GET "${OUT}" stages 0 has_embedding)
  string(JSON head GET "${OUT}" stages ${last} has_head)
  if(NOT format STREQUAL "pagoda-plan" OR NOT first EQUAL 0 OR NOT end EQUAL 5 OR NOT emb OR NOT head)
    message(FATAL_ERROR "pagoda plan --json: unexpected plan ${OUT}")
  endif()
  # Throughput over 2 micro-batches with TeraPipe slicing of a 512-token prompt on 1x4.
  run(0 ${PAGODA} plan --model ${model} --mesh 1x4 --objective throughput --micro-batches 2
    --stages 2 --prompt-len 512 --json)
  string(JSON n_stages LENGTH "${OUT}" stages)
  string(JSON slicing TYPE "${OUT}" slicing)
  if(NOT n_stages EQUAL 2 OR NOT slicing STREQUAL "OBJECT")
    message(FATAL_ERROR "pagoda plan with --stages 2 --prompt-len 512: ${OUT}")
  endif()
  run(2 ${PAGODA} plan --mesh 1x2)
  expect_match("--model and --config" "${ERR}" "plan without a model")
  run(1 ${PAGODA} plan --model ${model} --mesh 1x3)
  expect_match("power of two" "${ERR}" "plan names the unsupported mesh")

elseif(CHECK STREQUAL "simulate")
  # AlpaServe's two-model example (section 3.1): Poisson 1.5 req/s per model, 0.4 s per request.
  # Replication (one GPU each) gives a mean latency of 0.70 s, a 2-stage pipeline holding both
  # 0.55 s (the paper's figures).
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/simulate)
  file(MAKE_DIRECTORY ${dir})
  file(WRITE ${dir}/replication.json [=[
{"models": [{"name": "a"}, {"name": "b"}],
 "groups": [{"devices": [0], "pipeline": 1, "tensor": 1, "replicas": [{"model": "a", "stage_seconds": [0.4]}]},
            {"devices": [1], "pipeline": 1, "tensor": 1, "replicas": [{"model": "b", "stage_seconds": [0.4]}]}]}
]=])
  file(WRITE ${dir}/pipeline.json [=[
{"models": [{"name": "a"}, {"name": "b"}],
 "groups": [{"devices": [0, 1], "pipeline": 2, "tensor": 1,
             "replicas": [{"model": "a", "stage_seconds": [0.2, 0.2]}, {"model": "b", "stage_seconds": [0.2, 0.2]}]}]}
]=])
  foreach(kind replication pipeline)
    run(0 ${PAGODA} simulate --placement ${dir}/${kind}.json --rate 1.5 --duration 200000 --json)
    string(JSON mean_${kind} GET "${OUT}" latency mean)
  endforeach()
  message(STATUS "mean latency: replication ${mean_replication} s (paper 0.70), pipeline ${mean_pipeline} s (paper 0.55)")
  if(mean_replication LESS 0.68 OR mean_replication GREATER 0.72 OR mean_pipeline LESS 0.535
     OR mean_pipeline GREATER 0.565)
    message(FATAL_ERROR "the two-model example's means are off the paper's 0.70 / 0.55 s")
  endif()
  file(WRITE ${dir}/bad.json "{\"models\": [}")
  run(1 ${PAGODA} simulate --placement ${dir}/bad.json)
  expect_match("byte" "${ERR}" "simulate names where the JSON breaks")

elseif(CHECK STREQUAL "place")
  # pagoda place | pagoda simulate: the placement found for two models on one node of four
  # devices reads back into the simulator, which scores it as the search did.
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/place)
  file(MAKE_DIRECTORY ${dir})
  file(WRITE ${dir}/spec.json [=[
{"cluster": {"devices_per_node": 4, "device": "cpu", "memory_bytes": 2e9},
 "models": [{"name": "a", "shape": {"hidden": 512, "intermediate": 1376, "layers": 8, "heads": 8, "kv_heads": 8, "vocab": 8000}},
            {"name": "b", "shape": {"hidden": 768, "intermediate": 2048, "layers": 12, "heads": 12, "kv_heads": 4, "vocab": 8000}, "slo": 0.3}],
 "request": {"tokens": 64}}
]=])
  set(workload --rate 20 --slo 0.1 --duration 200 --seed 3)
  run(0 ${PAGODA} place --spec ${dir}/spec.json ${workload})
  expect_match("SLO attainment +0\\.[0-9]+" "${ERR}" "place prints a summary on stderr")
  run(0 ${PAGODA} place --spec ${dir}/spec.json ${workload} --json)
  if(NOT ERR STREQUAL "")
    message(FATAL_ERROR "place --json wrote to stderr: ${ERR}")
  endif()
  file(WRITE ${dir}/placement.json "${OUT}")
  string(JSON found GET "${OUT}" search slo_attainment)
  string(JSON n_groups LENGTH "${OUT}" groups)
  run(0 ${PAGODA} simulate --placement ${dir}/placement.json ${workload} --json)
  string(JSON simulated GET "${OUT}" slo_attainment)
  message(STATUS "${n_groups} groups; attainment: search ${found}, simulate ${simulated}")
  if(n_groups LESS 1 OR NOT found STREQUAL simulated)
    message(FATAL_ERROR "simulate scores the placement ${simulated}, the search ${found}")
  endif()
  file(WRITE ${dir}/bad.json [=[{"cluster": {"devices_per_node": 4}, "models": [{"name": "a", "shape": {"hidden": "512"}}]}]=])
  run(1 ${PAGODA} place --spec ${dir}/bad.json)
  expect_match("models\\[0\\]\\.shape\\.hidden" "${ERR}" "place names the bad field")
  run(2 ${PAGODA} place --rate 2)
  expect_match("--spec is required" "${ERR}" "place without a spec")

elseif(CHECK STREQUAL "profile")
  # pagoda profile | pagoda place: a real model's layers timed on cpu:0, and on cpu:0-1 as one
  # tensor-parallel group, into a cost file, which the placement search then reads for a
  # generation request (its stage times measured, not the preset's roofline, and the group's
  # as timed); a model the file lacks is refused by name.
  set(ENV{PAGODA_BACKEND_CPU_CONFIG} "devices=3,threads=1")
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/profile)
  file(REMOVE_RECURSE ${dir})
  file(MAKE_DIRECTORY ${dir})
  set(model ${CHAT_MODEL_DIR}/hf)
  set(small --max-tokens 16 --granularity 8 --grid 2 --repeats 1)
  run(0 ${PAGODA} profile --model ${model} --out ${dir}/costs.json ${small})
  expect_match("layer t\\(l, 0\\) +[0-9.]+ ms" "${ERR}" "profile prints the layer times")
  run(0 ${PAGODA} profile --model ${model} --out ${dir}/costs.json ${small} --json)
  string(JSON device GET "${OUT}" device)
  expect_match("^cpu:0 " "${device}" "the entry names the timed device")
  file(READ ${dir}/costs.json costs)
  string(JSON entries LENGTH "${costs}" entries)
  if(NOT entries EQUAL 1)
    message(FATAL_ERROR "profiling the same model twice kept ${entries} entries, want 1")
  endif()
  run(0 ${PAGODA} profile --model ${model} --out ${dir}/costs.json ${small} --device cpu:0-1 --beside cpu:2 --json)
  string(JSON device GET "${OUT}" device)
  string(JSON degree GET "${OUT}" tensor_parallel)
  expect_match("^cpu:0-1 .*tp=2 beside cpu:2" "${device}" "the group's entry names its devices")
  if(NOT degree EQUAL 2)
    message(FATAL_ERROR "the group's entry has tensor_parallel ${degree}, want 2")
  endif()
  file(READ ${dir}/costs.json costs)
  string(JSON entries LENGTH "${costs}" entries)
  if(NOT entries EQUAL 2)
    message(FATAL_ERROR "one device and a group kept ${entries} entries, want 2")
  endif()
  run(1 ${PAGODA} profile --model ${model} --out ${dir}/costs.json --beside cpu:0)
  expect_match("beside names cpu:0, a timed device" "${ERR}" "profile refuses timing a device beside itself")
  run(1 ${PAGODA} profile --model ${model} --out ${dir}/costs.json --device cpu:0-2)
  expect_match("tensor parallelism of 3: the model.s 4 query heads do not split evenly" "${ERR}"
    "profile refuses a group that does not divide the heads")
  run(1 ${PAGODA} profile --model ${model} --out ${dir}/costs.json --max-tokens 20)
  expect_match("not a multiple of granularity" "${ERR}" "profile names the bad option")

  file(WRITE ${dir}/spec.json "{\"cluster\": {\"devices_per_node\": 2, \"costs\": \"${dir}/costs.json\"},
    \"models\": [{\"name\": \"a\", \"path\": \"${model}\"}, {\"name\": \"b\", \"path\": \"${model}\"}],
    \"request\": {\"prompt_tokens\": 8, \"output_tokens\": 4}, \"overhead\": 0.001}")
  run(0 ${PAGODA} place --spec ${dir}/spec.json --rate 5 --slo 1 --duration 20 --json)
  string(JSON source GET "${OUT}" search costs)
  string(JSON stage GET "${OUT}" groups 0 replicas 0 stage_seconds 0)
  string(JSON overhead GET "${OUT}" overhead)
  message(STATUS "costs ${source}; first stage ${stage} s; overhead ${overhead}")
  expect_match("^measured:" "${source}" "place reads the cost file")
  string(JSON timed GET "${OUT}" search measured_tensor_parallel a)
  expect_match("^\\[ *1 *, *2 *\\]$" "${timed}" "place uses the group's own times")
  if(NOT stage GREATER 0 OR NOT overhead EQUAL 0.001)
    message(FATAL_ERROR "stage ${stage} s, overhead ${overhead}: want a positive stage and 0.001")
  endif()
  file(WRITE ${dir}/other.json "{\"cluster\": {\"devices_per_node\": 2, \"costs\": \"${dir}/costs.json\"},
    \"models\": [{\"name\": \"wide\", \"shape\": {\"hidden\": 128, \"intermediate\": 256, \"layers\": 2,
    \"heads\": 4, \"kv_heads\": 4, \"vocab\": 64}}]}")
  run(1 ${PAGODA} place --spec ${dir}/other.json)
  expect_match("model \"wide\".*pagoda profile" "${ERR}" "place names the model the cost file lacks")

elseif(CHECK STREQUAL "apply_template")
  # A random model carrying Qwen2.5's chat template (make_random_model.py --chat-template): the
  # GGUF file and the Hugging Face folder print the same text, the text transformers renders.
  set(messages ${SOURCE_DIR}/tests/examples/apply_template_messages.json)
  set(expected "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi é😀<|im_end|>\n<|im_start|>assistant\n")
  foreach(model ${CHAT_MODEL_DIR}/model.gguf ${CHAT_MODEL_DIR}/hf)
    run(0 ${PAGODA} apply-template --model ${model} --messages ${messages} --add-generation-prompt)
    if(NOT OUT STREQUAL expected)
      message(FATAL_ERROR "apply-template --model ${model} printed\n'${OUT}'\nexpected\n'${expected}'")
    endif()
  endforeach()
  run(0 ${PAGODA} apply-template --tokenizer ${CHAT_MODEL_DIR}/hf --messages ${messages})
  string(FIND "${OUT}" "<|im_start|>assistant" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "without --add-generation-prompt the assistant header was printed")
  endif()
  # raise_exception: exit 1, the template's message on stderr, nothing on stdout.
  run(1 ${PAGODA} apply-template --model ${CHAT_MODEL_DIR}/model.gguf --messages ${messages}
    --template ${SOURCE_DIR}/tests/fixtures/chat_templates/gemini.jinja)
  expect_match("PAGODA_ERR_INVALID_ARGUMENT: .*System role not supported" "${ERR}" "the template's exception")
  if(NOT OUT STREQUAL "")
    message(FATAL_ERROR "a failed apply-template wrote to stdout: ${OUT}")
  endif()
  # The bundled stories260K has no chat template.
  run(1 ${PAGODA} apply-template --messages ${messages})
  expect_match("PAGODA_ERR_UNSUPPORTED: .*no chat template" "${ERR}" "a model without a template")
  file(WRITE ${CHAT_MODEL_DIR}/bad_messages.json "{\"role\": \"user\"}")
  run(1 ${PAGODA} apply-template --model ${CHAT_MODEL_DIR}/model.gguf --messages ${CHAT_MODEL_DIR}/bad_messages.json)
  expect_match("messages must be a JSON array" "${ERR}" "malformed messages")
  run(2 ${PAGODA} apply-template --model ${CHAT_MODEL_DIR}/model.gguf)
  expect_match("--messages is required" "${ERR}" "apply-template without messages")
  run(0 ${PAGODA} --help)
  expect_match("\n  apply-template  " "${OUT}" "--help lists apply-template")

elseif(CHECK STREQUAL "hello_backends")
  run(0 ${HELLO})
  expect_match("^libpagoda ${VERSION} " "${OUT}" "hello_backends reports the version")
  expect_match("\ncpu: [1-9][0-9]* device\\(s\\), from " "${OUT}"
    "hello_backends finds the CPU backend")

else()
  message(FATAL_ERROR "unknown CHECK '${CHECK}'")
endif()
