// Two tokenizers made from the parity corpus itself, for the model types no npm package ships a
// real tokenizer.json of (see tests/fixtures/tokenizers/SOURCE.md): a BERT-style WordPiece and a
// T5-style Unigram. They are laid out as their real counterparts are (same components, same
// special tokens), with vocabularies taken from the corpus's words and pieces, and some
// characters left out so that unknown words and pieces occur. Deterministic: the same corpus
// gives the same files, byte for byte.
import { BertNormalizer, BertPreTokenizer } from "@huggingface/tokenizers";

// A character left out of the vocabulary, so the text around it meets the unknown token.
const leftOut = (ch) => ch.codePointAt(0) % 11 === 3;
const byCodeUnits = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

function counts(items) {
  const m = new Map();
  for (const x of items) m.set(x, (m.get(x) ?? 0) + 1);
  return m;
}

function addedToken(id, content) {
  return { id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true };
}

// bert-base-uncased's pipeline over a vocabulary of the corpus's lowercased words: the words
// seen twice, their first three characters, "##" + their next three, and every character alone
// and after "##".
export function wordpieceTokenizer(corpus) {
  const normalizerConfig = { type: "BertNormalizer", clean_text: true, handle_chinese_chars: true,
    strip_accents: null, lowercase: true };
  const normalizer = new BertNormalizer(normalizerConfig);
  const preTokenizer = new BertPreTokenizer();
  const words = corpus.flatMap((text) => preTokenizer.pre_tokenize_text(normalizer.normalize(text)));
  const pieces = new Set();
  for (const [word, n] of counts(words)) {
    const chars = [...word];
    if (n >= 2 && chars.length <= 12) pieces.add(word);
    if (chars.length >= 5) {
      pieces.add(chars.slice(0, 3).join(""));
      pieces.add("##" + chars.slice(3, 6).join(""));
    }
    for (const ch of chars) {
      if (leftOut(ch)) continue;
      pieces.add(ch);
      pieces.add("##" + ch);
    }
  }
  const specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];
  for (const s of specials) pieces.delete(s);
  const vocab = {};
  [...specials, ...[...pieces].sort(byCodeUnits)].forEach((token, id) => { vocab[token] = id; });
  const tokenizer = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: specials.map((s, id) => addedToken(id, s)),
    normalizer: normalizerConfig,
    pre_tokenizer: { type: "BertPreTokenizer" },
    post_processor: {
      type: "TemplateProcessing",
      single: [{ SpecialToken: { id: "[CLS]", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } },
        { SpecialToken: { id: "[SEP]", type_id: 0 } }],
      pair: [{ SpecialToken: { id: "[CLS]", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } },
        { SpecialToken: { id: "[SEP]", type_id: 0 } }, { Sequence: { id: "B", type_id: 1 } },
        { SpecialToken: { id: "[SEP]", type_id: 1 } }],
      special_tokens: {
        "[CLS]": { id: "[CLS]", ids: [2], tokens: ["[CLS]"] },
        "[SEP]": { id: "[SEP]", ids: [3], tokens: ["[SEP]"] },
      },
    },
    decoder: { type: "WordPiece", prefix: "##", cleanup: true },
    // 24: the corpus's longest words (digit runs, compounds) go over it.
    model: { type: "WordPiece", unk_token: "[UNK]", continuing_subword_prefix: "##", max_input_chars_per_word: 24,
      vocab },
  };
  const config = { tokenizer_class: "BertTokenizer", do_lower_case: true, unk_token: "[UNK]", sep_token: "[SEP]",
    pad_token: "[PAD]", cls_token: "[CLS]", mask_token: "[MASK]", model_max_length: 512 };
  return { tokenizer, config };
}

// t5-small's layout (<pad> </s> <unk>, WhitespaceSplit + Metaspace, "$A </s>") behind an NFKC
// normalizer (T5's own, Precompiled, is not implemented), over the pieces of the corpus's
// "▁"-prefixed words: every stretch of up to 6 characters seen twice, and every character, each
// scored by the log of its frequency (in 1/64ths).
export function unigramTokenizer(corpus) {
  const words = corpus.flatMap((text) => text.normalize("NFKC").split(/\s+/u).filter((w) => w.length > 0))
    .map((w) => "\u2581" + w);
  const stretches = [];
  for (const word of words) {
    const chars = [...word];
    for (let i = 0; i < chars.length; ++i)
      for (let n = 1; n <= 6 && i + n <= chars.length; ++n) stretches.push(chars.slice(i, i + n).join(""));
  }
  const seen = counts(stretches);
  const total = stretches.length;
  const pieces = [...seen].filter(([piece, n]) => {
    const chars = [...piece];
    return chars.length === 1 ? !leftOut(piece) : n >= 2;
  });
  // Scores in 1/64ths: every path's sum is then exact, so ties are true ties, which Hugging Face's
  // forward Viterbi (Rust, SentencePiece) and the lattice one of the JS reference break alike (the
  // piece that starts first). With arbitrary doubles a rounding near-tie can go either way.
  const scored = pieces.map(([piece, n]) => [piece, Math.round(Math.log(n / total) * 64) / 64]);
  scored.sort((a, b) => b[1] - a[1] || byCodeUnits(a[0], b[0]));
  const specials = ["<pad>", "</s>", "<unk>"];
  const vocab = [...specials.map((s) => [s, 0.0]), ...scored.filter(([p]) => !specials.includes(p))];
  const metaspace = { type: "Metaspace", replacement: "\u2581", prepend_scheme: "always", split: true };
  const tokenizer = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: specials.map((s, id) => addedToken(id, s)),
    normalizer: { type: "NFKC" },
    pre_tokenizer: { type: "Sequence", pretokenizers: [{ type: "WhitespaceSplit" }, metaspace] },
    post_processor: {
      type: "TemplateProcessing",
      single: [{ Sequence: { id: "A", type_id: 0 } }, { SpecialToken: { id: "</s>", type_id: 0 } }],
      pair: [{ Sequence: { id: "A", type_id: 0 } }, { SpecialToken: { id: "</s>", type_id: 0 } },
        { Sequence: { id: "B", type_id: 0 } }, { SpecialToken: { id: "</s>", type_id: 0 } }],
      special_tokens: { "</s>": { id: "</s>", ids: [1], tokens: ["</s>"] } },
    },
    decoder: metaspace,
    model: { type: "Unigram", unk_id: 2, vocab, byte_fallback: false },
  };
  const config = { tokenizer_class: "T5Tokenizer", eos_token: "</s>", unk_token: "<unk>", pad_token: "<pad>",
    model_max_length: 512 };
  return { tokenizer, config };
}
