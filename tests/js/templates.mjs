// The diagnostic templates of tests/cases/templates.txt as regular expressions by code: the
// sweep checks every diagnostic it meets against them (a wrong text with the right prefix fails).
import fs from 'node:fs';

const NUMBER = '(?:[0-9]+|\\(a number of more than 10000 digits\\))';
const DIMS = '(?:[0-9]+(?:, [0-9]+)*(?:, \\.\\.\\. \\([0-9]+ dims in all\\))?)?';
const NAME = '(?:CUDA Adam checkpoint|TorchLean float32 state checkpoint|TorchLean float32 parameter checkpoint|safetensors file)';
const PLACEHOLDERS = {
  '{n}': NUMBER,
  '{#}': `#\\[${DIMS}\\]`,
  '{[]}': `\\[${DIMS}\\]`,
  '{dim}': '(?:dim [0-9]+ \\()*(?:scalar|\\.\\.\\. \\([0-9]+ dims in all\\))\\)*',
  '{NAME}': NAME,
  '{P}': `(?:${NAME}|StateIO|ParamIO|safetensors)`,
  '{MAGIC}': '(?:TLADAMF|TLSF32B|TLPF32B|safetensors)',
  '{s}': 's?',
  '{str}': '"(?:[^"\\\\]|\\\\.)*"',   // a name as a JSON string
  '{x}': '[0-9a-f]{2}',
  '{dtype}': '(?:F64|F32|F16|BF16|I64|I32|I16|I8|U8|BOOL|F8_E4M3|F8_E5M2)',
  '{why}': '[^()]+',
  '{i}': '-?[0-9]+',
  '{f}': '(?:-?[0-9]+(?:\\.[0-9]+)?(?:e[-+][0-9]+)?|nan|-?inf)',
  '{name}': '.+?',   // a name as it is (a model's parameter, a param_names entry)
};

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function compile(template) {
  const parts = template.split(/(\{n\}|\{#\}|\{\[\]\}|\{dim\}|\{NAME\}|\{MAGIC\}|\{P\}|\{s\}|\{str\}|\{x\}|\{dtype\}|\{why\}|\{i\}|\{f\}|\{name\})/);
  return new RegExp(`^${parts.map((p) => PLACEHOLDERS[p] ?? escape(p)).join('')}$`);
}

const byCode = new Map();
for (const line of fs.readFileSync(new URL('../cases/templates.txt', import.meta.url), 'utf8').split('\n')) {
  if (!line || line.startsWith('#')) continue;
  const bar = line.indexOf('|');
  const code = Number(line.slice(0, bar));
  if (!byCode.has(code)) byCode.set(code, []);
  byCode.get(code).push(compile(line.slice(bar + 1)));
}

/** Does `message` match one of the templates of `code`? */
export function matchesTemplate(code, message) {
  return (byCode.get(code) ?? []).some((re) => re.test(message));
}

export const templateCodes = () => [...byCode.keys()];
