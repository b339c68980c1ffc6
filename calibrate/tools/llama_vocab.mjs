// The 32,000 LLaMA tokens (vocabulary of hf-internal-testing/llama-tokenizer, as shipped by
// llama-tokenizer-js) and the token ids of a text file, as JSON, for
// calibrate/tools/vllm_request_tracking.py.
// Run (in any folder): npm install llama-tokenizer-js@1.2.2 && node PATH/TO/calibrate/tools/llama_vocab.mjs TEXT OUT_DIR
import { pathToFileURL } from 'url';
// resolved from the working directory, where `npm install` put it
const { default: llamaTokenizer } = await import(pathToFileURL(
  `${process.cwd()}/node_modules/llama-tokenizer-js/llama-tokenizer.js`).href);
import fs from 'fs';
const [text, out] = process.argv.slice(2);
const vocab = [];
for (let i = 0; i < 32000; i++) vocab.push(llamaTokenizer.vocabById[i]);
fs.writeFileSync(`${out}/llama_vocab.json`, JSON.stringify(vocab));
fs.writeFileSync(`${out}/text_ids.json`, JSON.stringify(llamaTokenizer.encode(fs.readFileSync(text, 'utf8'))));
