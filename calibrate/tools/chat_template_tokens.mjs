// Tokens FastChat 0.2.32's vicuna_v1.1 conversation template adds to one user message, as the
// paper's baselines sent every LangChain call (openai_api_server -> vLLM worker):
//   "{system} USER: {message} ASSISTANT:"
// counted with the LLaMA tokenizer (llama-tokenizer-js, the vocabulary of
// hf-internal-testing/llama-tokenizer) as tokens(templated) - tokens(message), both with BOS.
// Run (in any folder): npm install llama-tokenizer-js@1.2.2 && node PATH/TO/calibrate/tools/chat_template_tokens.mjs
// Printed on 2026-12-03: 38 for every message below (sim/model/client.py CHAT_TEMPLATE_TOKENS).
import { pathToFileURL } from 'url';
// resolved from the working directory, where `npm install` put it
const { default: llamaTokenizer } = await import(pathToFileURL(
  `${process.cwd()}/node_modules/llama-tokenizer-js/llama-tokenizer.js`).href);
const system = "A chat between a curious user and an artificial intelligence assistant. The assistant gives helpful, detailed, and polite answers to the user's questions.";
const msgs = [
  "Write a concise summary of the following:\n\n\"We study the problem of serving LLM applications.\"\n\nCONCISE SUMMARY:",
  "Test ".repeat(512).trim(),
  "Hello, how are you?",
  "Your job is to produce a final summary\nWe have provided an existing summary up to a certain point: abc\nWe have the opportunity to refine the existing summary (only if needed) with some more context below.",
];
for (const m of msgs) {
  const full = `${system} USER: ${m} ASSISTANT:`;
  const a = llamaTokenizer.encode(full).length, b = llamaTokenizer.encode(m).length;
  console.log(a, b, a - b);
}
console.log("bos?", llamaTokenizer.encode("Hello").slice(0,2));
